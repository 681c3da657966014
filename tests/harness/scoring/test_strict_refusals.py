"""The ``strict`` matcher's refusal rules, narrowed where they refused facts a capable
model stated (docs/metrics.md, "Matchers"): each fixed example with the wrong case its
rule still refuses beside it."""

from __future__ import annotations

import pytest

from hy_eval.harness.scoring import decide, number_conflict

#: (gold, keywords, prediction, names): pairs a capable model's answers hold, each the
#: same fact, which a refusal rule turned down.
STATED = [
    # another value in the same frame: a plural, an attempt as a time, marry / wedding
    ("The user sent CVs to five firms.", ["five"], "The user sent a CV to five firms.", []),
    ("The user sent her CV to five firms.", ["five"], "The user sent CVs to five firms.", []),
    (
        "The user passed the driving test on the first attempt.",
        ["driving"],
        "The user passed the driving test the first time.",
        [],
    ),
    (
        "Ben and Lucy plan to marry in June.",
        ["June"],
        "Ben and Lucy's wedding is in June.",
        ["Ben", "Lucy"],
    ),
    # negation differs: a failure denied, a habit ended
    (
        "The user has paid the mortgage for ten years without missing a payment.",
        ["mortgage"],
        "The user has paid every mortgage payment on time for ten years.",
        [],
    ),
    (
        "The user has paid the mortgage for ten years without missing a payment.",
        ["mortgage"],
        "The user has never missed a mortgage payment in ten years.",
        [],
    ),
    ("Tom no longer drinks alcohol.", ["alcohol"], "Tom quit drinking alcohol.", ["Tom"]),
    ("Tom no longer drinks alcohol.", ["alcohol"], "Tom stopped drinking alcohol.", ["Tom"]),
    # a change the other way round: "from" a time, "from" after a thing received
    (
        "Mia sings soprano this term.",
        ["soprano"],
        "Mia is switching to soprano from this term.",
        ["Mia"],
    ),
    (
        "Priya got into the UC Davis vet school.",
        ["Davis"],
        "Priya has an offer from the UC Davis vet school.",
        ["Priya"],
    ),
    # another named value: a possessive
    (
        "The user is on Klarna's fraud team.",
        ["Klarna"],
        "The user works on the fraud team at Klarna in Stockholm.",
        [],
    ),
    # another value of the same kind: a named person's parent said from the spouse's side
    ("老陈的母亲住院了。", ["住院"], "用户的婆婆住院了。", ["老陈"]),
    # a question: a question word before 都 is an indefinite
    ("用户这周末不能出门。", ["周末"], "用户这周末哪儿都去不了。", []),
    # another number: a Chinese decimal
    ("用户的爸爸空腹血糖九点二。", ["血糖"], "用户爸爸的空腹血糖是9.2。", []),
    ("用户的爸爸空腹血糖9.2。", ["血糖"], "用户爸爸的空腹血糖是九点二。", []),
]

#: (gold, keywords, prediction, names, why): the wrong cases each narrowed rule exists
#: for, still refused, with the words of the reason.
STILL_REFUSED = [
    (
        "The user sent CVs to five firms.",
        ["five"],
        "The user sent cover letters to five firms.",
        [],
        "frame",
    ),
    (
        "The user passed the driving test on the first attempt.",
        ["driving"],
        "The user passed the driving test on the second attempt.",
        [],
        "frame",
    ),
    (
        "Ben and Lucy's wedding is in Lisbon in June.",
        ["June"],
        "Ben and Lucy's honeymoon is in Lisbon in June.",
        ["Ben", "Lucy"],
        "frame",
    ),
    (
        "The user has paid the mortgage for ten years without missing a payment.",
        ["mortgage"],
        "The user has missed a mortgage payment.",
        [],
        "negation",
    ),
    (
        "The user missed a mortgage payment.",
        ["mortgage"],
        "The user has never missed a mortgage payment.",
        [],
        "negation",
    ),
    ("Tom drinks alcohol.", ["alcohol"], "Tom quit drinking alcohol.", ["Tom"], "other way round"),
    ("Tom drinks alcohol.", ["alcohol"], "Tom no longer drinks alcohol.", ["Tom"], "negation"),
    (
        "The user has not paid the mortgage.",
        ["mortgage"],
        "The user has paid the mortgage.",
        [],
        "negation",
    ),
    (
        "The user moved from Leeds to York.",
        ["York"],
        "The user moved from York to Leeds.",
        [],
        "other way round",
    ),
    ("The user moved to Leeds.", ["Leeds"], "The user moved from Leeds.", [], "other way round"),
    (
        "The user is on Klarna's fraud team.",
        ["fraud"],
        "The user works on the fraud team at Monzo in Stockholm.",
        [],
        "named value",
    ),
    ("老陈的母亲住院了。", ["住院"], "老陈的婆婆住院了。", ["老陈"], "same kind"),
    ("用户的母亲住院了。", ["住院"], "用户的婆婆住院了。", [], "same kind"),
    ("老陈的母亲住院了。", ["住院"], "用户的外婆住院了。", ["老陈"], "same kind"),
    ("用户这周末不能出门。", ["周末"], "用户这周末去哪儿？", [], "question"),
    ("用户这周末去爬山。", ["周末"], "用户这周末去哪儿爬山", [], "question"),
    ("用户的爸爸空腹血糖九点二。", ["血糖"], "用户爸爸的空腹血糖是9.6。", [], "number"),
]


@pytest.mark.parametrize(("gold", "keywords", "predicted", "names"), STATED)
def test_a_stated_fact_is_accepted(gold, keywords, predicted, names):
    verdict = decide(gold, keywords, predicted, names)
    assert verdict.accepted, verdict


@pytest.mark.parametrize(("gold", "keywords", "predicted", "names", "why"), STILL_REFUSED)
def test_the_wrong_case_is_still_refused(gold, keywords, predicted, names, why):
    verdict = decide(gold, keywords, predicted, names)
    assert not verdict.accepted, verdict
    assert why in verdict.why, verdict


def test_a_clock_time_is_no_decimal():
    """九点二十 is 9:20 and 九点二分 9:02, 三点一起 "together at three": none is a decimal."""
    assert number_conflict("用户晚上九点二十到家。", "用户晚上9点20到家。") is None
    assert number_conflict("用户晚上九点二十到家。", "用户晚上9.2到家。") == "another number"
    assert number_conflict("用户下午三点一起去。", "用户下午3点去。") is None
