"""``echoed_subject_rate`` on planted answers (docs/metrics.md; A2, A8, E3): predicted
facts about the people of the prompt's worked examples who are named nowhere in the
case's conversation or history, over the predicted facts. The subject is the scorer's
(``subject_of`` with the case's speakers), so a fact about the user that mentions an
example person later is not echoed."""

import pytest

from hy_eval.harness import Case, Outcome, score_case
from hy_eval.harness.systems import not_measured
from hy_eval.memory import PromptLibrary, example_people

METRIC = "echoed_subject_rate"


def case(lang, messages, history=()):
    return Case.model_validate(
        {
            "id": f"c-{lang}",
            "lang": lang,
            "rules": ["A2"],
            "messages": messages,
            "history": list(history),
            "expect": {"facts": [{"subject": "user", "owner": "user", "keywords": ["x"]}]},
        }
    )


EN = case(
    "en",
    [
        {"role": "user", "name": "Sam", "content": "I moved to Leeds last month."},
        {"role": "assistant", "name": "Jo", "content": "I still work at the bakery."},
    ],
)
ZH = case(
    "zh",
    [
        {"role": "user", "name": "小明", "content": "我上个月搬到了杭州。"},
        {"role": "assistant", "name": "小红", "content": "我还在面包店上班。"},
    ],
)


def outcome(lang, *texts, variant="default", **kw):
    return Outcome(
        facts=[{"text": t, "owner": "user"} for t in texts],
        example_people=example_people(PromptLibrary(variant), lang),
        **kw,
    )


def test_english_facts_about_the_example_people_are_counted():
    s = score_case(
        EN,
        outcome(
            "en",
            "Mary teaches piano.",  # the example's Mary: echoed
            "Bill is allergic to cats.",  # the example's Bill: echoed
            "The user shares a flat with Mary and Bill.",  # the user's fact (A1)
            "Jo works at the bakery.",  # a speaker of the case
            "The user moved to Leeds.",
        ),
    )
    assert s.counts[METRIC] == (2, 5)
    assert [f.get("echoed") for f in s.facts] == ["Mary", "Bill", None, None, None]
    # The record keeps which person each echoed fact names.
    assert s.record().facts[0].echoed == "Mary" and s.record().facts[2].echoed is None


def test_chinese_facts_about_the_example_people_are_counted():
    s = score_case(
        ZH,
        outcome(
            "zh",
            "王伟在学校教钢琴。",  # read as other:王伟 by the scorer
            "张敏对猫过敏。",  # unknown to the scorer: read with the example people
            "John 是柏林的一名护士。",  # the Chinese example's John
            "用户和王伟、张敏合租。",  # the user's fact
            "小红在面包店上班。",  # a speaker
        ),
    )
    assert s.counts[METRIC] == (3, 5)
    assert [f.get("echoed") for f in s.facts] == ["王伟", "张敏", "John", None, None]


def test_a_person_also_named_in_the_conversation_is_not_an_echo():
    named = case(
        "zh",
        [
            {"role": "user", "name": "小明", "content": "王伟最近在学钢琴。"},
            {"role": "assistant", "name": "John", "content": "我在柏林当护士。"},
        ],
    )
    s = score_case(
        named,
        outcome("zh", "王伟在学钢琴。", "John 是柏林的一名护士。", "张敏对猫过敏。"),
    )
    # 王伟 is mentioned in a message, John speaks; 张敏 is named nowhere.
    assert s.counts[METRIC] == (1, 3)
    assert [f.get("echoed") for f in s.facts] == [None, None, "张敏"]


def test_a_person_named_in_the_history_is_not_an_echo():
    with_history = case(
        "en",
        EN.messages,
        history=[{"role": "user", "name": "Sam", "content": "Mary teaches piano, you know."}],
    )
    s = score_case(with_history, outcome("en", "Mary teaches piano.", "Bill has a cat."))
    assert s.counts[METRIC] == (1, 2)


def test_another_person_read_first_is_that_person():
    s = score_case(EN, outcome("en", "Dr. Patel met Mary at the clinic."))
    assert s.counts[METRIC] == (0, 1)  # the scorer's subject is Dr. Patel


@pytest.mark.parametrize("lang, texts", [("en", ["Mary teaches piano."]), ("zh", ["王伟教钢琴。"])])
def test_no_examples_counts_zero_with_its_facts(lang, texts):
    s = score_case(EN if lang == "en" else ZH, outcome(lang, *texts, variant="no_examples"))
    assert s.counts[METRIC] == (0, 1)  # measured: 0 of 1, not "not measured"
    assert METRIC not in s.not_measured


def test_the_pipeline_language_picks_the_examples():
    # The English examples have no 王伟: a Chinese fact about him in an English run's
    # answer is not an echo of what that prompt showed.
    s = score_case(ZH, outcome("en", "王伟在学校教钢琴。"))
    assert s.counts[METRIC] == (0, 1)


def test_an_external_system_does_not_measure_it():
    assert METRIC in not_measured([]) and METRIC in not_measured(
        ["owner", "profile", "operations_raw"]
    )
    out = outcome("en", "Mary teaches piano.", not_measured=not_measured(["owner"]))
    s = score_case(EN, out)
    assert s.counts[METRIC] == (0, 0) and METRIC in s.not_measured
    assert "echoed" not in s.facts[0]


def test_a_failed_case_counts_nothing():
    s = score_case(EN, Outcome(error="server: HTTP 500", example_people=("Mary",)))
    assert s.counts[METRIC] == (0, 0)
