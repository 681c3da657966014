"""Aggregation with confidence intervals: ratio metrics over cases, 95% bootstrap CIs that
resample cases (the unit that was sampled), and breakdowns by language, rule and tag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

BOOTSTRAP_SAMPLES = 2000
SEED = 20261129


def ratio_with_ci(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """sum(num)/sum(den) with a percentile bootstrap CI over cases.

    Cases with ``den == 0`` carry nothing for this metric and are left out; ``n`` is the
    number of cases that count, ``den`` the number of checks behind the value. With no
    such case the value is ``None``.
    """
    n_arr = np.asarray(num, dtype=float)
    d_arr = np.asarray(den, dtype=float)
    keep = d_arr > 0
    n_arr, d_arr = n_arr[keep], d_arr[keep]
    if len(d_arr) == 0:
        return {"value": None, "ci": [None, None], "n": 0, "num": 0, "den": 0}
    value = float(n_arr.sum() / d_arr.sum())
    rng = np.random.default_rng(seed)
    k = len(d_arr)
    # Chunked so memory stays bounded for large suites.
    stats: list[np.ndarray] = []
    chunk = max(1, 2_000_000 // k)
    done = 0
    while done < samples:
        b = min(chunk, samples - done)
        idx = rng.integers(0, k, size=(b, k))
        dsum = d_arr[idx].sum(axis=1)
        stats.append(n_arr[idx].sum(axis=1) / dsum)
        done += b
    boot = np.concatenate(stats)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return {
        "value": value,
        "ci": [float(lo), float(hi)],
        "n": int(k),
        "num": float(n_arr.sum()),
        "den": float(d_arr.sum()),
    }
