"""Keyword matching for gold checks (docs/datasets.md, "Keywords").

A keyword item is a string or an any-of group (a list of strings: at least one must
occur). Text and keywords are compared in a canonical form:

- NFKC, case-folded, whitespace collapsed (``fold_spaced``);
- numbers written as English words (``twelve``, ``twenty-one``, ``three hundred and
  five``, 0 to 999,999) or Chinese numerals (``十二``, ``两``, ``一百二十``, ``一万五``,
  ``二〇二四``; 0 to 99,999,999) read as their digits; ``1,000`` as ``1000``;
- no whitespace between a digit and a letter (``3 pm`` is ``3pm``, ``12 years`` is
  ``12years``).

A keyword matches where its canonical form occurs in the text's, and a keyword that
starts (ends) with a digit never matches right after (before) another digit: ``12``
is not found in ``112`` or ``2012``.

A keyword starting with ``=`` is a whole word: ``=Go`` matches ``Go`` with no Latin
letter or digit on either side (``He codes in Go.``, ``用Go写``), not ``going``. It is
compared on the folded text only (no number reading). ``=猫`` marks a single Chinese
character that is a word on its own; the ``strict`` matcher (``_strict.py``) then asks the
segmenter for a whole word, this module's ``keyword`` rule finds it anywhere.

The ``strict`` matcher reads numbers through ``canonical`` too, so 1万 is 10000, 三四次 a
range (3-4次) and 3千米 three kilometres (3千米), as the tests show.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Annotated

from pydantic import BeforeValidator

from hy_eval.conversation._render import is_cjk

#: A keyword item: one string, or any-of group of strings.
Keyword = str | list[str]

# fmt: off
_SMALL = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
)
# fmt: on
_UNITS = {w: i for i, w in enumerate(_SMALL)}
_TENS_WORDS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_TENS = {w: 10 * (i + 2) for i, w in enumerate(_TENS_WORDS)}
_SCALES = {"hundred": 100, "thousand": 1000}
_EN_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
#: A Latin letter or digit of the folded text: a number word touching one is part of
#: another word ("someone", "tenth"). Chinese characters are word characters to ``\b``
#: too, but a number word straight after one is a number ("提到了thirty").
_LATIN = r"a-z0-9_\u00c0-\u024f"
#: A run of English number words joined by spaces, hyphens or "and".
_EN_RUN = re.compile(
    rf"(?<![{_LATIN}])(?:{_EN_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_EN_WORD}))*(?![{_LATIN}])"
)

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4}
_ZH_DIGITS |= {"五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_RUN = re.compile("[零〇一二两三四五六七八九十百千万亿]+")

_SPACE_DIGIT_LETTER = re.compile(r"(?<=\d) (?=[^\W\d_])|(?<=[^\W\d_]) (?=\d)")
_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def fold_spaced(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _english_numbers(words: list[str]) -> list[int]:
    """The numbers a run of English number words spells; a word that cannot continue
    the number in progress starts a new one ("one two" is 1 and 2, not 3)."""
    out: list[int] = []
    total, current, last = 0, 0, ""

    def flush() -> None:
        nonlocal total, current, last
        if last:
            out.append(total + current)
        total, current, last = 0, 0, ""

    after_and = False
    for w in words:
        if w == "and":
            after_and = True
            continue
        # "and" joins only a hundred or thousand to the rest ("one hundred and five");
        # "twenty and three" is two numbers.
        joinable = ("hundred", "thousand") if after_and else ("", "hundred", "thousand")
        tens_then_unit = w in _UNITS and _UNITS[w] < 10 and last == "tens" and not after_and
        after_and = False
        if w in _UNITS:
            if not (last in joinable or tens_then_unit):
                flush()
            current += _UNITS[w]
            last = "teen" if _UNITS[w] >= 10 else "unit"
        elif w in _TENS:
            if last not in joinable:
                flush()
            current += _TENS[w]
            last = "tens"
        elif w == "hundred":
            if last not in ("", "unit", "teen") or current >= 100:
                flush()
            current = (current or 1) * 100
            last = "hundred"
        else:  # thousand
            if last == "thousand" or total:
                flush()
            total, current, last = (current or 1) * 1000, 0, "thousand"
    flush()
    return out


def english_to_digits(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        words = re.split(r"[\s-]+", m.group(0))
        return " ".join(str(n) for n in _english_numbers(words))

    return _EN_RUN.sub(repl, text)


def _chinese_section(run: str) -> int:
    """A numeral below 10,000: 十二, 一百零五, 两千, and the spoken 一百二 (120)."""
    value, digit, unit = 0, None, 0
    for ch in run:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        else:
            unit = _ZH_UNITS[ch]
            value += (1 if digit is None else digit) * unit
            digit = None
    if digit is not None:
        # A digit straight after 百/千 is the next place down (一百二 = 120).
        value += digit * (unit // 10 if unit >= 100 and not run.endswith("零" + run[-1]) else 1)
    return value


def chinese_number(run: str) -> int:
    """The value of a run of Chinese numeral characters (一亿五千万 = 150,000,000). A run
    without 十/百/千/万/亿 of two or more digits is read digit by digit (二〇二四 = 2024)."""
    if "亿" in run:
        high, _, low = run.partition("亿")
        return (chinese_number(high) if high else 1) * 100_000_000 + (
            chinese_number(low) if low else 0
        )
    if len(run) > 1 and not any(ch in "十百千万" for ch in run):
        return int("".join(str(_ZH_DIGITS[ch]) for ch in run))
    high, _, low = run.rpartition("万")
    value = 0
    if "万" in run:
        value = (chinese_number(high) if high else 1) * 10_000
        if low and len(low) == 1 and low in _ZH_DIGITS and low not in "零〇":
            return value + _ZH_DIGITS[low] * 1000  # 一万五 = 15,000
    return value + (_chinese_section(low) if low else 0)


#: 千 before these is the metric prefix kilo- (千米 km, 千克 kg, 千卡 kcal, 千瓦 kW), not a
#: thousand: 3千米 is 3 km, not 3,000 米.
_KILO_UNITS = "米克卡瓦焦"
#: Two neighbouring digits with no place word are a spoken range, not a number:
#: 三四次 is "three or four times", 两三天 "two or three days".
_ZH_RANGE = {
    a + b: f"{_ZH_DIGITS[a]}-{_ZH_DIGITS[b]}"
    for a in "一二两三四五六七八"
    for b in "二三四五六七八九"
    if _ZH_DIGITS[b] == _ZH_DIGITS[a] + 1 and a + b != "一二"
} | {"一两": "1-2"}  # 一两天, 一两点: one or two
#: Arabic digits with a Chinese multiplier: 1万, 1.5万, 3千, 2亿, and 1万5 (15,000).
_DIGITS_TIMES = re.compile(rf"(?<![\d.])(\d+(?:\.\d+)?)(万|亿|千(?![{_KILO_UNITS}])|百)(\d(?!\d))?")
_MULTIPLIER = {"百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}


def _digits_times(m: re.Match[str]) -> str:
    number, unit, tail = m.group(1), m.group(2), m.group(3)
    value = float(number) * _MULTIPLIER[unit]
    if tail:  # 1万5: the digit after the multiplier is the next place down
        value += int(tail) * _MULTIPLIER[unit] // 10
    return str(int(value)) if value == int(value) else str(value)


def _zh_run(m: re.Match[str]) -> str:
    run = m.group(0)
    after = m.string[m.end() : m.end() + 1]
    if run in _ZH_RANGE:
        return _ZH_RANGE[run]
    if run.endswith("千") and after and after in _KILO_UNITS:
        # 三千米 is 3 km, read as 3千米; 千米 alone stays a unit.
        return (str(chinese_number(run[:-1])) if len(run) > 1 else "") + "千"
    return str(chinese_number(run))


def chinese_to_digits(text: str) -> str:
    # Digits with a multiplier first, so that the multiplier is not read on its own.
    return _ZH_RUN.sub(_zh_run, _DIGITS_TIMES.sub(_digits_times, text))


@lru_cache(maxsize=65536)
def canonical(text: str) -> str:
    """The form keywords and texts are compared in (see the module docstring)."""
    t = _THOUSANDS_COMMA.sub("", fold_spaced(text))
    t = chinese_to_digits(english_to_digits(t))
    return _SPACE_DIGIT_LETTER.sub("", t)


def _latin_word_char(ch: str) -> bool:
    return ch.isalnum() and not is_cjk(ch)


def _find_whole_word(text: str, word: str) -> bool:
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        before = start == 0 or not _latin_word_char(text[start - 1])
        after = end == len(text) or not _latin_word_char(text[end])
        if before and after:
            return True
        start = text.find(word, start + 1)
    return False


def _find_canonical(text: str, keyword: str) -> bool:
    start = text.find(keyword)
    while start >= 0:
        end = start + len(keyword)
        before = not keyword[0].isdigit() or start == 0 or not text[start - 1].isdigit()
        after = not keyword[-1].isdigit() or end == len(text) or not text[end].isdigit()
        if before and after:
            return True
        start = text.find(keyword, start + 1)
    return False


def matches(text: str, keyword: str) -> bool:
    """Whether one keyword string occurs in ``text`` (module docstring for the rules)."""
    if keyword.startswith("=") and len(keyword) > 1:
        return _find_whole_word(fold_spaced(text), fold_spaced(keyword[1:]))
    wanted = canonical(keyword)
    return bool(wanted) and _find_canonical(canonical(text), wanted)


def item_matches(text: str, item: Keyword) -> bool:
    """A string keyword occurs, or at least one member of a group does."""
    if isinstance(item, str):
        return matches(text, item)
    return any(matches(text, k) for k in item)


def contains_all(text: str, keywords: list[Keyword]) -> bool:
    return all(item_matches(text, k) for k in keywords)


def contains_any(text: str, keywords: list[Keyword]) -> bool:
    return any(item_matches(text, k) for k in keywords)


def keyword_problem(item: object) -> str | None:
    """Why a keyword item is malformed, or None: an empty group, a blank string, ``=``
    with no word, or a whole-word keyword in Chinese text."""
    members = item if isinstance(item, list) else [item]
    if isinstance(item, list) and not item:
        return "an any-of group must not be empty"
    for k in members:
        if not isinstance(k, str):
            return "a keyword must be a string or a list of strings"
        if not k.strip():
            return "keywords must not be blank"
        if k.startswith("=") and not k[1:].strip():
            return "'=' must be followed by a word (=Go matches Go as a whole word)"
    return None


def _checked(item: object) -> object:
    problem = keyword_problem(item)
    if problem:
        raise ValueError(problem)
    return item


#: A keyword item as a pydantic field type: malformed items are reported at their own
#: position (``expect.facts.0.keywords.1: keywords must not be blank``).
KeywordItem = Annotated[str | list[str], BeforeValidator(_checked)]


def first_forms(items: list[Keyword]) -> list[str]:
    """One string per item (a group's first member), without the ``=`` mark."""
    return [(k if isinstance(k, str) else k[0]).removeprefix("=") for k in items]


def members(items: list[Keyword]) -> list[str]:
    """Every string of every item (groups flattened), without the ``=`` mark."""
    return [
        k.removeprefix("=") for item in items for k in ([item] if isinstance(item, str) else item)
    ]


def without_name(keywords: list[Keyword], forms: set[str]) -> list[Keyword]:
    """A fact's keyword items once the person named by ``forms`` (casefolded) is the
    user (``_perturb.swap_perspective``): a perfect answer then says "the user", not the
    name ("Noor will ask the user for a payment plan" for "The user will ask Gareth for a
    payment plan"). Items that name the person are dropped while another item is left,
    else the name is taken out of its items' alternatives."""

    def names(member: str) -> bool:
        return member.removeprefix("=").casefold() in forms

    def alternatives(item: Keyword) -> list[str]:
        return [item] if isinstance(item, str) else list(item)

    named = [k for k in keywords if any(names(m) for m in alternatives(k))]
    if not named:
        return keywords
    if len(named) < len(keywords):
        return [k for k in keywords if k not in named]
    out: list[Keyword] = []
    for k in keywords:
        left = [m for m in alternatives(k) if not names(m)]
        if left:
            out.append(left[0] if len(left) == 1 else left)
    return out or keywords
