"""The fuzzy matcher (hy_eval/harness/scoring/_fuzzy.py): the similarity on pairs
that must and must not match, in English and Chinese, the negation guard, the keyword
path, and the one-to-one assignment against scipy's exact solver."""

import random

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from hy_eval.harness.scoring import (
    FUZZY_THRESHOLD,
    FuzzyMatch,
    dice,
    match_fuzzy,
    max_weight_assignment,
    similarity,
)
from hy_eval.harness.text import features, is_negated

#: (gold, predicted, names to ignore): the same fact in other words or in part.
SAME = [
    ("Gina lost her job at Door Dash.", "The user lost her job at Door Dash this month.", ["Gina"]),
    (
        "Jon practices various dances with a small group, including contemporary and "
        "hip-hop, and is working on choreography for a nearby festival.",
        "The user practices contemporary and hip-hop dances with a small group.",
        ["Jon"],
    ),
    ("Audrey has four dogs.", "The user has 4 dogs.", ["Audrey"]),
    (
        "Jon's favorite dance style is contemporary.",
        "Jon's favourite dance styles: contemporary.",
        ["Jon"],
    ),
    (
        "Melanie painted a lake sunrise last year.",
        "The user painted a sunrise over a lake.",
        ["Melanie"],
    ),
    ("THE USER LIKES ＣＯＦＦＥＥ.", "The user likes coffee.", []),
    ("用户在柏林当护士。", "用户是柏林的护士", []),
    ("王伟在Stripe做工程师", "用户在Stripe当工程师", ["王伟", "用户"]),
]

#: Different facts on one topic, or across languages: must not match.
DIFFERENT = [
    ("The user likes coffee.", "The user likes tea.", []),
    ("用户喜欢喝咖啡", "用户喜欢喝茶", ["用户"]),
    ("Jon opened a dance studio.", "Jon closed his bank account.", ["Jon"]),
    ("The user is a nurse in Berlin.", "用户是柏林的护士", []),
]

#: Known misses at the threshold: paraphrases that change half the words.
MISSED = [
    (
        "Maria took a solo trip to Spain last year.",
        "Maria travelled alone to Spain last year.",
        ["Maria"],
    ),
    ("用户喜欢喝咖啡", "用户爱喝咖啡", ["用户"]),
]


@pytest.mark.parametrize(("gold", "pred", "names"), SAME)
def test_paraphrases_and_partial_facts_reach_the_threshold(gold, pred, names):
    assert similarity(gold, pred, names) >= FUZZY_THRESHOLD
    assert match_fuzzy([pred], [gold], ignore=names)[0].by == "similarity"


@pytest.mark.parametrize(("gold", "pred", "names"), DIFFERENT + MISSED)
def test_different_facts_and_the_known_misses_stay_below(gold, pred, names):
    assert similarity(gold, pred, names) < FUZZY_THRESHOLD
    assert match_fuzzy([pred], [gold], ignore=names)[0].predicted is None


def test_features_fold_drop_stop_words_names_and_split_chinese_into_bigrams():
    assert features("Jon's favorite dances: Hip-Hop, FIFTEEN of them!", ["Jon"]) == {
        "favorite",
        "dance",
        "hip",
        "hop",
        "15",
    }
    # Split at 在 and 的; a piece of one character stays a feature; names cut out.
    assert features("王伟在柏林的家", ["王伟"]) == {"柏林", "家"}
    assert features("John是Stripe的工程师", ["John"]) == {"stripe", "工程", "程师"}
    assert features("", []) == set() and dice(set(), set()) == 0.0


def test_a_negation_on_one_side_only_rejects_the_pair():
    assert is_negated("The user doesn't eat meat.") and is_negated("He never smokes")
    assert not is_negated("The user eats meat.") and not is_negated("Notes on a knot")
    gold, pred = "The user eats meat.", "The user does not eat meat."
    assert similarity(gold, pred) == 1.0
    assert match_fuzzy([pred], [gold])[0].predicted is None
    assert match_fuzzy(["The user never eats meat."], [pred])[0].by == "similarity"


def test_a_prediction_holding_every_keyword_is_accepted_whatever_its_similarity():
    gold = ["Jon lost his job as a banker the day before the conversation."]
    pred = ["The user was a banker until yesterday."]
    assert similarity(gold[0], pred[0], ["Jon"]) < FUZZY_THRESHOLD
    assert match_fuzzy(pred, gold, ignore=["Jon"])[0].predicted is None
    got = match_fuzzy(pred, gold, [["banker"]], ignore=["Jon"])[0]
    assert (got.predicted, got.by) == (0, "keywords")
    assert match_fuzzy(pred, gold, [["banker", "fired"]], ignore=["Jon"])[0].predicted is None


def test_matching_is_one_to_one_and_takes_as_many_pairs_as_possible():
    # A greedy pass would give the best pair (gold 0, pred 0) first and leave gold 1
    # without a match; the assignment matches both.
    gold = ["The user plays tennis and chess on weekends.", "The user plays chess."]
    pred = ["The user plays tennis and chess.", "The user plays tennis at weekends with friends."]
    s = [[similarity(g, p) for p in pred] for g in gold]
    assert s[0][0] > s[0][1] >= FUZZY_THRESHOLD and s[1][0] >= FUZZY_THRESHOLD > s[1][1]
    got = match_fuzzy(pred, gold)
    assert [(m.gold, m.predicted) for m in got] == [(0, 1), (1, 0)]
    # Two copies of one prediction still match one gold fact only.
    twice = match_fuzzy(
        ["The user likes coffee."] * 2, ["The user likes coffee.", "The user likes tea."]
    )
    assert [m.predicted for m in twice] == [0, None]
    assert match_fuzzy([], ["x"]) == [FuzzyMatch(0, None, 0.0, None)]
    assert match_fuzzy(["x"], []) == []


def test_the_assignment_is_the_optimum_scipy_finds():
    rng = random.Random(19)
    for _ in range(300):
        rows, cols = rng.randint(0, 7), rng.randint(0, 7)
        w = [
            [rng.choice([0.0, 0.0, rng.random(), 3 + rng.random()]) for _ in range(cols)]
            for _ in range(rows)
        ]
        got = max_weight_assignment(w)
        assert len(got) == rows
        taken = [c for c in got if c is not None]
        assert len(taken) == len(set(taken))
        total = sum(w[r][c] for r, c in enumerate(got) if c is not None)
        best = 0.0
        if rows and cols:
            r_idx, c_idx = linear_sum_assignment(np.array(w), maximize=True)
            best = float(sum(w[r][c] for r, c in zip(r_idx, c_idx, strict=True)))
        assert total == pytest.approx(best), w


def test_a_preference_decides_between_equally_good_gold_facts_but_never_costs_a_pair():
    # The coffee case: one prediction, two gold facts it matches equally well.
    gold = ["The user likes coffee.", "John likes coffee."]
    pred = ["John likes coffee."]
    for pref, want in (([[0], [2]], [None, 0]), ([[2], [0]], [0, None])):
        got = match_fuzzy(pred, gold, ignore=["John"], preference=pref)
        assert [m.predicted for m in got] == want
    # Preferring (gold 0, pred 0) would leave gold 1 unmatched: two pairs win.
    gold = ["The user plays chess.", "The user plays tennis."]
    pred = ["The user plays chess and tennis.", "The user plays chess."]
    got = match_fuzzy(pred, gold, preference=[[2, 0], [0, 0]])
    assert [m.predicted for m in got] == [1, 0]
