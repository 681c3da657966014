"""The two other readings of a fact's subject the spec allows for a (gold, predicted)
pair (A3, A6; hy_eval/harness/scoring/_pairsubject.py), through ``score_case``: a circle
fact written about the person it describes is right, giving it to the speaker stays
caught by the absent check; an action the assistant did for the user states the user's
fact, a suggestion stays the assistant's."""

import pytest

from hy_eval.harness import Case, Outcome, score_case
from hy_eval.harness.datasets._expect import GoldFact
from hy_eval.harness.scoring._pairsubject import pair_subject_right
from hy_eval.memory import Speakers, subject_of

CIRCLE = {
    "id": "circle",
    "lang": "en",
    "rules": ["A6", "A8"],
    "messages": [
        {"role": "user", "content": "Thandi is on night shifts on the ambulance all week."},
        {"role": "assistant", "name": "Bongani", "content": "Tell her hi."},
    ],
    "expect": {
        "facts": [
            {
                "subject": "user",
                "owner": "user",
                "keywords": ["paramedic"],
                "text": "The user's wife Thandi is a paramedic.",
            }
        ],
        "absent": [{"subject": "user", "keywords": ["paramedic"], "without": [["Thandi", "wife"]]}],
    },
}


def _score(case, *texts, owner="user"):
    return score_case(
        Case.model_validate(case), Outcome(facts=[{"text": t, "owner": owner} for t in texts])
    )


def test_a6_a_circle_fact_about_the_person_it_describes_is_right():
    s = _score(CIRCLE, "Thandi is a paramedic.")
    assert s.counts["attribution_accuracy"] == (1, 1)
    assert s.passed


def test_a6_the_speaker_holding_the_property_is_still_wrong():
    s = _score(CIRCLE, "The user is a paramedic.")
    assert not s.passed  # the absent check: a paramedic user without Thandi or wife


def test_a6_another_speaker_is_not_a_reading_of_the_circle_fact():
    s = _score(CIRCLE, "Bongani is a paramedic.")
    assert s.counts["attribution_accuracy"] == (0, 1)


ACTION = {
    "id": "action",
    "lang": "en",
    "rules": ["A3", "A1"],
    "messages": [
        {"role": "user", "name": "Sofia", "content": "Put the vet on Thursday in my calendar."},
        {"role": "assistant", "content": "Done: Thursday at 10:30 at Riverside Vets."},
    ],
    "expect": {
        "facts": [
            {
                "subject": "user",
                "owner": "user",
                "keywords": ["Thursday"],
                "text": "The user has a vet appointment on Thursday at 10:30.",
            }
        ]
    },
}


def test_a3_an_action_done_for_the_user_states_the_users_fact():
    s = _score(ACTION, "The assistant added the Thursday 10:30 vet visit to the user's calendar.")
    assert s.counts["attribution_accuracy"] == (1, 1)


def test_a3_a_suggestion_stays_the_assistants():
    s = _score(ACTION, "The assistant suggested a Thursday vet visit for the user.")
    assert s.counts["attribution_accuracy"] == (0, 1)


@pytest.mark.parametrize(
    "gold_text, predicted, right",
    [
        ("用户的女儿朵朵上小学了。", "朵朵上小学了。", True),
        ("Farid's sister Noor qualified as a paramedic.", "Noor qualified as a paramedic.", True),
        ("The user told Theo about the new job.", "Theo got a new job.", False),
        ("用户周四下午三点看牙。", "助手为用户在日历里添加了周四下午三点的牙医预约。", True),
        ("用户周四下午三点看牙。", "助手建议用户周四去看牙。", False),
    ],
)
def test_pair_readings(gold_text, predicted, right):
    speakers = Speakers.of(None, ["Farid"])
    subject = "Farid" if gold_text.startswith("Farid") else "user"
    gold = GoldFact(subject=subject, owner="user", text=gold_text, keywords=["x"])
    assert pair_subject_right(gold, subject_of(predicted, speakers), predicted) is right
