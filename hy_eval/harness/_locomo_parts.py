"""A LoCoMo session cut into parts of at most ``MAX_FACTS`` observations (issue 19).

The extraction answer holds at most ``MAX_FACTS`` facts (8; ``hy_eval.memory._extract``),
while a LoCoMo session has up to 16 observations: a whole session as one case would cap
recall below 1.0 for any model (on LoCoMo, 4,078 of 5,082 gold facts could be found).
So a session is cut between turns into consecutive parts, each with the observations
whose evidence turns lie in it, never cutting between the turns one observation cites.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hy_eval.harness._locomo import Session, Turn


@dataclass(frozen=True)
class Part:
    """Consecutive turns of one session and the observations they are the evidence of."""

    session: int
    #: 1-based position in the session, and how many parts the session has.
    index: int
    count: int
    turns: tuple[Turn, ...]
    #: ``(speaker, observation text)``, speaker A's first, each in the data's order.
    facts: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        """``s3`` for a whole session, ``s3p2`` for its second part (in case ids)."""
        return f"s{self.session}" if self.count == 1 else f"s{self.session}p{self.index}"


@dataclass
class Split:
    parts: list[Part]
    #: Observations given twice for the same speaker, kept once (a gold fact twice would
    #: need two predicted facts).
    repeats: int = 0
    #: Observations citing no turn of the session: placed with the session's last turn.
    unplaced: int = 0
    #: Parts left with more than ``max_facts`` observations (cited turns that cannot be
    #: cut apart).
    over: int = 0


def split_session(session: Session, speakers: tuple[str, str], max_facts: int) -> Split:
    """The session's parts. Each part ends at the farthest turn that keeps it within an
    even share of the session's observations (``ceil(n / ceil(n / max_facts))``, so 12
    observations give two parts of 6, not 8 and 4) and cuts no observation's evidence
    apart. A session without observations is one part without facts."""
    turns = session.turns
    position = {t.dia_id: i for i, t in enumerate(turns) if t.dia_id}
    split = Split([])
    facts: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    for speaker in speakers:
        for ob in session.observations.get(speaker, ()):
            if (speaker, ob.text) in facts:
                split.repeats += 1
                continue
            cited = [position[e] for e in ob.evidence if e in position]
            if not cited:
                split.unplaced += 1
                cited = [len(turns) - 1]
            facts.append((speaker, ob.text))
            spans.append((min(cited), max(cited)))
    n = len(turns)
    # A cut before turn c is allowed unless some observation cites turns on both sides.
    cuts = [c for c in range(1, n + 1) if not any(lo < c <= hi for lo, hi in spans)]
    share = math.ceil(len(facts) / math.ceil(len(facts) / max_facts)) if facts else max_facts
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < n:

        def inside(end: int, start: int = start) -> int:
            return sum(1 for lo, hi in spans if lo >= start and hi < end)

        ends = [c for c in cuts if c > start]
        fitting = [c for c in ends if inside(c) <= share] or [
            c for c in ends if inside(c) <= max_facts
        ]
        end = fitting[-1] if fitting else ends[0]
        split.over += inside(end) > max_facts
        bounds.append((start, end))
        start = end
    for i, (start, end) in enumerate(bounds, 1):
        mine = tuple(f for f, (lo, _) in zip(facts, spans, strict=True) if start <= lo < end)
        split.parts.append(Part(session.number, i, len(bounds), turns[start:end], mine))
    return split
