"""Matchers: which predicted fact, if any, states each gold fact of a case.
docs/metrics.md ("Matchers") describes each one.

``strict``, the default, decides each pair by ``_strict.decide`` (keywords as words,
content agreement, agreeing cues) and assigns by agreement before subject. ``keyword`` is
the scoring's original rule (every keyword item of the gold fact anywhere in the
prediction), assigned exactly: the most pairs, then the best subject and owner; ``fuzzy`` is
``_fuzzy.match_fuzzy``; ``judge`` assigns from an LLM judge's verdicts on each (gold,
predicted) pair (``_judge.py`` asks for them). Subject and owner are scored on the
matched pair afterwards, whatever the matcher.

A matcher gets the case's gold facts, the predicted texts and ``rank(g, p)``: 0 when
prediction ``p`` has gold fact ``g``'s subject and owner, 1 the subject only, 2 neither.
Every matcher prefers the better rank, so a prediction goes to the gold fact it is
right for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hy_eval.harness.datasets import GoldFact, contains_all, first_forms
from hy_eval.harness.runlog import JudgeInfo, MatcherPair, RunManifest
from hy_eval.harness.scoring._fuzzy import match_fuzzy, max_weight_assignment
from hy_eval.harness.scoring._pairing import Extra, decider, shared, unions
from hy_eval.harness.scoring._quality import quality_of, quality_text
from hy_eval.harness.scoring._strict import AGREEMENT_THRESHOLD, Decision, decide
from hy_eval.memory import Speakers
from hy_eval.memory._extract import cut_text

MATCHERS = ("strict", "keyword", "fuzzy", "judge")
DEFAULT_MATCHER = "strict"

#: The longest predicted fact text the scorer reads: an external system's memory over it
#: is cut, ending in ``…``, and counted (``bound_texts``), as the pipeline cuts its facts
#: at the schema's ``MAX_FACT_CHARS`` (120). Far above any one fact, so a memory of a
#: few sentences is scored whole; a 1 MB memory costs what 2,000 characters cost
#: (``benchmarks/bench_strict_long.py``).
SCORED_TEXT_LIMIT = 2000

#: Seconds the ``strict`` matcher may spend on one case. Past it the case errs with the
#: reason (``ScoringDeadline``) and the run goes on (the per-case rule,
#: docs/reliability.md). Checked between pairs: with the bound above one pair costs at
#: most a fraction of a second.
SCORING_DEADLINE_S = 60.0


class ScoringDeadline(Exception):
    """Matching one case took longer than ``SCORING_DEADLINE_S``."""


def bound_texts(texts: Sequence[str]) -> tuple[list[str], int]:
    """``texts`` with each one over ``SCORED_TEXT_LIMIT`` characters cut (``cut_text``,
    the pipeline's cut), and how many were cut."""
    out = [cut_text(t, SCORED_TEXT_LIMIT) for t in texts]
    return out, sum(a != b for a, b in zip(out, texts, strict=True))


#: ``rank(g, p)``: 0 right subject and owner, 1 right subject, 2 neither.
Rank = Callable[[int, int], int]


@dataclass(frozen=True)
class Pick:
    """The predicted fact a matcher gave one gold fact, and what the matcher adds to the
    fact's check detail (nothing for ``keyword``, so its records stay as they were)."""

    predicted: int | None
    detail: dict[str, Any] = field(default_factory=dict)
    #: Further predictions the gold fact is stated across (``strict`` only: a fact
    #: split in two), each scored for subject and owner with ``predicted``.
    also: tuple[int, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The judge's answer on one (gold, predicted) pair. ``problem`` says why an answer
    could not be used (then ``same`` is False: counted as no match, and reported)."""

    same: bool
    reason: str = ""
    problem: str | None = None


class Matcher(Protocol):
    name: str

    def assign(self, golds: Sequence[GoldFact], texts: Sequence[str], rank: Rank) -> list[Pick]: ...


def gold_text(gold: GoldFact) -> str:
    """The wording a fuzzy or judge matcher compares: the gold fact's ``text``, or its
    keywords (each group's first form) joined when it has none."""
    return gold.text if gold.text else " ".join(first_forms(gold.keywords))


def speaker_words(speakers: Speakers) -> list[str]:
    """Every form of every speaker's name: no content for the fuzzy features (the
    subject is scored apart)."""
    names = [*speakers.named, *([speakers.user_name] if speakers.user_name else [])]
    return [form for name in names for form in speakers.forms_of(name)]


def exact_assignment(hits: Sequence[Sequence[bool]], rank: Rank, count: int) -> list[int | None]:
    """For each gold fact, the prediction (of ``count``) it is paired with, or None: pairs
    only where ``hits[g][p]``, one-to-one, the most pairs and then the best ranks."""
    pair_unit = 3.0 * min(len(hits), count) + 1.0  # one more pair outweighs any sum of ranks
    weights = [
        [pair_unit + (2 - rank(g, p)) if row[p] else 0.0 for p in range(count)]
        for g, row in enumerate(hits)
    ]
    return [
        p if p is not None and hits[g][p] else None
        for g, p in enumerate(max_weight_assignment(weights))
    ]


class KeywordMatcher:
    """A predicted fact matches a gold fact when it holds all the gold fact's keywords.
    The assignment is one-to-one and exact: the most gold facts matched, then the best
    ranks, so a prediction goes to the gold fact it is right for, whatever the order of
    the gold facts or the predictions ("John sells his motorbike for the deposit" is left
    to the gold fact that needs "motorbike" when another prediction can serve the gold
    fact that needs only "deposit")."""

    name = "keyword"

    def assign(self, golds: Sequence[GoldFact], texts: Sequence[str], rank: Rank) -> list[Pick]:
        hits = [[contains_all(t, g.keywords) for t in texts] for g in golds]
        best: list[int | None] = []
        for g, row in enumerate(hits):
            ranked = [(rank(g, p), p) for p, hit in enumerate(row) if hit]
            best.append(min(ranked)[1] if ranked else None)
        if all(sum(column) <= 1 for column in zip(*hits, strict=True)):
            # No prediction is wanted by two gold facts: each takes its best-ranked hit.
            return [Pick(p) for p in best]
        return [Pick(p) for p in exact_assignment(hits, rank, len(texts))]


class StrictMatcher:
    """The default matcher: ``_strict.decide`` on every pair, then one-to-one with the
    most pairs, then the highest total agreement, and only then the best subject and
    owner (docs/metrics.md, "`strict`"). Then many-to-many (``_pairing``): a gold fact
    left over may share a prediction another gold fact took, on a clause of its own, or
    be stated across two predictions."""

    name = "strict"

    def __init__(self, speakers: Speakers, threshold: float = AGREEMENT_THRESHOLD) -> None:
        self.names = tuple(sorted(set(speaker_words(speakers))))
        self.threshold = threshold

    def assign(self, golds: Sequence[GoldFact], texts: Sequence[str], rank: Rank) -> list[Pick]:
        stop = time.monotonic() + SCORING_DEADLINE_S
        decisions = self._decisions(golds, texts, stop)
        count = min(len(golds), len(texts))
        # One more pair outweighs any sum of agreements (each at most 1); the rank bonus,
        # all of it together below 1e-4, only breaks ties of agreement.
        pair_unit = float(count + 1)
        rank_unit = 1e-4 / (2.0 * (count + 1))
        weights = [
            [
                pair_unit + d.agreement + (2 - rank(g, p)) * rank_unit if d.accepted else 0.0
                for p, d in enumerate(row)
            ]
            for g, row in enumerate(decisions)
        ]
        taken = [
            p if p is not None and decisions[g][p].accepted else None
            for g, p in enumerate(max_weight_assignment(weights))
        ]
        # The pairing after one-to-one shares the case's deadline.
        judge = decider(self.names, self.threshold, lambda: _within(stop))
        whole = [[d.accepted for d in row] for row in decisions]
        extra = shared(golds, texts, taken, whole, rank, self.names, judge)
        missing = [g for g, p in enumerate(taken) if p is None and g not in extra]
        extra.update(unions(golds, texts, missing, rank, self.names, lambda: _within(stop)))
        picks = []
        for g, p in enumerate(taken):
            if p is not None:
                picks.append(Pick(p, {"agreement": round(decisions[g][p].agreement, 3)}))
            elif g in extra:
                picks.append(_extra_pick(extra[g]))
            else:
                picks.append(Pick(None))
        return picks

    def _decisions(
        self, golds: Sequence[GoldFact], texts: Sequence[str], stop: float
    ) -> list[list[Decision]]:
        """``decide`` on every (gold, predicted) pair, by ``stop`` (``time.monotonic``;
        ``SCORING_DEADLINE_S`` after the case's matching began)."""
        deadline = SCORING_DEADLINE_S
        out: list[list[Decision]] = []
        for g in golds:
            row = []
            for t in texts:
                row.append(decide(g.text or "", g.keywords, t, self.names, self.threshold))
                if time.monotonic() > stop:
                    done = len(out) * len(texts) + len(row)
                    raise ScoringDeadline(
                        f"matching took over {deadline:g} s "
                        f"({done} of {len(golds) * len(texts)} pairs decided)"
                    )
            out.append(row)
        return out


def _within(stop: float) -> None:
    """Raise ``ScoringDeadline`` when ``stop`` (``time.monotonic``) has passed: the check
    of the pairing after one-to-one (``_pairing``)."""
    if time.monotonic() > stop:
        raise ScoringDeadline(
            f"matching took over {SCORING_DEADLINE_S:g} s (in the pairing after one-to-one)"
        )


def _extra_pick(extra: Extra) -> Pick:
    """The pick of a gold fact paired after one-to-one (``_pairing``): on a part of a
    prediction another gold fact also has (``part``), or on two predictions (``also``,
    the second one's index; the pick's ``predicted`` is the first)."""
    detail: dict[str, Any] = {"agreement": round(extra.agreement, 3)}
    if extra.part is not None:
        detail["part"] = extra.part
    if extra.also is not None:
        detail["union"] = True
    also = () if extra.also is None else (extra.also,)
    return Pick(extra.predicted, detail, also)


class FuzzyMatcher:
    """``match_fuzzy`` with the keyword rule's hits (a pair ``keyword`` accepts is
    accepted), the speakers' names ignored, and the rank as preference."""

    name = "fuzzy"

    def __init__(self, speakers: Speakers) -> None:
        self.ignore = speaker_words(speakers)

    def assign(self, golds: Sequence[GoldFact], texts: Sequence[str], rank: Rank) -> list[Pick]:
        hits = [[contains_all(t, g.keywords) for t in texts] for g in golds]
        prefs = [[2 - rank(g, p) for p in range(len(texts))] for g in range(len(golds))]
        found = match_fuzzy(
            list(texts),
            [gold_text(g) for g in golds],
            ignore=self.ignore,
            keyword_hits=hits,
            preference=prefs,
        )
        return [
            Pick(m.predicted, {"similarity": round(m.score, 3), "by": m.by})
            if m.predicted is not None
            else Pick(None)
            for m in found
        ]


class VerdictMatcher:
    """The judge's verdicts, ``verdicts[(g, p)]``, assigned one-to-one: the most pairs
    judged the same, then the best ranks (an exact assignment)."""

    name = "judge"

    def __init__(self, verdicts: Mapping[tuple[int, int], Verdict]) -> None:
        self.verdicts = verdicts

    def assign(self, golds: Sequence[GoldFact], texts: Sequence[str], rank: Rank) -> list[Pick]:
        same = [[self._same(g, p) for p in range(len(texts))] for g in range(len(golds))]
        picks = []
        for g, p in enumerate(exact_assignment(same, rank, len(texts))):
            problems = self._problems(g, len(texts))
            if p is None:
                picks.append(Pick(None, problems))
            else:
                picks.append(Pick(p, {"reason": self.verdicts[(g, p)].reason, **problems}))
        return picks

    def _same(self, g: int, p: int) -> bool:
        verdict = self.verdicts.get((g, p))
        return verdict is not None and verdict.same

    def _problems(self, g: int, count: int) -> dict[str, Any]:
        """The unusable answers among a gold fact's pairs (reported on its check)."""
        bad = {
            str(p): v.problem
            for p in range(count)
            if (v := self.verdicts.get((g, p))) is not None and v.problem
        }
        return {"judge_unusable": bad} if bad else {}


def static_matcher(name: str, speakers: Speakers) -> Matcher:
    """The matcher ``name`` when it needs no model (``strict``, ``keyword``, ``fuzzy``)."""
    if name == "strict":
        return StrictMatcher(speakers)
    if name == "keyword":
        return KeywordMatcher()
    if name == "fuzzy":
        return FuzzyMatcher(speakers)
    raise ValueError(f"matcher {name!r} needs its verdicts (see _judge.py)")


def matcher_info(manifest: RunManifest, unusable: int) -> dict[str, Any]:
    """The summary's fields on the matcher, by name: ``matcher`` (its name),
    ``matcher_quality`` (its precision and recall on the benchmark's test part, when
    measured: the figures of the benchmark source that fits the run's model, or the
    pooled ones when that source is too small; ``_quality.quality_of``) and, for
    ``judge``, ``judge``: the judge's model and prompt variant and the unusable answers.
    A run from before matchers were selectable used ``keyword``."""
    params = manifest.params
    name = manifest.matcher
    out: dict[str, Any] = {"matcher": name}
    quality = quality_of(name, manifest.model)
    if quality is not None:
        out["matcher_quality"] = quality
    if name == "judge":
        provider = params.judge_provider or manifest.provider
        same = provider == manifest.provider
        out["judge"] = JudgeInfo(
            provider=provider,
            model=params.judge_model or (manifest.model if same else None),
            variant=params.judge_variant or "default",
            unusable=unusable,
        )
    return out


def matcher_text(matchers: MatcherPair | None) -> str:
    """The line of a comparison saying which matcher made each run's fact metrics."""
    a, b = (matchers.a, matchers.b) if matchers else ("keyword", "keyword")
    if a == b:
        return f"facts matched by the {a} matcher in both runs ({quality_text(a, quality_of(a))})"
    return (
        f"MIXED MATCHERS: A's facts matched by {a}, B's by {b}: differences in the fact "
        "metrics are partly the matcher's"
    )
