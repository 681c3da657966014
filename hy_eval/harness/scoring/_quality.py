"""How far a matcher can be trusted: its precision and recall on the test part of the
committed matcher benchmark (datasets/matcher_pairs/quality.json, written by
``hy-eval matchers evaluate datasets/matcher_pairs/bench.jsonl --split test --quality``).

Every run's summary, report and comparison carry these figures next to ``fact_recall``
and ``attribution_accuracy`` (docs/metrics.md, "How far the matcher can be trusted").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from hy_eval.harness.datasets import DATASETS_DIR
from hy_eval.harness.runlog import (
    BreakdownGroup,
    CorrectedRecall,
    MatcherQuality,
    MetricEntry,
    RateEntry,
    RunSummary,
)

QUALITY_FILE = DATASETS_DIR / "matcher_pairs" / "quality.json"


@lru_cache(maxsize=1)
def _load() -> dict[str, Any]:
    try:
        data = json.loads(QUALITY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def quality_of(matcher: str) -> MatcherQuality | None:
    """The precision and recall of ``matcher`` on the benchmark (``source``, and
    ``all``, ``en`` and ``zh``), or None when it was not measured (the judge's figures
    depend on its model, so they are never taken from the file)."""
    data = _load()
    entry = (data.get("matchers") or {}).get(matcher)
    if matcher == "judge" or not isinstance(entry, dict):
        return None
    return MatcherQuality.model_validate({"source": data.get("source", ""), **entry})


def quality_text(matcher: str, q: MatcherQuality | None) -> str:
    """One line: the matcher's precision and recall per language (``q``, a summary's
    ``matcher_quality``), or that they are not measured."""
    if not q:
        return f"the {matcher} matcher's precision and recall are not measured on the benchmark"
    parts = []
    for lang in ("en", "zh"):
        s = q.of(lang)
        if not s:
            continue
        parts.append(f"{lang} precision {_rate(s.precision)}, recall {_rate(s.recall)}")
    return f"measured on {q.source}: " + "; ".join(parts)


def _rate(rate: RateEntry) -> str:
    if rate.value is None:
        return "n/a"
    lo, hi = rate.ci
    return f"{rate.value:.2f} [{lo:.2f}, {hi:.2f}] ({rate.num}/{rate.den})"


#: Draws of the parametric bootstrap behind the corrected recall's interval.
CORRECTION_DRAWS = 4000


def corrected_recall(
    langs: Mapping[str, BreakdownGroup], q: MatcherQuality | None
) -> CorrectedRecall | None:
    """``fact_recall`` corrected for the matcher's own errors, per language: of the facts
    it matched, a share ``precision`` is really stated, and it finds a share ``recall`` of
    the facts really stated, so the facts really stated are about matched x precision /
    recall. ``langs`` is the run's breakdown by language; ``q`` its matcher's quality.

    The 95% interval is a parametric bootstrap over all three sources of error: the run's
    own (a normal with the standard error of its per-language cluster-bootstrap CI),
    the matcher's precision and recall on the benchmark (Beta(k + 1/2, n - k + 1/2), the
    Jeffreys posterior). It assumes the benchmark's pairs are like the run's, which is
    the weak part: a different model writes different sentences. ``None`` without the
    matcher's quality or without facts."""
    parts: list[tuple[MetricEntry, RateEntry, RateEntry]] = []
    for lang, group in sorted(langs.items()):
        obs, s = group.metric("fact_recall"), q.of(lang) if q else None
        if not obs or obs.value is None or not s or not obs.den:
            continue
        p, r = s.precision, s.recall
        if not p.den or not r.num:
            return None
        parts.append((obs, p, r))
    if not parts:
        return None
    rng = np.random.default_rng(0)
    total = sum(obs.den for obs, _, _ in parts)
    point = 0.0
    draws = np.zeros(CORRECTION_DRAWS)
    for obs, p, r in parts:
        assert obs.value is not None and p.value is not None and r.value is not None
        weight = obs.den / total
        point += weight * min(1.0, obs.value * p.value / r.value)
        lo, hi = obs.ci
        spread = max(hi - lo, 0.0) if lo is not None and hi is not None else 0.0
        seen = rng.normal(obs.value, spread / (2 * 1.96), CORRECTION_DRAWS)
        prec = rng.beta(p.num + 0.5, p.den - p.num + 0.5, CORRECTION_DRAWS)
        rec = rng.beta(r.num + 0.5, r.den - r.num + 0.5, CORRECTION_DRAWS)
        draws += weight * np.clip(np.clip(seen, 0.0, 1.0) * prec / rec, 0.0, 1.0)
    ci = np.percentile(draws, [2.5, 97.5])
    return CorrectedRecall(
        value=point,
        ci=(float(ci[0]), float(ci[1])),
        method="fact_recall x precision / recall of the matcher, per language; "
        "95% parametric bootstrap over the run's and the matcher's errors",
    )


def corrected_text(summary: RunSummary) -> str:
    """The corrected recall as a clause for the sentence on the matcher, or ``""``."""
    c = summary.fact_recall_corrected
    if not c:
        return ""
    lo, hi = c.ci
    return (
        f"; corrected for its errors, fact_recall would be about {c.value:.3f} [{lo:.3f}, {hi:.3f}]"
    )
