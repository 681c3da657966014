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
  "moved back to Antwerp") states the change the other way round.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from functools import lru_cache

from hy_eval.conversation._render import is_cjk
from hy_eval.harness.scoring._bilingual import same_word

#: Where the source of a change starts: the content word after it is the source.
_EN_SOURCE = re.compile(
    r"\b(?:from|out of|left|leaving|leaves|quit|quits|quitting)\s"
    r"|\b(?:dropped|drops|drop|swapped|swaps|swap|traded|trades|exchanged|replaced|"
    r"switched|switches)\s(?=(?:\S+\s){1,4}(?:for|with)\b)"
)
_ZH_SOURCE = re.compile(r"从|把(?=.{1,8}?(?:改成|换成|改为|变成|转成))|改(?=.{1,8}?为)")
#: Where a source ends: the word that starts the target, or a clause end.
_SOURCE_END = re.compile(r"\b(?:back to|to|into|for|with)\b|[到转搬调换改去来回为，,。；;！!？?]")


def source_spans(text: str) -> list[tuple[int, int]]:
    """The character spans of the sources of changes in ``text`` (as ``canonical``
    writes it): from a source marker to the start of the target or the clause end."""
    out: list[tuple[int, int]] = []
    for pattern in (_EN_SOURCE, _ZH_SOURCE):
        for m in pattern.finditer(text):
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


@lru_cache(maxsize=65536)
def _same_value(a: str, b: str) -> bool:
    """Whether two content words may name one value said otherwise."""
    if a == b:
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
