"""The ``fuzzy`` matcher: which predicted fact, if any, states each gold fact, when the
wording differs. docs/metrics.md ("Matchers") explains the rule and the
threshold.

A pair is accepted when the Dice coefficient of the two facts' content features
(``_words.features``: Latin content words, Chinese character bigrams) is at least
``FUZZY_THRESHOLD`` and the two do not differ in negation, or when the predicted fact
holds every keyword of the gold fact (so ``fuzzy`` accepts every pair ``keyword`` does).
Among the accepted pairs, the one-to-one assignment with the most pairs is taken, and
among those the one with the highest total similarity (an exact assignment, not a greedy
one: a greedy pass can leave a gold fact unmatched that another choice would match).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from hy_eval.harness.text import features, fold, is_negated

#: Dice similarity at or above which two facts count as the same fact. At 0.5 a short
#: fact that differs only in its object ("likes coffee" / "likes tea": 0.5; "喜欢喝咖啡" /
#: "喜欢喝茶": 0.57) would pass, which is the very confusion this project measures; at 0.6
#: those fail, while a paraphrase or a partial fact that keeps most content words passes
#: (0.67-1.0). The price: paraphrases that change half the words ("took a solo trip" /
#: "travelled alone": 0.55) are missed. tests/harness/scoring/test_matchers.py holds these pairs;
#: datasets/matcher_pairs measures the choice (docs/metrics.md, "fuzzy").
FUZZY_THRESHOLD = 0.6


@dataclass(frozen=True)
class FuzzyMatch:
    """The predicted fact assigned to one gold fact."""

    #: Index of the gold fact.
    gold: int
    #: Index of the predicted fact, or ``None`` when no accepted pair is left for it.
    predicted: int | None
    #: The Dice similarity of the pair (0.0 when unmatched).
    score: float
    #: Why the pair was accepted: ``similarity``, ``keywords``, or ``None`` when unmatched.
    by: Literal["similarity", "keywords"] | None


def dice(a: set[str], b: set[str]) -> float:
    """``2|A∩B| / (|A| + |B|)``; 0.0 when both are empty."""
    if not a and not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


def similarity(a: str, b: str, ignore: Iterable[str] = ()) -> float:
    """The Dice similarity of two facts' content features; ``ignore`` lists words that
    are no content (the speakers' names: the subject is scored apart)."""
    skip = list(ignore)
    return dice(features(a, skip), features(b, skip))


def _contains_all(text: str, keywords: Sequence[str]) -> bool:
    folded = " ".join(fold(text).split())
    return bool(keywords) and all(" ".join(fold(k).split()) in folded for k in keywords)


def match_fuzzy(
    predicted: Sequence[str],
    gold: Sequence[str],
    keywords: Sequence[Sequence[str]] | None = None,
    *,
    ignore: Iterable[str] = (),
    threshold: float = FUZZY_THRESHOLD,
    preference: Sequence[Sequence[int]] | None = None,
    keyword_hits: Sequence[Sequence[bool]] | None = None,
) -> list[FuzzyMatch]:
    """One :class:`FuzzyMatch` per gold fact, in gold order. ``keywords[g]`` are gold
    fact ``g``'s keywords (a predicted fact holding all of them is accepted whatever its
    similarity); ``ignore`` lists the speakers' names and other subject words.

    ``preference[g][p]`` (a small integer, 0 by default) ranks accepted pairs above
    similarity: the keyword scoring's order (2: right subject and owner, 1: right
    subject, 0: neither) carries over that way. The number of pairs still comes first.
    ``keyword_hits[g][p]``, when given, replaces the plain ``keywords`` test: the
    scoring passes its own keyword rule (any-of groups, number forms, whole words).
    """
    skip = list(ignore)
    pred_features = [features(p, skip) for p in predicted]
    pred_negated = [is_negated(p) for p in predicted]
    scores: list[list[float]] = []
    reasons: list[list[str | None]] = []
    for g, text in enumerate(gold):
        gf = features(text, skip)
        neg = is_negated(text)
        row_scores, row_reasons = [], []
        for p, pf in enumerate(pred_features):
            score = dice(gf, pf)
            reason: str | None = None
            if score >= threshold and pred_negated[p] == neg:
                reason = "similarity"
            elif keyword_hits is not None:
                reason = "keywords" if keyword_hits[g][p] else None
            elif keywords is not None and _contains_all(predicted[p], keywords[g]):
                reason = "keywords"
            row_scores.append(score)
            row_reasons.append(reason)
        scores.append(row_scores)
        reasons.append(row_reasons)
    # Units so that one more pair outweighs any sum of preferences and similarities, and
    # one step of preference any sum of similarities (each at most 1): the assignment
    # takes as many pairs as it can, then the preferred ones, then the most similar.
    n = min(len(gold), len(predicted))
    prefs = [list(r) for r in preference] if preference else [[0] * len(predicted) for _ in gold]
    top = max((x for r in prefs for x in r), default=0)
    pref_unit = n + 1.0
    pair_unit = n * (top * pref_unit + 1.0) + 1.0
    weights = [
        [
            pair_unit + prefs[g][p] * pref_unit + scores[g][p] if reasons[g][p] else 0.0
            for p in range(len(predicted))
        ]
        for g in range(len(gold))
    ]
    out = []
    for g, col in enumerate(max_weight_assignment(weights)):
        if col is None or reasons[g][col] is None:
            out.append(FuzzyMatch(g, None, 0.0, None))
        else:
            by: Literal["similarity", "keywords"] = (
                "similarity" if reasons[g][col] == "similarity" else "keywords"
            )
            out.append(FuzzyMatch(g, col, scores[g][col], by))
    return out


def max_weight_assignment(weights: Sequence[Sequence[float]]) -> list[int | None]:
    """For each row, the column it is assigned to (``None`` for rows left over when there
    are more rows than columns), so that the total weight is the largest possible.

    The Hungarian method with row and column potentials, O(n^3) for n = max(rows, cols):
    the matrix is padded square with zeros and turned into costs (``-weight``); rows are
    added one at a time, each along a shortest augmenting path in reduced costs.
    """
    rows = len(weights)
    cols = max((len(r) for r in weights), default=0)
    n = max(rows, cols)
    if n == 0 or cols == 0:
        return [None] * rows

    def cost(i: int, j: int) -> float:
        if i < rows and j < len(weights[i]):
            return -weights[i][j]
        return 0.0

    # 1-based: row_of[j] is the row holding column j; index 0 is the row being added.
    u = [0.0] * (n + 1)
    v = [0.0] * (n + 1)
    row_of = [0] * (n + 1)
    for i in range(1, n + 1):
        row_of[0] = i
        _augment(i, n, cost, u, v, row_of)
    assigned: list[int | None] = [None] * rows
    for j in range(1, n + 1):
        i = row_of[j] - 1
        if i < rows and j - 1 < cols:
            assigned[i] = j - 1
    return assigned


def _augment(
    start: int,
    n: int,
    cost: Callable[[int, int], float],
    u: list[float],
    v: list[float],
    row_of: list[int],
) -> None:
    """Give row ``start`` a column along a shortest augmenting path (Dijkstra over the
    columns with reduced costs), then update the potentials and flip the path."""
    dist = [math.inf] * (n + 1)
    prev = [0] * (n + 1)
    done = [False] * (n + 1)
    j0 = 0
    while True:
        done[j0] = True
        i0 = row_of[j0]
        delta, j1 = math.inf, 0
        for j in range(1, n + 1):
            if done[j]:
                continue
            reduced = cost(i0 - 1, j - 1) - u[i0] - v[j]
            if reduced < dist[j]:
                dist[j], prev[j] = reduced, j0
            if dist[j] < delta:
                delta, j1 = dist[j], j
        for j in range(n + 1):
            if done[j]:
                u[row_of[j]] += delta
                v[j] -= delta
            else:
                dist[j] -= delta
        j0 = j1
        if row_of[j0] == 0:
            break
    while j0:
        j1 = prev[j0]
        row_of[j0] = row_of[j1]
        j0 = j1
