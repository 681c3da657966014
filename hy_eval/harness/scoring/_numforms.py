"""Number forms that name the same quantity in other words, for the strict matcher's
number check (``_numbers.numbers``): a reading of the text in ``canonical`` form (digits
already), and the other values each number may stand for.

- A half: 一个半小时 is 1.5 hours, 半小时 0.5 hours, 两个半月 2.5 months; "an hour and a half"
  is 1.5 hours.
- A thousand written as k: £5k and 5K are 5000.
- A range: 三到六个月, 3至6, "3 to 6" and 3~6 are the range 3-6, as "3-6" is; "1 or 2"
  (neighbouring numbers) is the range 1-2, as 一两 is.
- Durations in hours and minutes: 1.5 hours is also 90 minutes, 90 minutes also 1.5 hours.
- A clock hour without am or pm: 十点 (10 o'clock) may be 10 or 22; 22点 is only 22.
- A Chinese decimal (``chinese_decimals``, read before ``canonical``): 九点二 is 9.2.
- Magnitudes and units in one spelling: 1.2 million and £1.2m are 1200000, 1.5亿 is
  150000000; kilometres, kilometers, 公里 and 千米 are km, kilograms, kilos, 公斤 and 千克
  are kg; twice is 2 times, a decade 10 years, a fortnight 2 weeks, a dozen 12.

Each is a reading a person makes without thinking; none makes two different quantities
equal.
"""

from __future__ import annotations

import re

from hy_eval.harness.datasets import canonical

_HALF_AFTER = re.compile(r"(\d+)个?半(?=个?(?:小时|钟头|月|天|年|周|星期))")
_HALF_ALONE = re.compile(r"(?<![\d.])半个?(?=小时|钟头|月|天|年)")
_HOUR_AND_A_HALF = re.compile(r"\b(?:an|1) hour and a half\b")
_THOUSANDS_K = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)k\b")
#: ``canonical`` glues a number to the word after it ("3 to 6" is 3to6), so "to" is
#: read between digits without word bounds.
_RANGE = re.compile(r"(?<![\d.])(\d+)\s*(?:到|至|~|～|–|—|to)\s*(\d+)(?![\d.])")
#: "1 or 2", "3 or 4": neighbouring numbers said as alternatives are a range, as 一两点 is.
_OR_RANGE = re.compile(r"(?<![\d.])(\d+)\s*or\s*(\d+)(?![\d.])")
_HOURS = re.compile(r"(\d+(?:\.\d+)?)\s*(?:小时|个小时|钟头|hours?|hrs?)")
_MINUTES = re.compile(r"(\d+)\s*(?:分钟|minutes?|mins?)")
_CLOCK_HOUR = re.compile(r"(?<![\d.:])(\d{1,2})\s*(?:点|o'clock|o’clock)")


_MILLIONS = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)\s*(million|mn|billion|bn|亿)(?![a-z])|"
    r"(?<=[£$€¥])(\d+(?:\.\d+)?)(m|b)\b"
)
_THOUSANDS_COMMA = re.compile(r"(\d),(?=\d{3}(?!\d))")
_SCALE = {"million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9, "亿": 1e8}
#: One spelling per unit, longest first so 千米 is not read as 千 + 米.
_UNIT_SPELLINGS = [
    (re.compile(r"(?<=\d)\s*(?:kilomet(?:re|er)s?|公里|千米)"), "km"),
    (re.compile(r"(?<=\d)\s*(?:kilograms?|kilos?|公斤|千克)"), "kg"),
]
_WORDS = [
    (re.compile(r"\btwice\b"), "2 times"),
    (re.compile(r"\bthrice\b"), "3 times"),
    (re.compile(r"\ba decade\b"), "10 years"),
    (re.compile(r"(?<![\d.])(\d+)\s*decades\b"), None),
    (re.compile(r"\ba fortnight\b"), "2 weeks"),
    (re.compile(r"\ba dozen\b"), "12"),
]


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


_ZH_DIGITS = {c: str(i) for i, c in enumerate("零一二三四五六七八九")} | {"〇": "0", "两": "2"}
#: A Chinese decimal: 九点二 is 9.2, 三点五公里 3.5 km. Only where nothing makes it a clock
#: time: one or more digits after 点 (no 十, so 九点二十 stays 9:20), followed by the end,
#: a punctuation mark or a unit, never by 分 or 刻 (九点二分), nor by a word (三点一起).
_ZH_DECIMAL = re.compile(
    r"([零〇一二两三四五六七八九十百千]+|\d+)点([一二三四五六七八九][零〇一二三四五六七八九]*)"
    r"(?=$|[\s，,。.；;！!？?、）)」”\"%％a-zA-Z]|公里|公斤|千米|千克|米|斤|度|万|亿|倍|元|块|岁|毫|升)"
)


def chinese_decimals(text: str) -> str:
    """``text`` (as written, before ``canonical``) with its Chinese decimals in digits:
    九点二 is 9.2, 三点五公里 3.5公里; a clock time (九点二十, 九点二分) is left alone."""

    def digits(m: re.Match[str]) -> str:
        whole = m.group(1)
        if not whole.isdigit():
            whole = canonical(whole)
        return f"{whole}.{''.join(_ZH_DIGITS[c] for c in m.group(2))}"

    return _ZH_DECIMAL.sub(digits, text)


def read_forms(text: str) -> str:
    """``text`` (canonical) with halves, ranges and ``quantities`` written as digits."""
    t = _HALF_AFTER.sub(lambda m: f"{m.group(1)}.5", text)
    t = _HALF_ALONE.sub("0.5", t)
    t = _HOUR_AND_A_HALF.sub("1.5 hours", t)
    t = _RANGE.sub(r"\1-\2", quantities(t))
    return _OR_RANGE.sub(
        lambda m: (
            m.group(0) if int(m.group(2)) != int(m.group(1)) + 1 else f"{m.group(1)}-{m.group(2)}"
        ),
        t,
    )


def quantities(text: str) -> str:
    """``text`` (canonical) with thousands (10,000, 10k), magnitudes as digits and units
    in one spelling (the module docstring's last reading)."""

    def scale(m: re.Match[str]) -> str:
        value, word = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return _number(round(float(value) * _SCALE[word], 6))

    t = _MILLIONS.sub(scale, _THOUSANDS_COMMA.sub(r"\1", text))
    t = _THOUSANDS_K.sub(lambda m: _number(float(m.group(1)) * 1000), t)
    for pattern, spelling in _UNIT_SPELLINGS:
        t = pattern.sub(spelling, t)
    for pattern, words in _WORDS:
        t = pattern.sub(words or (lambda m: f"{int(m.group(1)) * 10} years"), t)
    return t


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
