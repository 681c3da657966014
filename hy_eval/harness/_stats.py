"""Aggregation with confidence intervals: ratio metrics over cases, 95% bootstrap CIs that
resample cases (the unit that was sampled), and breakdowns by language, rule and tag."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

BOOTSTRAP_SAMPLES = 2000
SEED = 20261129


def _weight_chunks(n: int, samples: int, seed: int) -> Iterator[np.ndarray]:
    """Resamples as rows of draw counts (how often each of the ``n`` cases is drawn), in
    chunks that keep memory bounded for large suites. One matrix serves every metric of a
    group: ``weights @ counts`` gives all resampled sums at once."""
    rng = np.random.default_rng(seed)
    chunk = max(1, min(samples, 2_000_000 // max(n, 1)))
    done = 0
    while done < samples:
        b = min(chunk, samples - done)
        idx = rng.integers(0, n, size=(b, n))
        idx += (np.arange(b) * n)[:, None]  # in place: one chunk-sized array less
        drawn = np.bincount(idx.ravel(), minlength=b * n)
        del idx
        yield drawn.reshape(b, n).astype(float)
        done += b


_blas: Any = None


def _one_blas_thread() -> Any:
    """OpenBLAS on one thread for the resampling products. They are small (2,000 x cases
    by cases x 14) and its threads cost more than they give, far more when the other core
    is busy (drawing the plots, or the model server; see the report phase that
    ``benchmarks/bench_harness.py throughput`` prints). The sums are exact integers in
    float64 either way, so the CIs do not change."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


def ratios_with_ci(
    nums: np.ndarray,
    dens: np.ndarray,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """sum(num)/sum(den) per column with a percentile bootstrap CI over cases (rows).

    Cases are resampled whole; a case with ``den == 0`` for a metric carries nothing for
    it, and resamples whose denominator is 0 are left out. ``n`` is the number of cases
    that count; with none, the value is ``None``.
    """
    nums = np.asarray(nums, dtype=float)
    dens = np.asarray(dens, dtype=float)
    if nums.ndim == 1:
        nums, dens = nums[:, None], dens[:, None]
    empty = {"value": None, "ci": [None, None], "n": 0, "num": 0, "den": 0}
    if len(dens) == 0:
        return [dict(empty) for _ in range(nums.shape[1])]
    num_parts, den_parts = [], []
    with _one_blas_thread():
        for weights in _weight_chunks(len(dens), samples, seed):
            num_parts.append(weights @ nums)
            den_parts.append(weights @ dens)
            del weights  # not alive while the next chunk is drawn
    num_sums = np.concatenate(num_parts)
    den_sums = np.concatenate(den_parts)
    alpha = (1 - level) / 2
    out: list[dict[str, Any]] = []
    for j in range(nums.shape[1]):
        counted = int((dens[:, j] > 0).sum())
        if counted == 0:
            out.append(dict(empty))
            continue
        ok = den_sums[:, j] > 0
        boot = num_sums[ok, j] / den_sums[ok, j]
        lo, hi = np.quantile(boot, [alpha, 1 - alpha])
        out.append(
            {
                "value": float(nums[:, j].sum() / dens[:, j].sum()),
                "ci": [float(lo), float(hi)],
                "n": counted,
                "num": float(nums[:, j].sum()),
                "den": float(dens[:, j].sum()),
            }
        )
    return out


def ratio_with_ci(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    **kwargs: Any,
) -> dict[str, Any]:
    """One ratio metric; see ``ratios_with_ci``."""
    return ratios_with_ci(
        np.asarray(num, dtype=float)[:, None] if len(num) else np.zeros((0, 1)),
        np.asarray(den, dtype=float)[:, None] if len(den) else np.zeros((0, 1)),
        **kwargs,
    )[0]
