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

#: The embedded model (``llm/local/_local.DEFAULT_LOCAL_MODEL``), whose runs the benchmark's
#: ``embedded_run`` pairs come from; named here so scoring does not import the model layer.
EMBEDDED_MODEL = "SmolLM2-135M-Instruct"
#: Below this many test pairs in a language, a source's figures are too thin to stand for
#: a run: the pooled figures are used instead (and the line says so).
MIN_SOURCE_PAIRS = 30


@lru_cache(maxsize=1)
def _load() -> dict[str, Any]:
    try:
        data = json.loads(QUALITY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def source_for_model(model: str | None) -> str:
    """The benchmark source whose pairs are like a run's of ``model``: ``embedded_run``
    for the embedded model, ``capable_run`` for any other."""
    return "embedded_run" if model == EMBEDDED_MODEL else "capable_run"


def _pairs_per_lang(entry: Mapping[str, Any], langs: list[str]) -> dict[str, int]:
    out = {}
    for lang in langs:
        part = entry.get(lang)
        pairs = part.get("pairs") if isinstance(part, dict) else 0
        out[lang] = pairs if isinstance(pairs, int) else 0
    return out


def quality_of(matcher: str, model: str | None = None) -> MatcherQuality | None:
    """The precision and recall of ``matcher`` on the benchmark (``source``, and
    ``all``, ``en`` and ``zh``), or None when it was not measured (the judge's figures
    depend on its model, so they are never taken from the file).

    With the run's ``model``, the figures are those of the benchmark's pairs from the
    source that fits it (``source_for_model``), recorded as ``pair_source``; when that
    source has fewer than ``MIN_SOURCE_PAIRS`` pairs in a language of the benchmark, the
    pooled figures, with ``pair_source`` None. ``fits`` and ``fits_pairs`` record the
    fitting source and its pairs per language either way. Without a model (a comparison
    of two runs): the pooled figures, as before sources were told apart."""
    data = _load()
    pooled = (data.get("matchers") or {}).get(matcher)
    if matcher == "judge" or not isinstance(pooled, dict):
        return None
    if model is None:
        return MatcherQuality.model_validate({"source": data.get("source", ""), **pooled})
    fits = source_for_model(model)
    part = (data.get("by_source") or {}).get(fits)
    part = part if isinstance(part, dict) else {}
    entry = (part.get("matchers") or {}).get(matcher)
    entry = entry if isinstance(entry, dict) else {}
    counts = _pairs_per_lang(entry, [k for k in pooled if k != "all"])
    chosen = {"fits": fits, "fits_pairs": counts}
    if counts and min(counts.values()) >= MIN_SOURCE_PAIRS:
        figures = {"source": part.get("source", ""), "pair_source": fits, **entry}
    else:
        figures = {"source": data.get("source", ""), "pair_source": None, **pooled}
    return MatcherQuality.model_validate({**chosen, **figures})


def quality_text(matcher: str, q: MatcherQuality | None) -> str:
    """One line: the matcher's precision and recall per language (``q``, a summary's
    ``matcher_quality``), or that they are not measured; which benchmark source they
    come from, and that they fell back to the pooled figures, when they did."""
    if not q and matcher == "judge":
        # The judge's figures belong to its model, which the benchmark file does not
        # record; one judge model's are in docs/metrics.md.
        return (
            "the judge's precision and recall depend on its model and are not read from "
            "the benchmark file (docs/metrics.md, `judge`, gives one model's)"
        )
    if not q:
        return f"the {matcher} matcher's precision and recall are not measured on the benchmark"
    parts = []
    for lang in ("en", "zh"):
        s = q.of(lang)
        if not s:
            continue
        parts.append(f"{lang} precision {_rate(s.precision)}, recall {_rate(s.recall)}")
    return f"measured on {q.source}{_source_clause(q)}: " + "; ".join(parts)


def _source_clause(q: MatcherQuality) -> str:
    """Which benchmark source the figures are of (empty for a summary from before
    sources were told apart)."""
    if q.fits is None:
        return ""
    if q.pair_source is not None:
        return ", the source that fits the run's model"
    counts = ", ".join(f"{lang} {n}" for lang, n in (q.fits_pairs or {}).items())
    return (
        f", all sources pooled: the {q.fits} pairs that fit the run's model are fewer than "
        f"{MIN_SOURCE_PAIRS} per language ({counts})"
    )


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
