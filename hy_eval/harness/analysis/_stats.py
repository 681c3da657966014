"""Aggregation with confidence intervals, and the small exact tools the paired tests use.

A ratio metric's interval is the hull of a percentile bootstrap over cases (the unit that
was sampled, so facts of one case stay together) and Wilson's score interval with the
effective number of units as n (``_effective_n``: the cases, at 0 and 1). The bootstrap
alone collapses to a zero-width interval at 0, at 1
and on a handful of cases (measured: 45% coverage at n=10, p=0.95); Wilson keeps its
coverage there, and where the bootstrap is the wider of the two (cases that vary a lot)
it stays. docs/metrics.md gives the measured coverage.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

BOOTSTRAP_SAMPLES = 2000
SEED = 20261129
#: Below this many cases an interval is marked ``small_n``: it is mostly Wilson's, wide,
#: and says little (reports print "few cases" beside it).
MIN_CASES_FOR_CI = 10


def z_quantile(q: float) -> float:
    """The standard normal quantile (``z_quantile(0.975)`` = 1.96)."""
    return NormalDist().inv_cdf(q)


def wilson_interval(p_hat: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``p_hat`` seen on ``n`` units. Unlike
    the Wald or percentile intervals it has width at 0 and 1: 0 of 8 gives [0, 0.32]."""
    if n <= 0:
        return 0.0, 1.0
    z = z_quantile(1 - (1 - level) / 2)
    z2n = z * z / n
    centre = (p_hat + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(max(p_hat * (1 - p_hat), 0.0) / n + z2n / (4 * n)) / (1 + z2n)
    return max(0.0, centre - half), min(1.0, centre + half)


def binom_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exact to about 1e-12 relative at any n.

    Summed in log space from the term at ``k`` downwards (each term is the previous one
    times i / (n - i + 1)), stopping once the terms no longer change the sum; 2**n is
    never formed, so nothing overflows (computing ``2.0**n`` overflowed at n = 1,024)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if 2 * k >= n:  # the upper side: P(X <= k) = 1 - P(X <= n - k - 1) by symmetry
        return 1.0 - binom_half_cdf(n - k - 1, n)
    log_top = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    term, total = 1.0, 1.0
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)
        total += term
        if term < 1e-17 * total:
            break
    return min(1.0, math.exp(log_top + math.log(total)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order: rejecting where the
    adjusted value is below alpha keeps the family-wise error at alpha under any
    dependence between the tests."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def format_p(p: float, samples: int | None = None) -> str:
    """A p-value for people: a resampling p-value of 0 only says "below 1 in B"."""
    if samples and p < 1.0 / samples:
        return f"p < 1/{samples} ({1.0 / samples:.2g})"
    if p < 0.0001:
        return f"p = {p:.1e}"
    return f"p = {p:.4f}"


def _weight_chunks(n: int, samples: int, seed: int, dtype: Any = float) -> Iterator[np.ndarray]:
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
        yield drawn.reshape(b, n).astype(dtype)
        done += b


_blas: Any = None


def _one_blas_thread() -> Any:
    """OpenBLAS on one thread for the resampling products. They are small (2,000 x cases
    by cases x 14) and its threads cost more than they give, far more when the other core
    is busy (a model server, another run). The sums are exact integers in
    float64 either way, so the CIs do not change."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


def _effective_n(value: float, var: float, cases: int, units: float) -> float:
    """The n Wilson's interval is given: as many independent units as the bootstrap
    variance implies (p(1 - p) / var), between the number of cases (facts of a case all
    alike) and the number of counted units (all independent). Where the bootstrap has no
    variance (a value of 0 or 1) nothing tells them apart, and the cases are taken: the
    cautious end."""
    if var <= 0 or not 0 < value < 1:
        return float(cases)
    return float(min(max(value * (1 - value) / var, cases), max(units, cases)))


def ratios_with_ci(
    nums: np.ndarray,
    dens: np.ndarray,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """sum(num)/sum(den) per column with a CI over cases (rows): the hull of the
    percentile bootstrap interval and Wilson's interval (see ``_effective_n``).

    Cases are resampled whole; a case with ``den == 0`` for a metric carries nothing for
    it, and resamples whose denominator is 0 are left out. ``n`` is the number of cases
    that count; with none, the value is ``None``. ``small_n`` marks fewer than
    ``MIN_CASES_FOR_CI`` cases.
    """
    nums = np.asarray(nums, dtype=float)
    dens = np.asarray(dens, dtype=float)
    if nums.ndim == 1:
        nums, dens = nums[:, None], dens[:, None]
    empty = {"value": None, "ci": [None, None], "n": 0, "small_n": True, "num": 0, "den": 0}
    if len(dens) == 0:
        return [dict(empty) for _ in range(nums.shape[1])]
    width = nums.shape[1]
    sums = _resampled_sums(np.hstack([nums, dens]), samples, seed)
    num_sums, den_sums = sums[:, :width], sums[:, width:]
    alpha = (1 - level) / 2
    counted = (dens > 0).sum(axis=0)
    # Each metric's resampled ratios as a contiguous row, so the quantiles and variances of
    # all metrics come from one call each, computed exactly as on a single row.
    with np.errstate(divide="ignore", invalid="ignore"):
        boots = np.ascontiguousarray((num_sums / den_sums).T)
    whole = np.asarray((den_sums > 0).all(axis=0), dtype=bool)
    bounds = np.quantile(boots[whole], [alpha, 1 - alpha], axis=1) if whole.any() else None
    spread = np.var(boots[whole], axis=1) if whole.any() else None
    row_of = np.cumsum(whole) - 1
    out: list[dict[str, Any]] = []
    for j in range(width):
        if counted[j] == 0:
            out.append(dict(empty))
            continue
        if whole[j]:
            assert bounds is not None and spread is not None
            lo, hi, var = bounds[0, row_of[j]], bounds[1, row_of[j]], spread[row_of[j]]
        else:  # some resamples drew no case with a denominator: left out
            boot = boots[j][den_sums[:, j] > 0]
            lo, hi = np.quantile(boot, [alpha, 1 - alpha])
            var = np.var(boot)
        num, den = float(nums[:, j].sum()), float(dens[:, j].sum())
        value = num / den
        w_lo, w_hi = wilson_interval(
            min(max(value, 0.0), 1.0), _effective_n(value, float(var), int(counted[j]), den), level
        )
        out.append(
            {
                "value": value,
                "ci": [float(min(lo, w_lo)), float(max(hi, w_hi))],
                "n": int(counted[j]),
                "small_n": bool(counted[j] < MIN_CASES_FOR_CI),
                "num": num,
                "den": den,
            }
        )
    return out


def _resampled_sums(counts: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """``samples`` x columns: each column of ``counts`` summed over each bootstrap resample
    of its rows, as float64. In float32 when that is exact (whole counts whose every
    resampled sum stays below 2**24, where float32 holds every integer): the product then
    takes half the memory traffic and about half the time, with the same sums."""
    bound = len(counts) * float(np.abs(counts).max(initial=0.0))
    whole = bool(np.array_equal(counts, np.round(counts)))
    dtype = np.float32 if whole and bound < 2**24 else np.float64
    typed = counts.astype(dtype)
    parts = []
    with _one_blas_thread():
        for weights in _weight_chunks(len(counts), samples, seed, dtype):
            parts.append(weights @ typed)
            del weights  # not alive while the next chunk is drawn
    return np.concatenate(parts).astype(np.float64)


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


#: The normal quantiles of a two-sided 5% test and of 80% power.
Z_975 = 1.959963984540054
Z_80 = 0.8416212335729143


def mcnemar_exact(fixed: int, broken: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test on the discordant pairs."""
    if fixed == broken:
        return 1.0
    return min(1.0, 2.0 * binom_half_cdf(min(fixed, broken), fixed + broken))


def mcnemar_one_sided(fixed: int, broken: int) -> float:
    """Exact one-sided McNemar p-value of "B breaks more cases than it fixes":
    P(X >= broken) for X ~ Binomial(fixed + broken, 1/2), which is P(X <= fixed)."""
    return binom_half_cdf(fixed, fixed + broken) if fixed + broken else 1.0


def minimum_detectable_effect(n: int, p_a: float, p_b: float, discordant: int) -> float | None:
    """The smallest pass-rate difference a paired test on ``n`` cases detects with 80%
    power at alpha 0.05: (z_.975 + z_.8) * sqrt(p_d / n), with p_d the share of discordant
    cases; when none was observed, the share expected if outcomes were independent,
    p_a(1 - p_b) + p_b(1 - p_a)."""
    if n == 0:
        return None
    p_d = discordant / n if discordant else p_a * (1 - p_b) + p_b * (1 - p_a)
    if p_d == 0:
        p_d = 1.0 / n  # nothing varies yet: the floor one flipped case would give
    return float((Z_975 + Z_80) * math.sqrt(p_d / n))
