"""The interval of a paired difference B - A of two ratio metrics (rule E4).

A score interval, not a bootstrap: Newcombe's hybrid score interval for a difference of
paired proportions (method 10 of Newcombe 1998, "Improved confidence intervals for the
difference between binomial proportions based on paired data", Statistics in Medicine
17:2635-2650) with its correlation term, extended to ratios with per-case denominators.

For each run's ratio R = sum(num) / sum(den) over the cases that count:

- with one unit a case (``case_pass``) the variance is the binomial one and n is the
  number of cases, as in Newcombe's method;
- with more units a case (facts), the residuals e_i = num_i - R den_i give the
  delta-method variance of R, sum(e_i^2) / sum(den)^2, and the **effective number of
  units** n_eff = R(1 - R) / var, the n a binomial proportion of that variance would have
  (a design effect; capped at the counted units, and the number of cases where R is 0 or
  1 or nothing varies: the cautious end). That variance is estimated from the cases, so
  its Wilson interval takes Student's t quantile on cases - 1 degrees of freedom instead
  of the normal one (``_t_quantile``): on a handful of cases the variance is itself
  uncertain, and the normal quantile undercovered attribution_accuracy there;
- Wilson's score interval [l, u] of R on n units;
- phi, the correlation of A's and B's residuals over the cases (0 when either side does
  not vary, as Newcombe sets it), shrunk toward that 0 by (cases - 2) / cases: the
  correlation of a handful of cases is far from 0 by chance (of 2 cases it is always +1
  or -1), and a positive phi narrows the interval. With one unit a case phi is the phi
  coefficient of the 2 x 2 table of A's and B's verdicts, so the whole is Newcombe's
  method 10 but for that shrinkage (without it, the interval of attribution_accuracy on
  2 cases, as the systems table has, came out far too narrow).

Then, with D = R_B - R_A:

    lower = D - sqrt((R_B - l_B)^2 - 2 phi (R_B - l_B)(u_A - R_A) + (u_A - R_A)^2)
    upper = D + sqrt((u_B - R_B)^2 - 2 phi (u_B - R_B)(R_A - l_A) + (R_A - l_A)^2)

Unlike the percentile bootstrap it has width where a run is at 0 or 1 and on a handful of
cases (the bootstrap gave [0, 0] in 62% of 10-case runs of 1.0 against 0.95,
``benchmarks/bench_paired_ci.py``), and it needs no resampling. docs/metrics.md ("The
paired interval") gives its measured coverage.

Every function works on arrays whose first axis is the cases and whose other axes are
anything (metrics, simulated repetitions): one call does them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from hy_eval.harness.analysis._stats import z_quantile


def _wilson(value: np.ndarray, n: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of proportions ``value`` on ``n`` units (elementwise);
    ``_stats.wilson_interval`` for arrays."""
    n = np.maximum(n, 1e-12)
    z2n = z * z / n
    centre = (value + z2n / 2) / (1 + z2n)
    half = z * np.sqrt(np.maximum(value * (1 - value), 0.0) / n + z2n / (4 * n)) / (1 + z2n)
    return np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)


@dataclass
class PairedParts:
    """What the interval needs of two runs, per column, at any level: each run's ratio
    and effective units, and the correlation of their residuals."""

    ratio_a: np.ndarray
    units_a: np.ndarray
    #: Degrees of freedom of the estimated variance (inf where it is binomial's).
    df_a: np.ndarray
    ratio_b: np.ndarray
    units_b: np.ndarray
    df_b: np.ndarray
    phi: np.ndarray
    #: Columns with no case that counts in both runs (their bounds are NaN).
    empty: np.ndarray


def _margin(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, ...]:
    """One run's ratio, its effective number of units, the degrees of freedom of the
    variance behind them (inf: binomial, not estimated), and its residuals."""
    cases = (den > 0).sum(axis=0)
    units = den.sum(axis=0)
    total = np.where(units > 0, units, 1.0)
    ratio = num.sum(axis=0) / total
    resid = num - ratio * den  # 0 for a case that does not count (num = den = 0)
    var = (resid**2).sum(axis=0) / total**2
    estimated = (ratio > 0) & (ratio < 1) & (var > 0) & (den > 1).any(axis=0)
    n_eff = np.where(estimated, ratio * (1 - ratio) / np.where(estimated, var, 1.0), cases)
    df = np.where(estimated, cases - 1.0, np.inf)
    return ratio, np.clip(n_eff, 1.0, np.maximum(units, 1.0)), df, resid


def _t_quantile(z: np.ndarray | float, df: np.ndarray) -> np.ndarray:
    """Student's t quantile on ``df`` degrees of freedom at the normal quantile ``z``'s
    probability, by the Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5): within
    0.01 of the exact value from 3 degrees of freedom on at 97.5% (4.17 for 4.30 at 2);
    ``z`` itself where ``df`` is inf. It grows with z, as the bisection below needs."""
    v = np.where(np.isinf(df), 1.0, np.maximum(df, 1.0))
    z = np.asarray(z, dtype=float)
    z3, z5, z7 = z**3, z**5, z**7
    t = (
        z
        + (z3 + z) / (4 * v)
        + (5 * z5 + 16 * z3 + 3 * z) / (96 * v**2)
        + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v**3)
    )
    return np.where(np.isinf(df), z, t)


def paired_parts(
    a_num: np.ndarray, a_den: np.ndarray, b_num: np.ndarray, b_den: np.ndarray
) -> PairedParts:
    """The ``PairedParts`` of (cases x ...) counts: each case's numerator and denominator
    in A and in B, zero in both runs where the case does not count for the metric
    (``paired_sample`` zeroes them so)."""
    a_num, a_den, b_num, b_den = (np.asarray(x, dtype=float) for x in (a_num, a_den, b_num, b_den))
    ra, na, dfa, ea = _margin(a_num, a_den)
    rb, nb, dfb, eb = _margin(b_num, b_den)
    scale = np.sqrt((ea**2).sum(axis=0) * (eb**2).sum(axis=0))
    phi = np.where(scale > 0, (ea * eb).sum(axis=0) / np.where(scale > 0, scale, 1.0), 0.0)
    cases = ((a_den > 0) & (b_den > 0)).sum(axis=0)
    phi = phi * np.clip((cases - 2) / np.maximum(cases, 1), 0.0, 1.0)
    empty = cases == 0
    return PairedParts(ra, na, dfa, rb, nb, dfb, np.clip(phi, -1.0, 1.0), empty)


def bounds_at(parts: PairedParts, z: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's lower and upper bounds of R_B - R_A with Wilson's intervals at ``z``
    (1.96: the two-sided 95% interval, or the one-sided 97.5% bound at either end)."""
    la, ua = _wilson(parts.ratio_a, parts.units_a, _t_quantile(z, parts.df_a))
    lb, ub = _wilson(parts.ratio_b, parts.units_b, _t_quantile(z, parts.df_b))
    ra, rb, phi = parts.ratio_a, parts.ratio_b, parts.phi
    down_b, up_a = rb - lb, ua - ra
    up_b, down_a = ub - rb, ra - la
    diff = rb - ra
    lower = diff - np.sqrt(np.maximum(down_b**2 - 2 * phi * down_b * up_a + up_a**2, 0.0))
    upper = diff + np.sqrt(np.maximum(up_b**2 - 2 * phi * up_b * down_a + down_a**2, 0.0))
    lower = np.where(parts.empty, np.nan, np.maximum(lower, -1.0))
    upper = np.where(parts.empty, np.nan, np.minimum(upper, 1.0))
    return lower, upper


def paired_score_interval(
    a_num: np.ndarray,
    a_den: np.ndarray,
    b_num: np.ndarray,
    b_den: np.ndarray,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided ``level`` interval of R_B - R_A (module docstring) of (cases x ...)
    counts (see ``paired_parts``), per column; NaN where no case counts."""
    z = z_quantile(1 - (1 - level) / 2)
    return bounds_at(paired_parts(a_num, a_den, b_num, b_den), z)


def worse_beyond_p(parts: PairedParts, worse_sign: float, limit: float) -> np.ndarray:
    """One-sided p of "worse by more than ``limit``" (worse = ``worse_sign`` x (B - A)),
    by inverting the interval: the smallest alpha at which the one-sided (1 - alpha)
    lower bound of the worsening still exceeds ``limit``, so p < alpha exactly when the
    bound at level 1 - alpha does. Found by bisection on z (the bound falls as z grows,
    from the observed worsening at z = 0); 1.0 where the observed worsening is not beyond
    the limit."""
    observed = worse_sign * (parts.ratio_b - parts.ratio_a)
    lo_z, hi_z = np.zeros_like(observed), np.full_like(observed, 40.0)
    for _ in range(60):  # 40 / 2**60: far below any p that matters
        mid = (lo_z + hi_z) / 2
        lower, upper = bounds_at(parts, mid)
        # The lower bound of the worsening: the end of B - A nearest "no worse".
        bound = worse_sign * (upper if worse_sign < 0 else lower)
        beyond = bound > limit
        lo_z, hi_z = np.where(beyond, mid, lo_z), np.where(beyond, hi_z, mid)
    p = 1.0 - np.vectorize(_normal_cdf)(lo_z)
    return np.where((observed > limit) & ~parts.empty, p, 1.0)


def _normal_cdf(z: float) -> float:
    return NormalDist().cdf(float(z))
