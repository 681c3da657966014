"""Chinese word segmentation for the ``strict`` matcher (docs/metrics.md, "Matchers").

Chinese writes no spaces, so "a keyword occurs as a word" needs a segmenter: 租 occurs in
合租 (flat-sharing) and 素 in 维生素 (vitamin), but neither is a word there. jieba's
dictionary segmenter (``jieba.Tokenizer``, one private instance, so nothing global of
jieba's is changed) splits a text into words; its "search" mode adds the dictionary words
inside a long word (投影 and 投影仪 for 投影仪), so a keyword may be a whole word or a
dictionary word within one.

The case's speaker names are cut out before segmenting, as words of their own, so a name
is never split (欧阳磊 is not 欧阳 + 磊) nor glued to its neighbours. This has the effect of
adding the names to the dictionary, without changing state shared between cases.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from hy_eval.conversation._render import is_cjk

#: One span of a segmented text: ``(start, end)`` character offsets, end exclusive.
Span = tuple[int, int]


@lru_cache(maxsize=1)
def jieba_tokenizer() -> Any:
    import jieba

    jieba.setLogLevel(logging.WARNING)  # its dictionary load logs to stderr
    tok = jieba.Tokenizer()
    tok.initialize()
    return tok


def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str] | None:
    cjk = sorted({n for n in names if n and any(is_cjk(c) for c in n)}, key=len, reverse=True)
    return re.compile("|".join(re.escape(n) for n in cjk)) if cjk else None


@lru_cache(maxsize=65536)
def segments(text: str, names: tuple[str, ...] = ()) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """``(words, search)``: the spans of ``text``'s words, and those words plus the
    dictionary words inside them (jieba's search mode). Names are words of their own."""
    tok = jieba_tokenizer()
    words: list[Span] = []
    search: list[Span] = []
    pieces: list[tuple[int, int, bool]] = []  # (start, end, is a name)
    at = 0
    pattern = _name_pattern(names)
    for m in pattern.finditer(text) if pattern else ():
        if m.start() > at:
            pieces.append((at, m.start(), False))
        pieces.append((m.start(), m.end(), True))
        at = m.end()
    if at < len(text):
        pieces.append((at, len(text), False))
    for start, end, is_name in pieces:
        if is_name:
            words.append((start, end))
            search.append((start, end))
            continue
        piece = text[start:end]
        # No HMM: it glues unknown characters into words the dictionary does not hold
        # (点素, 套真题); without it they stay single characters, each a word.
        words.extend((start + a, start + b) for _, a, b in tok.tokenize(piece, HMM=False))
        search.extend(
            (start + a, start + b) for _, a, b in tok.tokenize(piece, mode="search", HMM=False)
        )
    return tuple(words), tuple(search)


def words(text: str, names: Iterable[str] = ()) -> list[str]:
    """The words of ``text`` in order (names kept whole)."""
    spans, _ = segments(text, tuple(names))
    return [text[a:b] for a, b in spans]


def inside_a_word(text: str, span: Span, names: tuple[str, ...] = ()) -> bool:
    """Whether ``span`` lies inside one word of ``text`` and does not start and end where
    dictionary words within it do: 租 in 合租, 生素 in 维生素 (but not 投影 in 投影仪, nor
    新加坡国立 in 新加坡国立大学, nor a span that crosses word boundaries such as 兼毫 in
    兼|毫笔, where the segmenter may be wrong)."""
    start, end = span
    spans, search = segments(text, names)
    for a, b in spans:
        if a <= start and end <= b and (a, b) != span:
            starts = {x for x, _ in search}
            ends = {y for _, y in search}
            return not (start in starts and end in ends)
    return False


def is_word(text: str, span: Span, names: tuple[str, ...] = ()) -> bool:
    """Whether ``span`` is exactly one word of ``text``, or a run of whole words."""
    spans, _ = segments(text, names)
    return span[0] in {a for a, _ in spans} and span[1] in {b for _, b in spans}
