"""Comparison consistency counts only checks both sides can have (issue: an external system
has no ``parse`` check, so the hy_memory comparison listed ``parse#0`` as changed). A
check of a metric one run does not measure leaves the family in ``compare``, the decision
page and the systems table (which is made by ``compare``)."""

import json
import random

from hy_eval.harness.analysis import (
    changed_checks,
    compare,
    records_unmeasured,
    run_outcomes,
)
from hy_eval.harness.report._compare_cases import changed_cases
from tests.harness.generated_runs import _mistaken, _record, _suite_cases, write_run

#: What an external system without profile or raw operations cannot measure.
EXTERNAL = [
    "fallback_rate",
    "merge_violation_rate_raw",
    "parse_failure_rate",
    "profile_leak_rate",
    "profile_name_accuracy",
]


def test_a_check_kind_left_out_is_not_paired():
    ours = {"fact#0": True, "parse#0": False, "profile_name#0": True}
    theirs = {"fact#0": True}
    assert changed_checks(ours, theirs) == (2, ["parse#0"])  # the old reading
    leave = records_unmeasured()
    assert leave == frozenset()
    total, changed = changed_checks(ours, theirs, frozenset({"parse", "profile_name"}))
    assert (total, changed) == (1, [])
    # A real change in a kind both have is still seen.
    assert changed_checks({"fact#0": False}, theirs, frozenset({"parse"})) == (1, ["fact#0"])


def _runs(tmp_path):
    """Run A (ours): six cases, a failed parse on two of them. Run B (an external system):
    the same answers, with no parse or profile checks and its not-measured list."""
    rng = random.Random(3)
    cases = _suite_cases(6)
    recs_a, recs_b = [], []
    for k, case in enumerate(cases):
        answer = _mistaken(case, rng, 0.0)
        a, b = _record(case, answer, "a"), _record(case, answer, "a")
        if k < 2:
            a["score"]["checks"].append({"check": "parse", "ok": False, "detail": "bad JSON"})
            a["score"]["passed"] = False
        b["score"]["checks"] = [
            c for c in b["score"]["checks"] if c["check"] not in ("profile_name", "profile_absent")
        ]
        b["score"]["not_measured"] = EXTERNAL
        recs_a.append(a)
        recs_b.append(b)
    return write_run(tmp_path / "a", recs_a, "a"), write_run(tmp_path / "b", recs_b, "a")


def test_compare_and_the_page_leave_out_checks_one_side_cannot_have(tmp_path):
    run_a, run_b = _runs(tmp_path)
    result = compare(run_outcomes(run_a), run_outcomes(run_b))
    # The two cases whose only difference is our failed parse flip (case_pass counts it:
    # a verdict, not a check pairing), but no check verdict of a shared kind changed.
    flipped = {f.id for f in result.flipped}
    assert len(flipped) == 2
    consistency = result.consistency
    assert consistency is not None and consistency.checks_changed == 0
    assert consistency.consistency.value == 1.0
    for case in consistency.changed_cases:
        assert not any(k.startswith(("parse#", "profile_name#")) for k in case["changed"])
    rows, _ = changed_cases(result, run_a, run_b, {})
    for row in rows:
        assert not any(k.startswith(("parse#", "profile_name#")) for k in row["keys"]), row


def test_without_unmeasured_metrics_the_parse_check_still_counts(tmp_path):
    """Two runs of our own pipeline: a failed parse on one side is a changed check."""
    run_a, run_b = _runs(tmp_path)
    recs = (run_b / "cases.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(x) for x in recs.splitlines()]
    for rec in lines:
        rec["score"].pop("not_measured", None)
    write_run(tmp_path / "b2", lines, "a")
    result = compare(run_outcomes(run_a), run_outcomes(tmp_path / "b2"))
    assert result.consistency is not None and result.consistency.checks_changed >= 2
