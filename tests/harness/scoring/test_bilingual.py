"""The other language's forms of a keyword from CC-CEDICT and pinyin
(hy_eval/harness/scoring/_bilingual.py), and what the strict matcher does with them."""

from __future__ import annotations

import pytest

from hy_eval.harness.scoring import decide
from hy_eval.harness.scoring._bilingual import dictionary_forms, holds_pinyin, pinyin, same_word


@pytest.mark.parametrize(
    ("keyword", "form"),
    [
        ("晕船", "seasick"),  # "to become seasick": the verb's frame is no part of the form
        ("马拉松", "marathon"),  # "marathon (loanword)": the parenthesis is dropped
        ("乌鲁木齐", "urumqi"),  # "Ürümqi or Urumqi, prefecture-level city ...": accents off
        ("壳牌", "shell"),  # "see 殼牌公司|壳牌公司[...]": the cross-reference is followed
        ("plumbers", "水管工"),  # plural keyword, singular gloss
        ("seasick", "晕船"),
    ],
)
def test_a_dictionary_form_is_a_whole_short_gloss(keyword, form):
    assert form in dictionary_forms(keyword)


def test_explanations_references_and_single_characters_are_no_forms():
    urumqi = dictionary_forms("乌鲁木齐")
    assert not any("capital" in f or "xinjiang" in f for f in urumqi)  # an explanation
    assert not any(f.startswith("see ") for f in dictionary_forms("壳牌"))
    assert "壳" not in dictionary_forms("shell")  # one character is too ambiguous
    # An English keyword finds the words whose gloss *is* it, not one containing it.
    assert "水管工" not in dictionary_forms("water")
    assert dictionary_forms("no-such-word-anywhere") == frozenset()


@pytest.mark.parametrize(
    ("text", "keyword", "held"),
    [
        ("The user moved to Zhangjiang last month.", "张江", True),
        ("Her cousin A-Feng was transferred.", "阿峰", True),  # hyphen ignored
        ("They live in Xu Hui District.", "徐汇", True),  # syllables as two words
        ("They live in Xuhuistreet.", "徐汇", False),  # inside a longer word
        ("Anyway, she said no.", "阿", False),  # two-letter pinyin is too common
        ("用户住在张江。", "张江", False),  # Chinese text: no pinyin in it
    ],
)
def test_a_chinese_keyword_is_found_written_in_pinyin(text, keyword, held):
    assert holds_pinyin(text, keyword) is held


def test_pinyin_is_for_all_chinese_keywords_only():
    assert pinyin("张江") == "zhangjiang"
    assert pinyin("UCLA") == "" and pinyin("N2班") == ""


@pytest.mark.parametrize(
    ("gold", "keywords", "predicted"),
    [
        ("The user gets seasick.", ["seasick"], "用户会晕船。"),
        (
            "用户的表弟阿峰在乌鲁木齐工作。",
            ["乌鲁木齐", "阿峰"],
            "The user's cousin A-Feng works in Urumqi.",
        ),
        ("The user's brother works for Shell.", ["Shell"], "用户的哥哥在壳牌工作。"),
    ],
)
def test_other_language_pairs_are_found_through_the_dictionary(gold, keywords, predicted):
    verdict = decide(gold, keywords, predicted)
    assert verdict.accepted, verdict


def test_an_other_language_pair_needs_some_of_the_golds_content_in_a_known_form():
    # The keyword is there (Shell, 壳牌), the rest of the fact is not: 1 of its 6 content
    # words (brother, chemical, engineer, Shell, refinery, Rotterdam) is below 0.2.
    gold = "The user's brother is a chemical engineer at Shell's refinery in Rotterdam."
    verdict = decide(gold, ["Shell"], "壳牌的股价今天跌了。")
    assert not verdict.accepted and "content agreement" in verdict.why
    assert decide(gold, ["Shell"], "用户的哥哥是壳牌的化学工程师。").accepted


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("北大", "北京大学", True),  # "abbr. for 北京大學|北京大学"
        ("派对", "聚会", True),  # both glossed "party"
        ("café", "coffee shop", True),  # both translate 咖啡店
        ("大理", "丽江", False),
        ("周三", "周四", False),
        ("walk", "feed", False),
    ],
)
def test_same_word_reads_abbreviations_and_shared_glosses(a, b, same):
    assert same_word(a, b) is same


def test_a_word_said_otherwise_is_no_replaced_value():
    # The frame rule: 派对 and 聚会 are one value, 派对 and 婚礼 are not.
    assert decide("用户周六在家办派对。", ["周六"], "用户周六在家办聚会。").accepted
    assert not decide("用户周六在家办派对。", ["周六"], "用户周六在家办婚礼。").accepted
    # The named-value rule: an abbreviation names the same university.
    assert decide("用户的表妹考上了北京大学。", ["表妹"], "用户的表妹考上了北大。").accepted
