"""A LoCoMo session cut into parts of at most ``MAX_FACTS`` observations.

The extraction answer holds at most ``MAX_FACTS`` facts (8; ``hy_eval.memory._extract``),
while a LoCoMo session has up to 16 observations (160 of its 272 sessions have more than
8): a whole session as one case would cap recall below 1.0 for any model (docs/datasets.md,
"LoCoMo import", measures how far).
So a session is cut between turns into consecutive parts, each with the observations
whose evidence turns lie in it, never cutting between the turns one observation cites.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from hy_eval.harness.datasets._locomo import Session, Turn


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
    apart. A session without observations is one part without facts.

    Linear in the turns and observations (but for a logarithm per part): the allowed
    cuts come from one pass over the observations' spans, and a part's end from prefix
    counts, not from counting the observations again for every candidate end."""
    turns = session.turns
    split = Split([])
    facts, spans = _facts(session, speakers, split)
    n = len(turns)
    if n == 0:
        return split
    # A cut before turn c is allowed unless some observation cites turns on both sides
    # (lo < c <= hi): mark where each span begins and ends, then sum as c moves.
    opened = [0] * (n + 2)
    for lo, hi in spans:
        if lo < hi:
            opened[lo + 1] += 1
            opened[hi + 1] -= 1
    cuts: list[int] = []
    covering = 0
    for c in range(1, n + 1):
        covering += opened[c]
        if covering == 0:
            cuts.append(c)
    # ending_before[c]: observations whose last cited turn is before turn c. As no span
    # crosses a cut, the observations of a part from cut s to cut e are the ones ending
    # in [s, e): ending_before[e] - ending_before[s].
    ending = [0] * (n + 1)
    for _, hi in spans:
        ending[hi + 1] += 1
    ending_before = list(itertools.accumulate(ending))
    # The cuts' counts in the cuts' order, increasing: searched with bisect.
    counts_at_cuts = [ending_before[c] for c in cuts]
    share = math.ceil(len(facts) / math.ceil(len(facts) / max_facts)) if facts else max_facts
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < n:
        first = bisect.bisect_right(cuts, start)  # the first cut after start
        end = cuts[first]
        for limit in (share, max_facts):
            last = bisect.bisect_right(counts_at_cuts, ending_before[start] + limit) - 1
            if last >= first:
                end = cuts[last]
                break
        split.over += ending_before[end] - ending_before[start] > max_facts
        bounds.append((start, end))
        start = end
    starts = [b[0] for b in bounds]
    placed: list[list[tuple[str, str]]] = [[] for _ in bounds]
    for fact, (lo, _) in zip(facts, spans, strict=True):
        placed[bisect.bisect_right(starts, lo) - 1].append(fact)
    for i, ((start, end), mine) in enumerate(zip(bounds, placed, strict=True), 1):
        split.parts.append(Part(session.number, i, len(bounds), turns[start:end], tuple(mine)))
    return split


def _facts(
    session: Session, speakers: tuple[str, str], split: Split
) -> tuple[list[tuple[str, str]], list[tuple[int, int]]]:
    """``(speaker, text)`` of each observation, speaker A's first, once each, and the
    span of turns it cites (an observation citing none: the last turn); counts repeats
    and unplaced observations in ``split``."""
    turns = session.turns
    position = {t.dia_id: i for i, t in enumerate(turns) if t.dia_id}
    facts: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    seen: set[tuple[str, str]] = set()
    for speaker in speakers:
        for ob in session.observations.get(speaker, ()):
            if (speaker, ob.text) in seen:
                split.repeats += 1
                continue
            seen.add((speaker, ob.text))
            cited = [position[e] for e in ob.evidence if e in position]
            if not cited:
                split.unplaced += 1
                cited = [len(turns) - 1]
            facts.append((speaker, ob.text))
            spans.append((min(cited), max(cited)))
    return facts, spans
