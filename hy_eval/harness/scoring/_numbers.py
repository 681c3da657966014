"""Numbers in fact sentences, for the ``strict`` matcher (docs/metrics.md, "Matchers"):
how a sentence's numbers are read (digits, number words in both languages, ordinals,
clock times, the forms of ``_numforms``) and when a prediction names another number than
its gold fact (``number_conflict``: no shared number, or the same number with another
unit)."""

from __future__ import annotations

import re
from functools import lru_cache

from hy_eval.harness.datasets import canonical, fold_spaced
from hy_eval.harness.scoring._numforms import chinese_decimals, other_values, read_forms
from hy_eval.harness.text import split_words

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:-\d+)?")


@lru_cache(maxsize=65536)
def quantity_text(text: str) -> str:
    """``text`` with its numbers read (``canonical``) and their forms in one spelling
    (``_numforms.read_forms``: 10k and 1万 are 10000, 五公里 and five kilometres 5km)."""
    return read_forms(canonical(chinese_decimals(text)))


_ORDINALS = {
    w: str(i)
    for i, w in enumerate(
        split_words(
            "eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth "
            "eighteenth nineteenth twentieth"
        ),
        11,
    )
}
_UNIT_ORDINALS = split_words("first second third fourth fifth sixth seventh eighth ninth")
#: Ordinals read as numbers on their own; first and second are left as words (the first
#: time, a second is no count), tenth joins them.
_SMALL_ORDINALS = {w: str(i) for i, w in enumerate(_UNIT_ORDINALS, 1) if i > 2} | {"tenth": "10"}
_TENS_ORDINAL = re.compile(rf"\b(twenty|thirty)[\s-]({'|'.join(_UNIT_ORDINALS)})\b")
_CLOCK = re.compile(r"\b(\d{1,2})(?:[:.](\d\d))?\s*(am|pm|a\.m\.|p\.m\.)(?![a-z])")


def read_ordinals_and_clock(text: str) -> str:
    """Dates and times as numbers: twenty-first is 21, sixth is 6, 8pm and 8 p.m. are 20
    (as 20:00 is), 7.30am is 7:30."""

    def tens(m: re.Match[str]) -> str:
        base = 20 if m.group(1) == "twenty" else 30
        return str(base + _UNIT_ORDINALS.index(m.group(2)) + 1)

    t = _TENS_ORDINAL.sub(tens, fold_spaced(text))
    t = re.sub(r"\b(" + "|".join(_ORDINALS) + r")\b", lambda m: _ORDINALS[m.group(1)], t)
    t = re.sub(
        r"\b(" + "|".join(_SMALL_ORDINALS) + r")\b", lambda m: _SMALL_ORDINALS[m.group(1)], t
    )
    t = re.sub(r"\b(\d+)(?:st|nd|rd|th)\b", r"\1", t)

    def clock(m: re.Match[str]) -> str:
        hour = int(m.group(1)) % 12 + (12 if m.group(3).startswith("p") else 0)
        return f"{hour}:{m.group(2) or '00'}"

    return _CLOCK.sub(clock, t)


_UNIT = re.compile(
    r"(\d+(?:\.\d+)?)\s*(years?|months?|weeks?|days?|hours?|minutes?|mins?|km|kg|岁|年|个月|周|天|"
    r"小时|分钟|公里|公斤|斤)"
)


def number_conflict(gold: str, predicted: str) -> str | None:
    """Why ``predicted`` names another number than ``gold``, or None: both name numbers
    and share none (a 1 read from 一 in 一项 or 一个 counts only when it is all there is),
    or they share one with another unit (nine years / nine months)."""
    g_num, p_num = numbers(gold), numbers(predicted)
    if len(g_num) > 1 and len(p_num) > 1:
        g_num, p_num = g_num - {"1"}, p_num - {"1"}
    # The same quantity in another form (1.5 hours / 90 minutes; 十点 / 22点) is no conflict.
    if g_num and p_num and not (g_num | _also(gold)) & (p_num | _also(predicted)):
        return "another number"
    g_units, p_units = _units(gold), _units(predicted)
    for n in set(g_units) & set(p_units):
        if not g_units[n] & p_units[n]:
            return "the same number with another unit"
    return None


#: One name per unit in both languages (an age in 岁 is years, as "9 years old" is).
_UNIT_NAMES = {"岁": "year", "年": "year", "个月": "month", "周": "week", "天": "day"}
_UNIT_NAMES |= {"小时": "hour", "分钟": "minute", "min": "minute", "公里": "km", "公斤": "kg"}


@lru_cache(maxsize=65536)
def _read(text: str) -> str:
    """``text`` with its numbers read: ordinals, clock times, digits, halves, ranges.
    Cached: the number check reads each sentence three times (numbers, other values,
    units), and a sentence meets every gold fact of its case."""
    return read_forms(canonical(chinese_decimals(read_ordinals_and_clock(text))))


def _also(text: str) -> frozenset[str]:
    return other_values(_read(text).replace(":00", ""))


def _units(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for number, unit in _UNIT.findall(_read(text)):
        name = unit.rstrip("s") if unit.isascii() else unit
        out.setdefault(number, set()).add(_UNIT_NAMES.get(name, name))
    return out


def numbers(text: str) -> frozenset[str]:
    """The numbers a sentence names, as read (``canonical``, ordinals, clock times);
    a time's minutes ``:00`` are dropped, so 20:00 and 8pm are both 20."""
    t = _read(text).replace(":00", "")
    return frozenset(_NUMBER.findall(t))
