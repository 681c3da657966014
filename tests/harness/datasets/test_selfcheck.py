"""Self-check (E1, E3, A1-A8): every case of every shipped suite answered with
its own gold written as natural sentences must score exactly 1.0 on every accuracy metric
and exactly 0.0 on every violation rate. A later case or scorer change that misreads a
perfectly attributed sentence (a Latin name straight before Chinese text, a title, an
alias, full-width letters, a possessive, a quote) fails here."""

import pytest

from hy_eval.harness import Case, load_suite, score_case
from hy_eval.harness.datasets import DATASETS_DIR, check_history_case
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS, VIOLATION_METRICS
from tests.harness.oracle import (
    SUBJECT_WORDS,
    TEMPLATES,
    oracle_outcome,
    passes,
    render_keywords,
    score_oracle,
)

SUITES = sorted(p.name for p in DATASETS_DIR.iterdir() if (p / "suite.toml").is_file())


def test_every_suite_is_checked():
    assert "multi_speaker" in SUITES and "history" in SUITES


@pytest.mark.parametrize("suite_name", SUITES)
def test_gold_as_sentences_scores_exactly_one_and_zero(suite_name):
    suite = load_suite(suite_name)
    if suite.kind == "history":
        # No model answers here: the gold parse is the check itself (H1-H5).
        assert [c.id for c in suite.cases if check_history_case(c) is not None] == []
        return
    totals, failures = score_oracle(suite.cases)
    assert failures == []
    for metric in METRICS:
        num, den = totals[metric]
        if metric == "operation_accuracy" and not any(c.expect.operations for c in suite.cases):
            continue  # the suite has no expected operations (yet): nothing to check
        assert den > 0, f"{metric}: nothing checked"
        want = 1.0 if metric in ACCURACY_METRICS else 0.0
        assert metric in ACCURACY_METRICS or metric in VIOLATION_METRICS
        assert num / den == want, f"{metric}: {num}/{den}"


def test_templates_cover_both_languages_and_a_name_straight_before_chinese():
    # Both languages, several templates each, one with no space before Chinese text.
    assert len(TEMPLATES["en"]) >= 4 and len(TEMPLATES["zh"]) >= 4
    assert TEMPLATES["zh"]["no_space"]("John", ["护士"]) == "John提到了护士。"


def _violating_sentences(case, template, variant):
    words = SUBJECT_WORDS[case.lang]
    return [
        {
            "text": TEMPLATES[case.lang][template](
                words.get(a.subject, a.subject), render_keywords(a.keywords, case.lang, variant)
            )
        }
        for a in case.expect.absent
    ]


def test_absent_checks_fail_the_answers_they_exist_to_fail():
    # "John会拉大提琴" in ms-zh-0064 once passed its absent check (a Latin name straight
    # before Chinese text was not read as the subject, A8): every absent check of every
    # case must now catch a sentence that breaks it, in every template.
    cases = [c for c in load_suite("multi_speaker").cases if c.expect.absent]
    assert any(c.id == "ms-zh-0064" for c in cases)
    for case in cases:
        for template, _, variant in passes(case):
            outcome = oracle_outcome(case, template, variant=variant)
            outcome.facts += [
                {**f, "owner": "user"} for f in _violating_sentences(case, template, variant)
            ]
            n = len(case.expect.absent)
            got = score_case(case, outcome).counts["misattribution_rate"]
            assert got == (n, n), (case.id, template, variant)


def test_the_self_check_can_fail():
    # A planted mistake: every named speaker's fact written about the user instead.
    cases = [
        c
        for c in load_suite("multi_speaker").cases
        if any(f.subject not in ("user", "assistant") for f in c.expect.facts)
    ]
    for case in cases[:5]:
        outcome = oracle_outcome(case, "plain" if case.lang == "en" else "no_space")
        for f, gold in zip(outcome.facts, case.expect.facts, strict=True):
            if gold.subject not in ("user", "assistant"):
                f["text"] = TEMPLATES[case.lang]["plain" if case.lang == "en" else "no_space"](
                    SUBJECT_WORDS[case.lang]["user"], render_keywords(gold.keywords, case.lang)
                )
        num, den = score_case(case, outcome).counts["attribution_accuracy"]
        assert num < den, case.id


V2_CASE = {
    "id": "v2",
    "lang": "en",
    "rules": ["A6", "R1"],
    "existing": [
        {"id": "m1", "text": "The user lives in Leeds."},
        {"id": "m2", "text": "The user drinks black coffee."},
        {"id": "m3", "text": "John works as a nurse."},
    ],
    "messages": [
        {"role": "user", "name": "Tim", "content": "I moved from Leeds to York, twelve years ago."},
        {"role": "assistant", "name": "John", "content": "I code in Go now, in 上海."},
    ],
    "expect": {
        "facts": [
            {"subject": "user", "owner": "user", "keywords": ["York", "12"]},
            {"subject": "John", "owner": "user", "keywords": ["=Go", ["上海", "Shanghai"]]},
        ],
        "absent": [{"subject": "user", "keywords": ["=Go"], "without": ["John"]}],
        "operations": {"m1": ["SUPERSEDE", "UPDATE"], "m2": "NONE", "m3": "UPDATE"},
    },
}


def test_the_oracle_writes_every_v2_form():
    case = Case.model_validate(V2_CASE)
    _, failures = score_oracle([case])
    assert failures == []
    texts = {
        oracle_outcome(case, t, a, v).facts[1]["text"]
        + oracle_outcome(case, t, a, v).facts[0]["text"]
        for t, a, v in passes(case)
    }
    # Every member of the group and every form of the number is written by some pass.
    for form in ("上海", "Shanghai", "12", "twelve", "十二"):
        assert any(form in t for t in texts), form
    assert not any("=" in t for t in texts)
    # The operations: m1 superseded by the user's fact, m3 updated by John's, m2 kept.
    plan = oracle_outcome(case, "plain").applied_ops
    assert [(o["op"], o["targets"]) for o in plan] == [("SUPERSEDE", [1]), ("UPDATE", [3])]
    # Dropping the operations costs exactly the two changing expectations.
    outcome = oracle_outcome(case, "plain")
    outcome.applied_ops = [{**o, "op": "ADD", "targets": []} for o in outcome.applied_ops]
    assert score_case(case, outcome).counts["operation_accuracy"] == (1, 3)
