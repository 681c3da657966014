"""Number forms that name the same quantity in other words, for the strict matcher's
number check (``_strict.numbers``): a reading of the text in ``canonical`` form (digits
already), and the other values each number may stand for.

- A half: 一个半小时 is 1.5 hours, 半小时 0.5 hours, 两个半月 2.5 months; "an hour and a half"
  is 1.5 hours.
- A thousand written as k: £5k and 5K are 5000.
- A range: 三到六个月, 3至6, "3 to 6" and 3~6 are the range 3-6, as "3-6" is.
- Durations in hours and minutes: 1.5 hours is also 90 minutes, 90 minutes also 1.5 hours.
- A clock hour without am or pm: 十点 (10 o'clock) may be 10 or 22; 22点 is only 22.

Each is a reading a person makes without thinking; none makes two different quantities
equal.
"""

from __future__ import annotations

import re

_HALF_AFTER = re.compile(r"(\d+)个?半(?=个?(?:小时|钟头|月|天|年|周|星期))")
_HALF_ALONE = re.compile(r"(?<![\d.])半个?(?=小时|钟头|月|天|年)")
_HOUR_AND_A_HALF = re.compile(r"\b(?:an|1) hour and a half\b")
_THOUSANDS_K = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)k\b")
_RANGE = re.compile(r"(?<![\d.])(\d+)\s*(?:到|至|~|～|–|—|\bto\b)\s*(\d+)(?![\d.])")
_HOURS = re.compile(r"(\d+(?:\.\d+)?)\s*(?:小时|个小时|钟头|hours?|hrs?)")
_MINUTES = re.compile(r"(\d+)\s*(?:分钟|minutes?|mins?)")
_CLOCK_HOUR = re.compile(r"(?<![\d.:])(\d{1,2})\s*(?:点|o'clock|o’clock)")


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def read_forms(text: str) -> str:
    """``text`` (canonical) with halves, ``k`` thousands and ranges written as digits."""
    t = _HALF_AFTER.sub(lambda m: f"{m.group(1)}.5", text)
    t = _HALF_ALONE.sub("0.5", t)
    t = _HOUR_AND_A_HALF.sub("1.5 hours", t)
    t = _THOUSANDS_K.sub(lambda m: _number(float(m.group(1)) * 1000), t)
    return _RANGE.sub(r"\1-\2", t)


def other_values(text: str) -> frozenset[str]:
    """The values the numbers of ``text`` (after :func:`read_forms`) also stand for."""
    out: set[str] = set()
    for m in _HOURS.finditer(text):
        out.add(_number(float(m.group(1)) * 60))
    for m in _MINUTES.finditer(text):
        minutes = int(m.group(1))
        if minutes and minutes % 30 == 0:
            out.add(_number(minutes / 60))
    for m in _CLOCK_HOUR.finditer(text):
        hour = int(m.group(1))
        if 1 <= hour <= 12:
            out.add(str(hour + 12 if hour < 12 else 0))
    return frozenset(out)
