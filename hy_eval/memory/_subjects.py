"""Who a fact is about: ``subject_of(text, speakers)``.

The subject is carried in the fact's text (A5), so both the cross-subject guard (R2) and
the harness read it back from there with this one function.

Rule: the subject is the *earliest* subject mention in the text, after Unicode NFKC
normalisation and whitespace collapsing. Mentions are

- the user: ``The user``/``User``/``the user's`` (any case), ``用户``/``该用户``;
- the AI assistant: ``The assistant``/``Assistant``/``The AI``/``AI assistant`` (any case),
  ``助手``/``AI助手``/``智能助手``;
- a named speaker: the name as a whole word (Latin names) or as a substring (CJK names).
  Names match case-insensitively at the start of the text and with their own case
  elsewhere, so "May" and "Will" are not found in "it may rain" or "they will go".
  The longest name wins where names overlap ("Li Wei" before "Li");
- the user's own name, which counts as the user but sets ``by_name`` (the user should be
  "The user"/"用户", rule A1, so the harness counts it as non-canonical).

Possessives are about the owner's circle (A6): "John's sister is a pilot" and
"John 的妹妹是飞行员" have subject John; "The user's brother Theo" has subject the user.
A name that is not a speaker (Theo above) is not a subject. No mention: ``unknown``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from hy_eval.conversation._render import is_cjk

SubjectKind = Literal["user", "named", "assistant", "unknown"]

_USER_RE = re.compile(r"(?i)\b(?:the\s+)?user(?:'s|’s|s')?\b|该用户|这位用户|用户")
_ASSISTANT_RE = re.compile(
    r"(?i)\b(?:the\s+)?(?:ai\s+)?assistant(?:'s|’s)?\b|\bthe\s+ai\b|AI\s*助手|智能助手|助手|助理"
)


@dataclass(frozen=True)
class Subject:
    kind: SubjectKind
    name: str | None = None
    #: The user was named by their own name instead of "The user"/"用户".
    by_name: bool = False

    @property
    def key(self) -> str:
        """``user``, ``assistant``, ``unknown`` or ``named:<name>`` (casefolded)."""
        return f"named:{self.name.casefold()}" if self.kind == "named" and self.name else self.kind


@dataclass(frozen=True)
class Speakers:
    """The people of one conversation: the current user's name and other named humans."""

    user_name: str | None = None
    named: tuple[str, ...] = field(default_factory=tuple)

    @staticmethod
    def of(user_name: str | None, named: Iterable[str]) -> Speakers:
        seen: list[str] = []
        for n in named:
            if n and n != user_name and n not in seen:
                seen.append(n)
        return Speakers(user_name, tuple(seen))


def normalise_text(text: str) -> str:
    """NFKC and collapsed whitespace: the form every comparison here works on."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


@lru_cache(maxsize=4096)
def _name_patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str] | None] | None:
    """A name's mention pattern and, for non-CJK names, its sentence-start pattern (any
    case). Compiled once per name: suites have thousands of names, past ``re``'s cache."""
    name = normalise_text(name)
    if not name:
        return None
    if any(is_cjk(ch) for ch in name):
        return re.compile(re.escape(name)), None
    return (
        re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])"),
        re.compile(r"^" + re.escape(name) + r"(?![\w])", re.IGNORECASE),
    )


def _name_positions(text: str, name: str) -> list[int]:
    patterns = _name_patterns(name)
    if patterns is None:
        return []
    pattern, start = patterns
    found = [m.start() for m in pattern.finditer(text)]
    if start is not None and start.match(text) and 0 not in found:
        found.insert(0, 0)
    return found


def subject_of(text: str, speakers: Speakers | None = None) -> Subject:
    """The subject of a fact's text; see the module docstring for the rule."""
    speakers = speakers or Speakers()
    t = normalise_text(text)
    # (position, -length, Subject): earliest first, then the longest mention.
    candidates: list[tuple[int, int, Subject]] = []
    m = _USER_RE.search(t)
    if m:
        candidates.append((m.start(), -len(m.group(0)), Subject("user")))
    m = _ASSISTANT_RE.search(t)
    if m:
        candidates.append((m.start(), -len(m.group(0)), Subject("assistant")))
    for name in speakers.named:
        for pos in _name_positions(t, name)[:1]:
            candidates.append((pos, -len(name), Subject("named", name)))
    if speakers.user_name:
        for pos in _name_positions(t, speakers.user_name)[:1]:
            candidates.append((pos, -len(speakers.user_name), Subject("user", by_name=True)))
    if not candidates:
        return Subject("unknown")
    candidates.sort(key=lambda c: (c[0], c[1]))
    return candidates[0][2]


def same_subject(a: Subject, b: Subject) -> bool:
    """Whether two facts may be merged: equal subjects, or either one unknown."""
    return a.kind == "unknown" or b.kind == "unknown" or a.key == b.key
