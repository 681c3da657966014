"""Another person, related to the fact's subject (docs/metrics.md, "Matchers"): the
``strict`` matcher refuses a prediction that moves a fact onto a relative or an
acquaintance of its subject. "Tomasz's father is a plumber" does not state "Tomasz is a
plumber", nor does 老赵女儿的男朋友考上了浙大 state 老赵的女儿考上了浙大.

A prediction has added a relative when it holds a kin or acquaintance word (the kin
class of ``_values``: father, 女儿, friend, 同事 ...) whose group the gold fact does not
hold, and the word is owned by someone: after 's or ’s (an adjective between allowed:
"the user's late father"), after 的, or in Chinese straight after a name, 用户 or another
kin word (老赵女儿). A kin word followed by a speaker's name, or in English by any
capitalised word, only introduces that person ("the user's friend Rob", 妹妹刘露): it is
no added relative. Dad and father, 老公 and 丈夫 are one group, so a synonym adds
nobody, and an in-law word that names the parent the gold gives a named person (用户的婆婆
for 老陈的母亲) is that person (``_values.in_law_named``).

A prediction that swaps the subject for another name ("Owen got his PADI" for Niamh) is
not this rule's business: the subject is scored apart.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hy_eval.harness.scoring._values import in_law_named, kin_groups
from hy_eval.harness.text import fold

#: Chinese kin words that are also titles after a surname (王先生 is Mr Wang, 周阿姨 a
#: polite "auntie Zhou"): owned only after 的.
_TITLES = frozenset({"先生", "太太", "阿姨", "叔叔", "老师"})
_OWNER_ZH = ("用户",)
#: A capitalised word straight after a Latin kin word, as the prediction writes it.
_NAME_AFTER = re.compile(r",?\s+[A-Z][a-z]")


@lru_cache(maxsize=1)
def _kin_index() -> tuple[dict[str, int], re.Pattern[str], re.Pattern[str]]:
    """Each kin word and its group; a pattern of the Latin words, one of the Chinese."""
    index = {w: i for i, group in enumerate(kin_groups()) for w in group}
    latin = sorted((w for w in index if w.isascii()), key=len, reverse=True)
    chinese = sorted((w for w in index if not w.isascii()), key=len, reverse=True)
    return (
        index,
        re.compile(r"(?<![a-z])(" + "|".join(map(re.escape, latin)) + r")(?![a-z])"),
        re.compile("(" + "|".join(map(re.escape, chinese)) + ")"),
    )


def _groups(folded: str) -> set[int]:
    index, latin, chinese = _kin_index()
    return {index[m.group(1)] for p in (latin, chinese) for m in p.finditer(folded)}


def _owned_latin(folded: str, start: int) -> bool:
    before = folded[:start].rstrip()
    return (
        bool(re.search(r"['’]s(?:\s+[a-z]+)?$", before))
        or before.endswith(" of his")
        or (before.endswith(" of her"))
    )


def _owned_chinese(folded: str, start: int, word: str, owners: tuple[str, ...]) -> bool:
    before = folded[:start]
    if before.endswith("的"):
        return True
    if word in _TITLES:
        return False
    index = _kin_index()[0]
    return any(before.endswith(o) for o in owners) or any(
        before.endswith(k) for k in index if not k.isascii()
    )


def _introduces(folded: str, end: int, names: tuple[str, ...]) -> bool:
    """Whether a name follows the kin word: it introduces that person."""
    after = folded[end:].lstrip(" ,，")
    return any(after.startswith(fold(n)) for n in names if n)


def added_relative(gold: str, predicted: str, names: tuple[str, ...]) -> str | None:
    """Why ``predicted`` states the fact of a relative of the gold's subject, or None
    (module docstring)."""
    g, p = fold(gold), fold(predicted)
    had = _groups(g)
    same_person = in_law_named(g, p, names)
    index, latin, chinese = _kin_index()
    owners = (*_OWNER_ZH, *(fold(n) for n in names if n))
    for m in latin.finditer(p):
        word = m.group(1)
        if index[word] in had or word in same_person or _introduces(p, m.end(), names):
            continue
        if len(p) == len(predicted) and _NAME_AFTER.match(predicted, m.end()):
            continue  # "the user's friend Rob": a capitalised name introduces the person
        if _owned_latin(p, m.start()):
            return f"a relative of the subject ({word})"
    for m in chinese.finditer(p):
        word = m.group(1)
        if index[word] in had or word in same_person or _introduces(p, m.end(), names):
            continue
        if _owned_chinese(p, m.start(), word, owners):
            return f"a relative of the subject ({word})"
    return None
