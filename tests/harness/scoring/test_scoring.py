"""Scoring and statistics on hand-computed examples (E3)."""

import numpy as np
import pytest

from hy_eval.harness import Case, Outcome, ratio_with_ci, score_case
from hy_eval.harness.datasets import contains_all, fold_spaced

CASE = Case.model_validate(
    {
        "id": "c",
        "lang": "en",
        "rules": ["A2"],
        "existing": [{"id": "m1", "text": "The user likes coffee."}],
        "messages": [
            {"role": "user", "name": "Tim", "content": "x"},
            {"role": "assistant", "name": "John", "content": "y"},
        ],
        "expect": {
            "facts": [
                {"subject": "John", "owner": "user", "keywords": ["nurse", "Berlin"]},
                {"subject": "user", "owner": "user", "keywords": ["Stripe"]},
            ],
            "absent": [{"subject": "user", "keywords": ["nurse"]}],
            "profile": {"name": "Tim", "absent": ["Berlin"]},
            "untouched": ["m1"],
        },
    }
)


def outcome(facts, **kw):
    base = dict(
        existing_ids={"m1": 1},
        memories_after={1: {"text": "The user likes coffee.", "status": "active"}},
        profile={"name": "Tim"},
    )
    base.update(kw)
    return Outcome(facts=[{"text": t, "owner": o} for t, o in facts], **base)


def test_perfect():
    s = score_case(
        CASE,
        outcome([("John is a nurse in Berlin.", "user"), ("The user works at Stripe.", "user")]),
    )
    assert s.passed
    assert s.counts["fact_recall"] == (2, 2) and s.counts["attribution_accuracy"] == (2, 2)
    assert s.counts["misattribution_rate"] == (0, 1) and s.counts["profile_leak_rate"] == (0, 1)


def test_swapped_subject_owner_and_leak():
    s = score_case(
        CASE,
        outcome(
            [("The user is a nurse in Berlin.", "agent"), ("Tim works at Stripe.", "user")],
            profile={"name": "Tim", "location": "Berlin"},
        ),
    )
    assert not s.passed
    assert s.counts["fact_recall"] == (2, 2)
    assert s.counts["attribution_accuracy"] == (1, 2)  # Tim = the user, counted right
    assert s.counts["owner_accuracy"] == (1, 2)
    assert s.counts["misattribution_rate"] == (1, 1)
    assert s.counts["noncanonical_subject_rate"] == (1, 2)
    assert s.counts["profile_leak_rate"] == (1, 1)
    assert sorted(s.confusion) == [("named", "user"), ("user", "user")]


def test_missing_fact_and_untouched_violation():
    s = score_case(
        CASE,
        outcome(
            [("John is a nurse in Berlin.", "user")],
            memories_after={1: {"text": "John likes coffee.", "status": "active"}},
        ),
    )
    assert s.counts["fact_recall"] == (1, 2)
    assert s.counts["untouched_violation_rate"] == (1, 1)
    assert ("user", "missing") in s.confusion


def test_one_to_one_matching_prefers_right_subject():
    case = Case.model_validate(
        {
            "id": "c2",
            "lang": "en",
            "rules": ["A7"],
            "messages": [
                {"role": "user", "content": "x"},
                {"role": "assistant", "name": "John", "content": "y"},
            ],
            "expect": {
                "facts": [
                    {"subject": "user", "owner": "user", "keywords": ["coffee"]},
                    {"subject": "John", "owner": "user", "keywords": ["coffee"]},
                ]
            },
        }
    )
    s = score_case(
        case,
        outcome(
            [("John likes coffee.", "user"), ("The user likes coffee.", "user")],
            existing_ids={},
            memories_after={},
        ),
    )
    assert s.counts["attribution_accuracy"] == (2, 2)
    s = score_case(
        case, outcome([("John likes coffee.", "user")], existing_ids={}, memories_after={})
    )
    assert s.counts["fact_recall"] == (1, 2) and s.counts["attribution_accuracy"] == (1, 1)


def test_merge_violation_raw_vs_applied():
    ops_raw = [{"op": "UPDATE", "fact": 0, "targets": [1], "text": "John likes coffee."}]
    ops_applied = [{"op": "ADD", "fact": 0, "targets": [], "text": "John likes coffee."}]
    s = score_case(
        CASE,
        outcome(
            [("John likes coffee.", "user")],
            raw_ops=ops_raw,
            applied_ops=ops_applied,
            reconcile_ran=True,
        ),
    )
    assert s.counts["merge_violation_rate_raw"] == (1, 1)
    assert s.counts["merge_violation_rate_applied"] == (0, 1)
    assert s.counts["fallback_rate"] == (0, 1)


def test_errored_case_counts_only_errors():
    s = score_case(CASE, Outcome(error="server: HTTP 500"))
    assert s.counts["error_rate"] == (1, 1) and s.counts["case_pass"] == (0, 1)
    assert s.counts["fact_recall"] == (0, 0)


def test_keyword_matching_is_nfkc_and_case_insensitive():
    assert contains_all("ＪＯＨＮ is a NURSE", ["john", "nurse"])
    assert contains_all("王伟在学校教钢琴。", ["钢琴"])
    assert not contains_all("The user likes tea", ["coffee"])
    assert fold_spaced("  A\u3000B ") == "a b"


def test_bootstrap_ci_contains_the_analytic_value_on_a_large_sample():
    rng = np.random.default_rng(1)
    p, n = 0.3, 20_000
    successes = (rng.random(n) < p).astype(float)
    r = ratio_with_ci(successes, np.ones(n))
    se = np.sqrt(p * (1 - p) / n)
    assert r["ci"][0] < p < r["ci"][1]
    # The bootstrap interval has about the normal-approximation width.
    assert (r["ci"][1] - r["ci"][0]) == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_ratio_of_sums_and_empty():
    r = ratio_with_ci([1, 0, 3], [2, 0, 4])
    assert r["value"] == pytest.approx(4 / 6) and r["n"] == 2
    assert ratio_with_ci([0], [0])["value"] is None


OPS_CASE = Case.model_validate(
    {
        "id": "ops",
        "lang": "en",
        "rules": ["R1"],
        "existing": [
            {"id": "m1", "text": "The user lives in Leeds."},
            {"id": "m2", "text": "The user likes tea."},
            {"id": "m3", "text": "The user plays chess."},
        ],
        "messages": [{"role": "user", "name": "Tim", "content": "I moved to York."}],
        "expect": {
            "facts": [{"subject": "user", "owner": "user", "keywords": ["York"]}],
            "operations": {"m1": ["SUPERSEDE", "UPDATE"], "m2": "NONE", "m3": "DELETE"},
        },
    }
)


@pytest.mark.parametrize(
    "applied, met",
    [
        ([{"op": "SUPERSEDE", "fact": 0, "targets": [1]}], 2),  # m1 and m2; m3 not deleted
        ([{"op": "UPDATE", "fact": 0, "targets": [1, 3]}], 2),  # UPDATE targets m3, no DELETE
        ([{"op": "DELETE", "fact": 0, "targets": [3]}], 2),  # m1 kept: SUPERSEDE/UPDATE unmet
        ([{"op": "UPDATE", "fact": 0, "targets": [2]}], 0),  # m2 changed, m1 and m3 not
        ([{"op": "ADD", "fact": 0, "targets": []}], 1),
        (
            [
                {"op": "SUPERSEDE", "fact": 0, "targets": [1]},
                {"op": "DELETE", "fact": 1, "targets": [3]},
            ],
            3,
        ),
    ],
)
def test_operation_accuracy(applied, met):
    out = Outcome(
        facts=[{"text": "The user lives in York.", "owner": "user"}] * 2,
        applied_ops=applied,
        raw_ops=applied,
        reconcile_ran=True,
        existing_ids={"m1": 1, "m2": 2, "m3": 3},
    )
    score = score_case(OPS_CASE, out)
    assert score.counts["operation_accuracy"] == (met, 3)
    [check] = [c for c in score.checks if c["check"] == "operations"]
    assert check["ok"] == (met == 3)
    assert score.passed is False or met == 3


def test_no_operations_expected_counts_nothing():
    s = score_case(CASE, outcome([("John is a nurse in Berlin.", "user")]))
    assert s.counts["operation_accuracy"] == (0, 0)
    assert not [c for c in s.checks if c["check"] == "operations"]
