"""Scoring with subjects you can trust (E1, E3, A8, R1, R2): aliases in the
case schema, ``other`` in the confusion matrix, merge violations between known subjects
only, and the guard's counters in the case record and the summary."""

import json

import pytest

from hy_eval.harness import Case, DatasetError, Outcome, load_suite, score_case
from hy_eval.harness.report import markdown_report
from hy_eval.harness.report._write import _Scan
from hy_eval.harness.runlog import RunSummary
from hy_eval.harness.scoring import METRICS, SUBJECT_KINDS

BASE = {
    "id": "c",
    "lang": "zh",
    "rules": ["A2"],
    "messages": [
        {"role": "user", "name": "Tim", "content": "王伟，你还在教钢琴吗？"},
        {"role": "assistant", "name": "王伟", "content": "对，在学校教。"},
    ],
    "expect": {"facts": [{"subject": "王伟", "owner": "user", "keywords": ["piano"]}]},
}


def case(**extra):
    return Case.model_validate({**BASE, **extra})


def facts(*texts):
    return [{"text": t, "owner": "user"} for t in texts]


def test_an_alias_counts_as_the_speaker_in_scoring():
    aliased = case(aliases={"王伟": ["Wang Wei"]})
    s = score_case(aliased, Outcome(facts=facts("Wang Wei teaches piano at a school.")))
    assert s.counts["attribution_accuracy"] == (1, 1) and s.passed
    # Without the alias the same sentence is about someone else (other), and wrong.
    s = score_case(case(), Outcome(facts=facts("Wang Wei teaches piano at a school.")))
    assert s.counts["attribution_accuracy"] == (0, 1)
    assert s.confusion == [("named", "other")] and "other" in SUBJECT_KINDS


@pytest.mark.parametrize(
    "aliases, problem",
    [
        ({"Jo": ["Joanna"]}, "aliases.Jo: not a speaker"),
        ({"王伟": [" "]}, "aliases.王伟: aliases must not be blank"),
        ({"王伟": ["Tim"]}, "aliases.王伟: 'Tim' already names 'Tim'"),
    ],
)
def test_aliases_are_validated(tmp_path, aliases, problem):
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({**BASE, "aliases": aliases}, ensure_ascii=False) + "\n")
    with pytest.raises(DatasetError) as err:
        load_suite(str(f))
    [got] = err.value.problems
    assert got.startswith(f"{f}:1: {problem}")


def _merge_case():
    return Case.model_validate(
        {
            "id": "m",
            "lang": "en",
            "rules": ["R1"],
            "existing": [
                {"id": "m1", "text": "John is a nurse in Berlin."},
                {"id": "m2", "text": "Works night shifts."},
            ],
            "messages": [
                {"role": "user", "name": "Tim", "content": "You're a nurse too, Jo?"},
                {"role": "assistant", "name": "Jo", "content": "Yes, at the children's hospital."},
            ],
            "expect": {"facts": [{"subject": "Jo", "owner": "user", "keywords": ["nurse"]}]},
        }
    )


def test_merge_violations_count_other_and_not_unknown():
    # ms-en-0083: updating John's memory (other: not a speaker) with Jo's fact is a
    # cross-subject merge; updating a memory nobody can read is undecided, not counted.
    ops = [
        {"op": "UPDATE", "fact": 0, "targets": [1], "text": "x"},
        {"op": "UPDATE", "fact": 1, "targets": [2], "text": "y"},
    ]
    outcome = Outcome(
        facts=facts("Jo is a nurse.", "Jo works night shifts."),
        raw_ops=ops,
        applied_ops=[{**o, "op": "ADD", "targets": []} for o in ops],
        reconcile_ran=True,
        existing_ids={"m1": 1, "m2": 2},
        memories_after={
            1: {"text": "John is a nurse in Berlin.", "status": "active"},
            2: {"text": "Works night shifts.", "status": "active"},
        },
    )
    s = score_case(_merge_case(), outcome)
    assert s.counts["merge_violation_rate_raw"] == (1, 2)
    assert s.counts["merge_violation_rate_applied"] == (0, 2)
    [merge] = [c for c in s.checks if c["check"] == "merge"]
    assert merge["detail"]["raw"] == [ops[0]] and merge["detail"]["raw_undecided"] == [ops[1]]


def test_guard_counts_reach_the_summary_and_report(tmp_path):
    def rec(i, events, undecided):
        return {
            "id": f"c{i}",
            "lang": "en",
            "rules": ["R2"],
            "tags": [],
            "status": "error",  # the drill-down shows less of an errored case
            "error": "x",
            "score": {"passed": True, "counts": {}, "confusion": []},
            "guard_events": [{"reason": "x"}] * events,
            "guard_undecided": undecided,
        }

    path = tmp_path / "cases.jsonl"
    path.write_text(
        "".join(json.dumps(rec(i, e, u)) + "\n" for i, (e, u) in enumerate([(2, 1), (3, 0)]))
    )
    assert _Scan(path, None).guard_counts == {"cross_subject": 4, "undecided": 1}
    summary = {
        "suite": "s",
        "provider": "p",
        "model": "m",
        "variant": "default",
        "cases": 2,
        "passed": 2,
        "guard": True,
        "guard_counts": {"cross_subject": 4, "undecided": 1},
        "wall_s": 1.0,
        "tokens": {"input": 1, "output": 1},
        "cost_usd": None,
        "metrics": {m: {"value": 0.0, "ci": [0.0, 0.0], "n": 1} for m in METRICS},
        "breakdown": {"lang": {}, "rule": {}, "tag": {}},
        "confusion": {},
        "failed_cases": [],
    }
    text = markdown_report(RunSummary.model_validate(summary), tmp_path)
    assert "4 cross-subject operations and 1 with a subject it could not tell" in text
