"""The sentences of a prediction for the ``strict`` matcher (``_strict.decide``): a model
may glue several facts into one text, and the content agreement is read on the best
sentence that holds the keywords.

A sentence ends after 。！？!?；; or a line break, and at a full stop followed by a space,
except a full stop inside a speaker's name ("J. R. Okoro") or after a title followed by
a capital ("Dr. Ada Brooks", "Mrs. Okafor"): cut there, the fact's keywords fell on two
sentences and a perfect answer no longer matched its own gold fact.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.])\s+")

#: Titles written with a full stop: "Dr. Ada Brooks" goes on after it.
_TITLE_STOP = re.compile(
    r"(?<![A-Za-z])(?:dr|mr|mrs|ms|mx|prof|capt|st|rev|fr|sgt|lt|col|gen)\.$", re.I
)


def sentences(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """The sentences of a prediction (a model may glue several facts into one). A full
    stop inside a speaker's name ("J. R. Okoro") or after a title followed by a capital
    ("Dr. Ada Brooks", "Mrs. Okafor") ends no sentence."""
    inside = _stops_in_names(text, names)
    parts: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        stop = m.start() - 1
        if m.end() > m.start() and (stop in inside or _after_title(text, stop, m.end())):
            continue
        parts.append(text[start : m.start()])
        start = m.end()
    parts.append(text[start:])
    kept = [p.strip() for p in parts]
    return [p for p in kept if p] or [text]


def _stops_in_names(text: str, names: tuple[str, ...]) -> set[int]:
    """The offsets of the full stops of ``text`` inside an occurrence of a name."""
    out: set[int] = set()
    for name in names:
        if "." not in name.rstrip("."):
            continue
        at = text.find(name)
        while at >= 0:
            out.update(at + i for i, ch in enumerate(name[:-1]) if ch == ".")
            at = text.find(name, at + 1)
    return out


def _after_title(text: str, stop: int, after: int) -> bool:
    """Whether the full stop at ``stop`` ends a title and a capital follows at
    ``after`` (past the spaces)."""
    return bool(
        after < len(text)
        and text[after].isupper()
        and _TITLE_STOP.search(text, max(0, stop - 4), stop + 1)
    )
