"""Keyword matching of the v2 case format: any-of groups, numbers in digit,
English-word and Chinese-numeral form, whitespace between digits and letters, whole-word
keywords and ``without`` on absent checks."""

import pytest

from hy_eval.harness import Case, Outcome, score_case
from hy_eval.harness.datasets import canonical, chinese_number, contains_all, matches
from tests.harness.oracle import chinese_number as zh_words
from tests.harness.oracle import english_number


@pytest.mark.parametrize(
    "text, keyword",
    [
        ("The user lives in Shanghai.", ["上海", "Shanghai"]),
        ("用户住在上海。", ["上海", "Shanghai"]),
        ("John has worked there for twelve years.", "12"),
        ("John 在那里工作了十二年。", "12"),
        ("John has worked there for 12 years.", "twelve"),
        ("小李有两个孩子。", "2"),
        ("She is twenty-one.", "21"),
        ("The flat costs one thousand two hundred a month.", "1200"),
        ("The flat costs 1,200 a month.", "1200"),
        ("房租一千二百元。", "1200"),
        ("房租一千二。", "1200"),
        ("这座楼建于二〇〇五年。", "2005"),
        ("Nine thousand nine hundred ninety-nine steps.", "9999"),
        ("零下", "0"),
        ("The meeting is at 3 pm.", "3pm"),
        ("The meeting is at 3pm.", "3 pm"),
        ("He has been married for twelve years.", "12 years"),
        ("他结婚十年了。", "10年"),
        ("他结婚10 年了。", "十年"),
        ("He codes in Go.", "=Go"),
        ("他用Go写后端。", "=Go"),
        ("Go, mostly.", "=go"),
        ("ＮＵＲＳＥ", "nurse"),
    ],
)
def test_matches(text, keyword):
    assert contains_all(text, [keyword])


@pytest.mark.parametrize(
    "text, keyword",
    [
        ("The user lives in Beijing.", ["上海", "Shanghai"]),
        ("John is 112.", "12"),
        ("In 2012 John moved.", "12"),
        ("John has worked there for twenty years.", "12"),
        ("She is twenty and three friends came.", "23"),
        ("He is going home.", "=Go"),
        ("Gopher", "=Go"),
        ("Go2", "=Go"),
        ("room 12b", "12a"),
    ],
)
def test_does_not_match(text, keyword):
    assert not contains_all(text, [keyword])


def test_every_number_from_0_to_9999_in_every_form():
    # The documented range: each form of each number reads back as its digits.
    for n in range(10_000):
        assert canonical(english_number(n)) == str(n), n
        assert chinese_number(zh_words(n)) == n, n
        assert matches(f"x {english_number(n)} y", str(n)), n
        assert matches(f"甲{zh_words(n)}乙", str(n)), n


def test_number_words_inside_other_words_are_not_numbers():
    assert canonical("someone often plays tennis") == "someone often plays tennis"
    assert not matches("someone", "1")
    for text in ("iPhone用户", "用户的tenth", "Tenda路由器", "someone的", "élevenx"):
        assert not any(ch.isdigit() for ch in canonical(text)), text


@pytest.mark.parametrize(
    ("text", "keyword"),
    [
        ("王姐提到了eight。", "8"),
        ("用户说过thirty", "30"),
        ("说过one hundred fifty", "150"),
        ("用户跑了twenty-one公里", "21"),
    ],
)
def test_number_words_straight_after_chinese_are_numbers(text, keyword):
    # A Chinese character is a word character to the regex \b; it is no Latin word.
    assert matches(text, keyword)


def _case(absent):
    return Case.model_validate(
        {
            "id": "k",
            "lang": "en",
            "rules": ["A6"],
            "messages": [{"role": "user", "name": "Tim", "content": "x"}],
            "expect": {"absent": [absent]},
        }
    )


def test_absent_without():
    # "a fact about the user that mentions Oslo but not Theo" (A6)
    case = _case({"subject": "user", "keywords": ["Oslo"], "without": [["Theo", "西奥"]]})

    def violated(text):
        out = Outcome(facts=[{"text": text, "owner": "user"}])
        return score_case(case, out).counts["misattribution_rate"]

    assert violated("The user moved to Oslo.") == (1, 1)
    assert violated("The user's brother Theo moved to Oslo.") == (0, 1)
    assert violated("The user's brother 西奥 moved to Oslo.") == (0, 1)
    assert violated("The user lives in Bergen.") == (0, 1)
