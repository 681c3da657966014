"""Many-to-many pairing of the ``strict`` matcher (``_pairing``, docs/metrics.md,
"Matchers"): a prediction that states several gold facts serves each on a clause of its
own, a gold fact stated across two predictions is paired with both, and what states one
fact still serves one gold fact."""

from __future__ import annotations

import pytest

from hy_eval.harness import Case, Outcome, score_case
from hy_eval.harness.datasets import GoldFact
from hy_eval.harness.scoring import StrictMatcher
from hy_eval.harness.scoring._pairing import clause_parts, union_decision
from hy_eval.memory import Speakers


def _gold(subject: str, text: str, keywords: list) -> GoldFact:
    return GoldFact(subject=subject, owner="user", text=text, keywords=keywords)


def _picks(golds, texts, names=(), rank=lambda g, p: 0):
    return StrictMatcher(Speakers.of(None, list(names), {})).assign(golds, texts, rank)


def test_a_glued_prediction_states_both_gold_facts():
    golds = [
        _gold("于海", "于海三十八岁。", ["38"]),
        _gold("于海", "于海住在青岛。", ["青岛"]),
    ]
    picks = _picks(golds, ["于海三十八岁，住在青岛。"], ["于海"])
    assert [p.predicted for p in picks] == [0, 0]
    assert picks[1].detail["part"] == "住在青岛。"


def test_a_glued_prediction_taken_by_another_gold_fact_is_shared():
    """The English "and" between two clauses; the other gold fact's own prediction is
    taken too, so the glued one is the only one left for the bank."""
    golds = [
        _gold("user", "The user moved to Denver last spring.", ["Denver"]),
        _gold("user", "The user works remotely for a bank.", ["bank"]),
    ]
    texts = ["The user moved to Denver last spring and I work for a bank."]
    picks = _picks(golds, texts)
    assert [p.predicted for p in picks] == [0, 0]
    assert picks[1].detail["part"] == "I work for a bank."


def test_one_clause_states_one_fact():
    """Kept: "John likes coffee" has one clause, so it serves John's fact only, and the
    user's stays unmatched (recall 1/2, attribution 1/1), as one-to-one had it."""
    golds = [
        _gold("user", "The user likes coffee.", ["coffee"]),
        _gold("John", "John likes coffee.", ["coffee"]),
    ]
    picks = _picks(golds, ["John likes coffee."], ["John"], lambda g, p: 0 if g == 1 else 2)
    assert [p.predicted for p in picks] == [None, 0]


def test_two_gold_facts_cannot_claim_the_same_clause():
    """Kept: the second gold fact is accepted on the whole prediction, but only on the
    clause the first one needs; the other clause states something else."""
    golds = [
        _gold("user", "The user has a golden retriever.", ["retriever"]),
        _gold("user", "The user walks the golden retriever daily.", ["retriever"]),
    ]
    picks = _picks(golds, ["The user has a golden retriever, and she is eight."])
    assert sorted(p.predicted is None for p in picks) == [False, True]


def test_a_part_is_not_read_without_its_sentence():
    """Kept: a clause of suggestions states no course taken; the whole prediction is a
    plan, so the part alone does not give it to a done gold fact."""
    golds = [
        _gold("user", "王伟想给女儿报Python。", ["Python"]),
        _gold("user", "用户的女儿朵朵这学期上完了Scratch编程课。", ["Scratch"]),
    ]
    texts = ["王伟在学期想给她报Python，她才三年级学Python有点早，建议先上一学期进阶Scratch。"]
    picks = _picks(golds, texts, ["王伟"])
    assert picks[1].predicted is None


def test_a_fact_split_in_two_is_stated_by_their_union():
    golds = [
        _gold(
            "user", "The user works at Stripe as a data engineer in Dublin.", ["Stripe", "Dublin"]
        )
    ]
    texts = [
        "The user works at Stripe.",
        "John likes tea.",
        "The user is a data engineer in Dublin.",
    ]
    picks = _picks(golds, texts, ["John"])
    assert picks[0].predicted == 0
    assert picks[0].also == (2,)
    assert picks[0].detail["union"] is True


def test_a_union_keeps_the_rule_3_checks_of_each_part():
    """Kept: one half negates what the gold states; another half names another city;
    a half in the other language is not read."""
    gold = "The user works at Stripe as a data engineer in Dublin."
    keywords = ["Stripe", "Dublin"]
    half = "The user works at Stripe."
    assert union_decision(
        gold, keywords, half, "The user is a data engineer in Dublin.", ()
    ).accepted
    negated = "The user is not a data engineer in Dublin."
    assert not union_decision(gold, keywords, half, negated, ()).accepted
    other_city = "The user is a data engineer in Dublin, not Cork."
    assert not union_decision(gold, keywords, half, other_city, ()).accepted
    assert not union_decision(gold, keywords, half, "用户在都柏林做数据工程师。", ()).accepted


def test_a_union_needs_most_of_the_gold_and_both_halves():
    gold = "The user works at Stripe as a data engineer in Dublin."
    keywords = ["Stripe", "Dublin"]
    # "went to Dublin" adds one word: the union holds 3 of the gold's 5 content words.
    assert not union_decision(
        gold, keywords, "The user works at Stripe.", "The user went to Dublin.", ()
    ).accepted
    # A half that adds nothing the other lacks is no union.
    same = "The user works at Stripe in Dublin."
    assert not union_decision(gold, keywords, same, "The user works at Stripe.", ()).accepted


def test_a_union_is_tried_only_when_one_to_one_left_the_gold_unmatched():
    golds = [_gold("user", "The user works at Stripe as a data engineer in Dublin.", ["Stripe"])]
    texts = ["The user works at Stripe.", "The user is a data engineer in Dublin."]
    picks = _picks(golds, texts)
    assert picks[0].predicted == 0 and picks[0].also == ()


def test_clause_parts():
    assert clause_parts("于海三十八岁，住在青岛。", ()) == ["于海三十八岁，", "住在青岛。"]
    assert clause_parts("Priya is 38 and lives in Leeds.", ()) == ["Priya is 38", "lives in Leeds."]
    assert clause_parts("The user is a nurse.", ()) == ["The user is a nurse."]


def _case(facts: list[dict]) -> Case:
    return Case.model_validate(
        {
            "id": "c",
            "lang": "en",
            "rules": ["A2"],
            "messages": [
                {"role": "user", "name": "Tim", "content": "x"},
                {"role": "assistant", "name": "John", "content": "y"},
            ],
            "expect": {"facts": facts},
        }
    )


def _fact(subject: str, text: str, keywords: list) -> dict:
    return {"subject": subject, "owner": "user", "text": text, "keywords": keywords}


def test_each_pair_of_a_shared_prediction_is_scored_on_its_own():
    """A glued prediction about John states John's fact and the user's second one: the
    two gold facts are matched, and each pair's subject is judged for its own gold."""
    case = _case(
        [
            _fact("John", "John is a nurse.", ["nurse"]),
            _fact("user", "The user lives in Berlin.", ["Berlin"]),
        ]
    )
    facts = [{"text": "John is a nurse, and he lives in Berlin.", "owner": "user"}]
    s = score_case(case, Outcome(facts=facts), StrictMatcher(case.speakers))
    assert s.counts["fact_recall"] == (2, 2)
    assert s.counts["attribution_accuracy"] == (1, 2)
    rows = [c["detail"] for c in s.checks if c["check"] == "fact"]
    assert [r["matched"] for r in rows] == [0, 0]
    assert [r["subject_ok"] for r in rows] == [True, False]


def test_a_union_is_right_only_when_both_predictions_are():
    case = _case(
        [
            _fact(
                "user",
                "The user works at Stripe as a data engineer in Dublin.",
                ["Stripe", "Dublin"],
            )
        ]
    )
    right = [
        {"text": "The user works at Stripe.", "owner": "user"},
        {"text": "The user is a data engineer in Dublin.", "owner": "user"},
    ]
    s = score_case(case, Outcome(facts=right), StrictMatcher(case.speakers))
    row = next(c["detail"] for c in s.checks if c["check"] == "fact")
    assert (row["matched"], row["also"], row["subject_ok"]) == (0, [1], True)
    half_wrong = [right[0], {"text": "John is a data engineer in Dublin.", "owner": "user"}]
    s = score_case(case, Outcome(facts=half_wrong), StrictMatcher(case.speakers))
    row = next(c["detail"] for c in s.checks if c["check"] == "fact")
    assert (row["matched"], row["also"], row["subject_ok"]) == (0, [1], False)
    assert s.counts["attribution_accuracy"] == (0, 1)


def test_a_shared_part_needs_more_than_a_keyword():
    """Kept (from a capable model's answers): the clause "Adaeze has Security+" holds the
    keyword and a quarter of "Adaeze recommended Security+ as the user's next
    certification", below ``SHARED_THRESHOLD``: the prediction stays with the bank."""
    golds = [
        _gold(
            "Adaeze",
            "Adaeze recommended Security+ as the user's next certification.",
            ["Security+"],
        ),
        _gold("Adaeze", "Adaeze works in pen testing at a bank.", ["pen testing"]),
    ]
    texts = ["Adaeze has Security+ and works in pen testing at a bank."]
    picks = _picks(golds, texts, ["Adaeze"])
    assert [p.predicted for p in picks] == [None, 0]


def test_a_union_must_cover_the_main_verb():
    """Kept (from a capable model's answers): two predictions about other things hold
    "Ghost Lane" and "labels" but not "design"."""
    gold = "Ifeoma will design the Ghost Lane labels."
    a = "The user is launching Ghost Lane hot sauce as a business."
    b = "The assistant said to register with the council, plus allergen labels and insurance."
    assert not union_decision(gold, ["labels"], a, b, ("Ifeoma",)).accepted


def test_the_pairing_after_one_to_one_keeps_the_case_deadline(monkeypatch):
    """The deadline of a case's matching (docs/reliability.md) covers the unions too: a
    clock past it while unions are tried raises ``ScoringDeadline``."""
    from hy_eval.harness.scoring import _matching

    golds = [
        _gold(
            "user", "The user works at Stripe as a data engineer in Dublin.", ["Stripe", "Dublin"]
        )
    ]
    texts = ["The user works at Stripe.", "The user is a data engineer in Dublin."]
    assert _picks(golds, texts)[0].also == (1,)  # a union is tried here
    # The start, one reading per one-to-one pair in time, then every reading past it.
    clock = iter([0.0, 1.0, 1.0] + [1000.0] * 50)
    monkeypatch.setattr(_matching.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(_matching, "SCORING_DEADLINE_S", 500.0)
    monkeypatch.setattr(_matching, "decide", lambda *a, **k: _matching.Decision(False, 0.0, ""))
    with pytest.raises(_matching.ScoringDeadline, match="pairing after one-to-one"):
        _picks(golds, texts)
