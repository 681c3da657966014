"""Who a fact is about: ``subject_of(text, speakers)`` (A5, A8).

The subject is carried in the fact's text (A5), so both the cross-subject guard (R2) and
the harness read it back from there with this one function. ``_names.py`` documents how
names are found: the normal form (NFKC, full-width letters), the boundary rule per script,
titles and aliases.

Rule: the subject is the *earliest* subject mention in the text; where mentions overlap
the longest wins ("Li Wei" before "Li", "王伟先生" before "王伟"). Mentions are

- the user: ``The user``/``User``/``the user's`` (any case), ``用户``/``该用户``;
- the AI assistant: ``The assistant``/``Assistant``/``The AI``/``AI assistant`` (any case),
  ``助手``/``AI助手``/``智能助手``;
- a named speaker, in any of its forms (titles, declared aliases);
- the user's own name or an alias of it, which counts as the user but sets ``by_name``
  (the user should be "The user"/"用户", rule A1, so the harness counts it apart).

Possessives are about the owner's circle (A6): "John's sister is a pilot" and
"John 的妹妹是飞行员" have subject John; "The user's brother Theo" has subject the user.

Only when the text mentions none of these does a person who is not a speaker count:
"John is a nurse" in a conversation between Tim and Jo has subject kind ``other`` with
the name John, a subject of its own, distinct from Jo and from the user (A8). Text that
names nobody readable is ``unknown``.

Identity (``Subject.identity``) is what the guard compares: ``user``, ``assistant`` or
``person:<name without title, case-folded>`` for both ``named`` and ``other`` (John as a
speaker today and John mentioned tomorrow are one person). ``unknown`` has no identity
and is the same as nothing, not even another ``unknown`` (R2: no wildcard).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from hy_eval.memory._names import (
    boundary_after,
    boundary_before,
    core_name,
    find_name,
    name_forms,
    normalise_text,
    other_name,
)

SubjectKind = Literal["user", "named", "assistant", "other", "unknown"]
SUBJECT_KINDS: tuple[SubjectKind, ...] = ("user", "named", "assistant", "other", "unknown")

_USER_RE = re.compile(r"(?i)(?:the\s+)?user(?:'s|s')?|该用户|这位用户|用户")
_ASSISTANT_RE = re.compile(
    r"(?i)(?:the\s+)?(?:ai\s+)?assistant(?:'s)?|the\s+ai|AI\s*助手|智能助手|助手|助理"
)


@dataclass(frozen=True)
class Subject:
    kind: SubjectKind
    name: str | None = None
    #: The user was named by their own name instead of "The user"/"用户".
    by_name: bool = False

    @property
    def key(self) -> str:
        """``user``, ``assistant``, ``unknown``, ``named:<name>`` or ``other:<name>``
        (names case-folded). The form stored with a memory and shown in reports."""
        if self.kind in ("named", "other") and self.name:
            return f"{self.kind}:{self.name.casefold()}"
        return "unknown" if self.kind in ("named", "other") else self.kind

    @property
    def identity(self) -> str | None:
        """Who this is across conversations and name forms; None for ``unknown``."""
        if self.kind in ("user", "assistant"):
            return self.kind
        if self.kind in ("named", "other") and self.name:
            return f"person:{core_name(self.name)}"
        return None

    @staticmethod
    def from_key(key: str | None) -> Subject:
        """The subject a stored ``key`` stands for (``unknown`` for None or junk)."""
        kind, _, name = (key or "unknown").partition(":")
        if kind in ("user", "assistant"):
            return Subject(kind)  # type: ignore[arg-type]
        if kind in ("named", "other") and name:
            return Subject(kind, name)  # type: ignore[arg-type]
        return Subject("unknown")


@dataclass(frozen=True)
class Speakers:
    """The people of one conversation: the current user's name, other named humans and
    other forms of their names (``aliases``: speaker name -> forms, e.g. 王伟 -> Wang Wei)."""

    user_name: str | None = None
    named: tuple[str, ...] = field(default_factory=tuple)
    aliases: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)

    @staticmethod
    def of(
        user_name: str | None,
        named: Iterable[str],
        aliases: Mapping[str, Iterable[str]] | None = None,
    ) -> Speakers:
        """Raises ``ValueError`` for an alias of someone who is not a speaker."""
        seen: list[str] = []
        for n in named:
            if n and n != user_name and n not in seen:
                seen.append(n)
        people = {*seen, *([user_name] if user_name else [])}
        pairs: list[tuple[str, tuple[str, ...]]] = []
        for who, forms in (aliases or {}).items():
            if who not in people:
                raise ValueError(
                    f"alias for {who!r}, who is not a speaker "
                    f"({', '.join(sorted(people)) or 'none'})"
                )
            pairs.append((who, tuple(f for f in forms if f.strip())))
        return Speakers(user_name, tuple(seen), tuple(pairs))

    def forms_of(self, name: str) -> tuple[str, ...]:
        """Every form of a speaker's name: the name's own forms, then its aliases'."""
        out = list(name_forms(name))
        for who, forms in self.aliases:
            if who == name:
                for alias in forms:
                    out += [f for f in name_forms(alias) if f not in out]
        return tuple(out)


@lru_cache(maxsize=4096)
def _mention_table(speakers: Speakers) -> tuple[tuple[str, Subject], ...]:
    """(form, subject) for every form of every speaker, longest forms first."""
    table: list[tuple[str, Subject]] = []
    for name in speakers.named:
        table += [(f, Subject("named", name)) for f in speakers.forms_of(name)]
    if speakers.user_name:
        table += [(f, Subject("user", by_name=True)) for f in speakers.forms_of(speakers.user_name)]
    table.sort(key=lambda row: -len(row[0]))
    return tuple(table)


def _word_mention(pattern: re.Pattern[str], text: str) -> tuple[int, int] | None:
    """The first match of ``pattern`` whose Latin ends stand on word boundaries."""
    for m in pattern.finditer(text):
        start, end = m.span()
        if (not m.group(0)[0].isascii() or boundary_before(text, start)) and (
            not m.group(0)[-1].isascii() or boundary_after(text, end)
        ):
            return start, end
    return None


def subject_of(text: str, speakers: Speakers | None = None) -> Subject:
    """The subject of a fact's text; see the module docstring for the rule."""
    speakers = speakers or Speakers()
    t = normalise_text(text)
    # (start, end, Subject) of each mention; the earliest, then the longest, wins.
    mentions: list[tuple[int, int, Subject]] = []
    for pattern, subject in ((_USER_RE, Subject("user")), (_ASSISTANT_RE, Subject("assistant"))):
        span = _word_mention(pattern, t)
        if span:
            mentions.append((*span, subject))
    for form, subject in _mention_table(speakers):
        pos = find_name(t, form)
        if pos is not None:
            mentions.append((pos, pos + len(form), subject))
    # A mention inside a longer one is part of that one ("Li" in "Li Wei").
    mentions = [
        m
        for m in mentions
        if not any(o[0] <= m[0] and m[1] <= o[1] and o[1] - o[0] > m[1] - m[0] for o in mentions)
    ]
    if mentions:
        mentions.sort(key=lambda m: (m[0], m[0] - m[1]))
        return mentions[0][2]
    other = other_name(t)
    return Subject("other", other) if other else Subject("unknown")


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` in any of its forms (titles as ``_names.py`` reads
    them), found as ``subject_of`` finds a speaker: "王伟" in "王伟先生说", "John" in
    "[John]: hi", but not "Anne" in "Anne-Marie"."""
    t = normalise_text(text)
    return any(find_name(t, form) is not None for form in name_forms(name))


def same_subject(a: Subject, b: Subject) -> bool:
    """Whether two facts may be merged: the same known subject on both sides. ``unknown``
    is no wildcard (R2): it is the same as nothing."""
    return a.identity is not None and a.identity == b.identity
