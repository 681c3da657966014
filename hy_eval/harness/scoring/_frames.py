"""Near misses that keep a fact's frame (docs/metrics.md, "Matchers"): the ``strict``
matcher refuses a prediction that repeats the gold fact's words around one changed
value, or that turns the direction of a change around.

- **One value replaced.** The content words of both sentences, in order (names, subject
  placeholders, stop words and cue words left out), are aligned. When every content word
  of the gold fact is found in order except one run, and the prediction has other content
  words in that run's place, the prediction states the same frame with another value:
  "walk the dog on Wednesdays" / "feed the dog on Wednesdays", 做风控 / 做产品经理. Words
  of one contrast group are one value (dad is father), numbers are compared as read, and
  two Chinese words that share a character (皮疹 / 疹子), or that CC-CEDICT makes one word
  (``_bilingual.same_word``: 派对 / 聚会, café / coffee shop), are taken as the same value
  said otherwise. A frame of fewer than two shared words is no frame.
- **Direction turned.** A change has a source and a target: "from X to Y", "out of X",
  "dropped X for Y", 从X到Y, 把X改成Y, 改X为Y. A prediction whose source holds a content word
  that the gold fact names only outside its own sources ("moved out of Antwerp" for
  "moved back to Antwerp") states the change the other way round. "no longer" starts a
  source too (what "no longer drinks" names, "quit drinking" leaves). "from" a time with
  no target after it ("from this term", not "from June to September") or after a thing
  received ("an offer from the UC Davis vet school") starts none.
- **One value said otherwise** is no replaced value: a plural (CVs / CV), to marry and a
  wedding, the first attempt and the first time (``frame_text``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from functools import lru_cache

from hy_eval.conversation._render import is_cjk
from hy_eval.harness.datasets import chinese_to_digits, english_to_digits
from hy_eval.harness.scoring._bilingual import same_word
from hy_eval.harness.scoring._numbers import read_ordinals_and_clock
from hy_eval.harness.scoring._numforms import quantities

#: "the first attempt", "the second try", "the third go": one value with "the first
#: time" (ordinals as ``read_ordinals_and_clock`` leaves them: first, second, digits).
_ATTEMPT = re.compile(r"\b(first|second|\d+)\s+(?:attempt|try|go)\b")


def frame_text(text: str) -> str:
    """The text the frame rules read: folded, numbers, ordinals and clock times as
    digits (twenty-first is 21, 8pm is 20:00, 四千六 is 4600), an attempt counted as a
    time (the first attempt is the first time)."""
    t = _ATTEMPT.sub(r"\1 time", read_ordinals_and_clock(text))
    return quantities(chinese_to_digits(english_to_digits(t)))


#: Where the source of a change starts: the content word after it is the source.
_EN_SOURCE = re.compile(
    r"\b(?:from|out of|left|leaving|leaves|quit|quits|quitting|no longer)\s"
    r"|\b(?:dropped|drops|drop|swapped|swaps|swap|traded|trades|exchanged|replaced|"
    r"switched|switches)\s(?=(?:\S+\s){1,4}(?:for|with)\b)"
)
_ZH_SOURCE = re.compile(r"从|把(?=.{1,8}?(?:改成|换成|改为|变成|转成))|改(?=.{1,8}?为)")
#: Where a source ends: the word that starts the target, or a clause end.
_SOURCE_END = re.compile(r"\b(?:back to|to|into|for|with)\b|[到转搬调换改去来回为，,。；;！!？?]")


#: "from" followed by a time says when, not where from: "switching to soprano from this
#: term", "from Monday", "from 2025" (numbers are digits here), "from now on".
_FROM_A_TIME = re.compile(
    r"(?:this|next|last|now|today|tonight|tomorrow|then|the (?:start|beginning|end)\b|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|january|february|march|april|may|"
    r"june|july|august|september|october|november|december|spring|summer|autumn|winter|"
    r"\d)"
)
#: A thing received before "from" names who sent it, not a place left: "an offer from
#: the UC Davis vet school", "a letter from her bank".
_RECEIVED = re.compile(
    r"\b(?:offers?|letters?|calls?|emails?|messages?|texts?|gifts?|presents?|invitations?|"
    r"invites?|scholarships?|grants?|loans?|acceptances?|admissions?|referrals?|"
    r"recommendations?|advice|help|support|diagnos[ie]s|prescriptions?|parcels?|"
    r"packages?|cards?)\s+$"
)
#: A target after "from" makes it a change even from a time: "moved from June to
#: September".
_TARGET_AFTER = re.compile(r"^[^,，.。;；]*?\b(?:to|until|till|into)\b")


def _not_a_source(text: str, m: re.Match[str]) -> bool:
    """Whether a source marker ``m`` starts no source of a change: "from" a time with
    no target after it, or "from" after a thing received (the module docstring's
    exceptions)."""
    if m.group(0).strip() != "from":
        return False
    after = text[m.end() :]
    if _FROM_A_TIME.match(after) and not _TARGET_AFTER.match(after):
        return True
    return bool(_RECEIVED.search(text[: m.start()]))


def source_spans(text: str) -> list[tuple[int, int]]:
    """The character spans of the sources of changes in ``text`` (as ``canonical``
    writes it): from a source marker to the start of the target or the clause end."""
    out: list[tuple[int, int]] = []
    for pattern in (_EN_SOURCE, _ZH_SOURCE):
        for m in pattern.finditer(text):
            if pattern is _EN_SOURCE and _not_a_source(text, m):
                continue
            end = _SOURCE_END.search(text, m.end() + 1)
            out.append((m.end(), end.start() if end else len(text)))
    return out


def _first_in(spans: list[tuple[int, int]], seq: Sequence[tuple[int, str]]) -> list[str]:
    """The first content word of each span."""
    out = []
    for a, b in spans:
        inside = [w for at, w in seq if a <= at < b]
        out.extend(inside[:1])
    return out


def turned_direction(
    gold: str, g_seq: Sequence[tuple[int, str]], predicted: str, p_seq: Sequence[tuple[int, str]]
) -> str | None:
    """Why ``predicted`` turns a change of ``gold`` around, or None (module docstring).
    Both texts as ``canonical`` writes them, with their content words and offsets."""
    p_sources = _first_in(source_spans(predicted), p_seq)
    if not p_sources:
        return None
    g_spans = source_spans(gold)
    inside = {w for at, w in g_seq if any(a <= at < b for a, b in g_spans)}
    # A word the gold fact itself names as a source is no turned direction, wherever else
    # it stands ("a trophy from a dance contest ... the joy dance brings" is its own text).
    outside = {w for at, w in g_seq} - inside
    for word in p_sources:
        if word in outside:
            return f"a change the other way round ({word} left, not reached)"
    return None


#: Stems (``_strict._latin_stem``) of one value said in other words: to marry and a
#: wedding name one event ("plan to marry in June" / "their wedding is in June").
_SAME_VALUES = (frozenset({"marry", "marri", "marriage", "wed"}),)


def _plural_of(a: str, b: str) -> bool:
    """``a`` is ``b`` with an English plural ending (cvs / cv, boxes / box): the crude
    stem leaves short words and acronyms as written."""
    return a in (b + "s", b + "es")


@lru_cache(maxsize=65536)
def _same_value(a: str, b: str) -> bool:
    """Whether two content words may name one value said otherwise."""
    if a == b or _plural_of(a, b) or _plural_of(b, a):
        return True
    if any(a in group and b in group for group in _SAME_VALUES):
        return True
    if any(map(is_cjk, a)) and any(map(is_cjk, b)):
        return bool(set(a) & set(b)) or same_word(a, b)
    digits_a, digits_b = re.findall(r"\d+", a), re.findall(r"\d+", b)
    if digits_a or digits_b:
        return digits_a == digits_b
    return (min(len(a), len(b)) >= 4 and a[:4] == b[:4]) or same_word(a, b)


def replaced_in_frame(
    gold: Sequence[str],
    predicted: Sequence[str],
    fixed: Sequence[bool],
    p_fixed: Sequence[bool],
) -> str | None:
    """Why the content words ``predicted`` replace one value of ``gold``'s frame, or
    None (module docstring). Both are content words in order, in the form they are
    compared in (one key per contrast group, numbers as read); ``fixed[i]`` says gold
    word ``i`` is no value a near miss replaces (a verb, the subject, a light word), and
    ``p_fixed`` the same of the predicted words: a run of them replaces no value."""
    ops = SequenceMatcher(None, gold, predicted, autojunk=False).get_opcodes()
    shared = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    changed = [op for op in ops if op[0] in ("replace", "delete")]
    if shared < 2 or len(changed) != 1 or changed[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = changed[0]
    old, new = gold[i1:i2], predicted[j1:j2]
    if any(fixed[i1:i2]) or all(p_fixed[j1:j2]) or any(_same_value(a, b) for a in old for b in new):
        return None
    if any(a in predicted for a in old):  # the value is still there, elsewhere
        return None
    return f"another value in the same frame ({' '.join(new)} for {' '.join(old)})"
