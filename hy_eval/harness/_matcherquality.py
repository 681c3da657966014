"""How far a matcher can be trusted: its precision and recall on the test part of the
committed matcher benchmark (datasets/matcher_pairs/quality.json, written by
``hy-eval matchers evaluate datasets/matcher_pairs/bench.jsonl --split test --quality``).

Every run's summary, report and comparison carry these figures next to ``fact_recall``
and ``attribution_accuracy`` (docs/metrics.md, "How far the matcher can be trusted").
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from hy_eval.harness._dataset import DATASETS_DIR

QUALITY_FILE = DATASETS_DIR / "matcher_pairs" / "quality.json"


@lru_cache(maxsize=1)
def _load() -> dict[str, Any]:
    try:
        data = json.loads(QUALITY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def quality_of(matcher: str) -> dict[str, Any] | None:
    """``{"source": ..., "all"|"en"|"zh": {"precision": {value, ci, num, den}, "recall":
    ...}}`` for ``matcher``, or None when it was not measured (the judge's figures depend
    on its model, so they are never taken from the file)."""
    data = _load()
    entry = (data.get("matchers") or {}).get(matcher)
    if matcher == "judge" or not isinstance(entry, dict):
        return None
    return {"source": data.get("source", ""), **entry}


def quality_text(matcher: str, q: dict[str, Any] | None) -> str:
    """One line: the matcher's precision and recall per language (``q``, a summary's
    ``matcher_quality``), or that they are not measured."""
    if not q:
        return f"the {matcher} matcher's precision and recall are not measured on the benchmark"
    parts = []
    for lang in ("en", "zh"):
        s = q.get(lang)
        if not s:
            continue
        p, r = s["precision"], s["recall"]
        parts.append(f"{lang} precision {_rate(p)}, recall {_rate(r)}")
    return f"measured on {q['source']}: " + "; ".join(parts)


def _rate(rate: dict[str, Any]) -> str:
    if rate.get("value") is None:
        return "n/a"
    lo, hi = rate["ci"]
    return f"{rate['value']:.2f} [{lo:.2f}, {hi:.2f}] ({rate['num']}/{rate['den']})"
