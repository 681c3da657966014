"""Paired comparison of two runs on the same case ids (rule E4).

For each metric: the difference B - A with a paired score CI (``_paired_ci``: Newcombe's
interval for paired proportions, extended to ratios with per-case denominators; each case
is compared with itself), a paired permutation p-value (A and B swapped at random within
cases), Holm's correction across the metrics, the minimum detectable effect at 80% power,
and the cases that got worse on it. For ``case_pass``: McNemar's exact test on the
discordant cases. The CI is widened to 0 where the metric's own test does not reject "no
change" at its level, so the two never contradict. docs/metrics.md states the procedures
and their measured error rates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hy_eval.harness.analysis._outcomes import (
    CompareError,
    RunOutcomes,
    prompts_changed,
)
from hy_eval.harness.analysis._outputs_diff import structural_diff
from hy_eval.harness.analysis._paired_ci import (
    paired_parts,
    paired_score_interval,
    worse_beyond_p,
)
from hy_eval.harness.analysis._stats import (
    BOOTSTRAP_SAMPLES,
    SEED,
    Z_80,
    _one_blas_thread,
    holm,
    mcnemar_exact,
    mcnemar_one_sided,
    z_quantile,
)
from hy_eval.harness.runlog import (
    Comparison,
    PerturbFile,
)
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS


@dataclass
class PairedSample:
    """Per-case counts of every metric for A and B on the shared cases, as (cases x
    metrics) arrays. A case counts for a metric only when both runs have something to
    check there: elsewhere its counts are zeroed, so it moves neither side."""

    ids: list[str]
    a_num: np.ndarray
    a_den: np.ndarray
    b_num: np.ndarray
    b_den: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        return (self.a_den > 0) & (self.b_den > 0)


def paired_sample(
    a_num: np.ndarray, a_den: np.ndarray, b_num: np.ndarray, b_den: np.ndarray, ids: list[str]
) -> PairedSample:
    arrays = [
        np.asarray(x, dtype=float).reshape(len(ids), -1) for x in (a_num, a_den, b_num, b_den)
    ]
    keep = (arrays[1] > 0) & (arrays[3] > 0)
    return PairedSample(ids, *(np.where(keep, x, 0.0) for x in arrays))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den where den > 0, NaN elsewhere (an arrangement with nothing to check)."""
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def permutation_differences(ps: PairedSample, samples: int, seed: int) -> np.ndarray:
    """(samples x metrics) B - A with A and B swapped at random within each case: the
    distribution of the difference when both runs come from one process (the null of
    "no change"), which is valid at any n, also with few discordant cases where the
    bootstrap was too sure of itself."""
    rng = np.random.default_rng(seed + 1)
    n = len(ps.ids)
    d_num, d_den = ps.a_num - ps.b_num, ps.a_den - ps.b_den
    a_num, a_den = ps.a_num.sum(0), ps.a_den.sum(0)
    b_num, b_den = ps.b_num.sum(0), ps.b_den.sum(0)
    chunk = max(1, min(samples, 2_000_000 // max(n, 1)))
    parts, done = [], 0
    with _one_blas_thread():
        while done < samples:
            swap = rng.integers(0, 2, size=(min(chunk, samples - done), n)).astype(float)
            moved_num, moved_den = swap @ d_num, swap @ d_den
            parts.append(
                _ratio(b_num + moved_num, b_den + moved_den)
                - _ratio(a_num - moved_num, a_den - moved_den)
            )
            done += len(swap)
    return np.concatenate(parts)


def _tail_p(null: np.ndarray, observed: float) -> float:
    """One-sided Monte Carlo p-value P(null >= observed), counting the observed
    arrangement itself, so it is never 0 and is valid at any number of samples."""
    null = null[~np.isnan(null)]
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))


def paired_difference(
    a_num: np.ndarray,
    a_den: np.ndarray,
    b_num: np.ndarray,
    b_den: np.ndarray,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
    level: float = 0.95,
) -> dict[str, Any]:
    """B - A for one ratio metric: the paired score CI (``_paired_ci``; widened to 0 where
    the permutation test does not reject at ``1 - level``) and a two-sided paired
    permutation p-value; see :func:`compare`."""
    ps = paired_sample(a_num, a_den, b_num, b_den, [str(i) for i in range(len(a_num))])
    return _metric_entries(ps, ["m"], samples=samples, seed=seed, level=level)["m"]


def paired_se(ps: PairedSample) -> np.ndarray:
    """Per metric, the standard error of B - A by the delta method over cases:
    each case's residual (num - ratio * den) / mean den, A's subtracted from B's. When
    the two runs agree on every case (nothing to estimate the pairing from) the SE of
    independent runs is used, and with no variation at all one case's worth, 1/n."""
    n = ps.kept.sum(0)
    out = np.zeros(ps.a_num.shape[1])
    for j in range(len(out)):
        k = ps.kept[:, j]
        if n[j] < 2:
            out[j] = np.nan
            continue
        resid = []
        for num, den in ((ps.a_num[k, j], ps.a_den[k, j]), (ps.b_num[k, j], ps.b_den[k, j])):
            resid.append((num - num.sum() / den.sum() * den) / den.mean())
        se = np.std(resid[1] - resid[0], ddof=1) / math.sqrt(n[j])
        if se == 0:
            se = math.sqrt((np.var(resid[0], ddof=1) + np.var(resid[1], ddof=1)) / n[j])
        out[j] = se if se > 0 else 1.0 / n[j]
    return out


def _worse_test(
    worse: float, null: np.ndarray, ps: PairedSample, j: int, sign: float, limit: float
) -> dict[str, Any]:
    """One-sided test of "worse by more than ``limit``" (``worse`` = ``sign`` x (B - A),
    positive when worse). With ``limit == 0`` the null is "no change" and the permutation
    distribution tests it exactly; with ``limit > 0`` it is "worse by at most ``limit``",
    tested by inverting the paired score interval (``worse_beyond_p``): p < alpha exactly
    when the one-sided (1 - alpha) bound of the worsening exceeds the limit."""
    if limit == 0:
        return {"limit": 0.0, "p": _tail_p(null, worse), "method": "permutation", "samples": None}
    col = slice(j, j + 1)
    parts = paired_parts(ps.a_num[:, col], ps.a_den[:, col], ps.b_num[:, col], ps.b_den[:, col])
    p = float(worse_beyond_p(parts, sign, limit)[0])
    return {"limit": limit, "p": p, "method": "score", "samples": None}


def _metric_entries(
    ps: PairedSample,
    names: Sequence[str],
    *,
    samples: int,
    seed: int,
    level: float,
    alpha: float = 0.05,
    limits: Mapping[str, float] | None = None,
    exact: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per metric: A, B, B - A with its paired score CI at ``level``, the two-sided
    permutation p-value, the paired SE and the minimum detectable effect (80% power,
    two-sided ``alpha``), the cases that got worse, and for metrics in ``limits`` the
    one-sided test of a drop (or rise) beyond the limit. ``exact`` (metric -> two-sided
    p, one-sided p of "worse") replaces the permutation test where an exact one exists
    (McNemar's for ``case_pass``). The CI is widened to include 0 where the metric's
    two-sided p is at least ``1 - level``: the test at that level does not reject "no
    change", so neither does the interval (docs/metrics.md)."""
    perm = permutation_differences(ps, samples, seed)
    se = paired_se(ps)
    z_mde = z_quantile(1 - alpha / 2) + Z_80
    bounds = np.array(paired_score_interval(ps.a_num, ps.a_den, ps.b_num, ps.b_den, level))
    exact = exact or {}
    out: dict[str, dict[str, Any]] = {}
    for j, m in enumerate(names):
        higher = m in ACCURACY_METRICS
        kept = np.flatnonzero(ps.kept[:, j])
        if len(kept) == 0:
            out[m] = {
                "a": None,
                "b": None,
                "diff": None,
                "ci": [None, None],
                "n": 0,
                "p_value": None,
                "higher_is_better": higher,
            }
            continue
        a = float(ps.a_num[:, j].sum() / ps.a_den[:, j].sum())
        b = float(ps.b_num[:, j].sum() / ps.b_den[:, j].sum())
        lo, hi = bounds[:, j]
        sign = -1.0 if higher else 1.0  # worse = sign * (B - A)
        p_two = 2 * min(_tail_p(perm[:, j], b - a), _tail_p(-perm[:, j], a - b))
        p_two = exact[m][0] if m in exact else min(1.0, p_two)
        if p_two >= 1 - level - 1e-12:  # the test keeps "no change": so does the CI
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        per_case = ps.b_num[kept, j] / ps.b_den[kept, j] - ps.a_num[kept, j] / ps.a_den[kept, j]
        entry: dict[str, Any] = {
            "a": a,
            "b": b,
            "diff": b - a,
            "ci": [float(lo), float(hi)],
            "ci_level": level,
            "n": len(kept),
            "p_value": p_two,
            "se": None if np.isnan(se[j]) else float(se[j]),
            "mde": None if np.isnan(se[j]) else float(z_mde * se[j]),
            "higher_is_better": higher,
            "worse_cases": [ps.ids[i] for i in kept[sign * per_case > 1e-12]],
            "better_cases": int(np.sum(sign * per_case < -1e-12)),
        }
        if limits is not None and m in limits:
            entry["worse_test"] = _worse_test(
                sign * (b - a), sign * perm[:, j], ps, j, sign, limits[m]
            )
            if m in exact and limits[m] == 0:
                entry["worse_test"].update(p=exact[m][1], method="McNemar")
        out[m] = entry
    return out


def _counts_array(run: RunOutcomes, ids: list[str]) -> np.ndarray:
    """(cases x metrics x 2): each case's numerator and denominator of every metric."""
    empty = (0.0, 0.0)
    return np.array([[run.counts[i].get(m, empty) for m in METRICS] for i in ids], dtype=float)


def _shared_ids(
    a: RunOutcomes, b: RunOutcomes, *, common_only: bool, mixed_matchers: bool
) -> list[str]:
    """The case ids both runs scored, after refusing runs that are not comparable: other
    matchers (unless ``mixed_matchers``), other datasets (unless ``common_only``), or no
    case in common (``CompareError``)."""
    if a.matcher != b.matcher and not mixed_matchers:
        raise CompareError(
            f"the runs matched facts with different matchers (A {a.matcher}, B "
            f"{b.matcher}), so fact_recall, attribution_accuracy and case_pass are not "
            "measured alike; compare anyway with --mixed-matchers (a gate needs a baseline "
            "run with the same --matcher)"
        )
    if a.dataset_hash != b.dataset_hash and not common_only:
        raise CompareError(
            f"the runs used different datasets ({a.dataset_hash[:12]} vs {b.dataset_hash[:12]}); "
            "compare only the shared case ids with --common-only"
        )
    ids = sorted(set(a.counts) & set(b.counts))
    if not ids:
        raise CompareError("the runs have no case id in common")
    return ids


def _flips(
    a: RunOutcomes, b: RunOutcomes, fixed: list[str], broken: list[str]
) -> list[dict[str, Any]]:
    """The cases whose verdict B changed, each with what differs between the two outputs."""
    broken_set = set(broken)
    return [
        {
            "id": i,
            "change": "broken" if i in broken_set else "fixed",
            "diff": structural_diff(a.outputs.get(i, {}), b.outputs.get(i, {})),
        }
        for i in fixed + broken
    ]


def compare(
    a: RunOutcomes,
    b: RunOutcomes,
    *,
    common_only: bool = False,
    mixed_matchers: bool = False,
    alpha: float = 0.05,
    level: float | None = None,
    limits: Mapping[str, float] | None = None,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
) -> Comparison:
    """The paired comparison of B against A on their shared case ids.

    Each metric's p-value is a two-sided paired permutation test (exact McNemar for
    ``case_pass``); ``p_adjusted`` is Holm's over every metric with a value, and
    ``significant`` (the "*") means ``p_adjusted < alpha``, so the chance that any metric
    is starred when nothing changed stays at ``alpha``. ``significant_unadjusted`` is the
    per-metric verdict. CIs are at ``level`` (default ``1 - alpha``). ``limits`` (metric
    -> allowed worsening) adds the one-sided tests the gates use (``_gate.py``).

    Runs whose facts were matched by different matchers are refused unless
    ``mixed_matchers``: a difference would mix the pipeline's change with the
    measurement's (docs/metrics.md, "Matchers").
    """
    matchers = {"a": a.matcher, "b": b.matcher}
    ids = _shared_ids(a, b, common_only=common_only, mixed_matchers=mixed_matchers)
    ca, cb = _counts_array(a, ids), _counts_array(b, ids)
    ps = paired_sample(ca[..., 0], ca[..., 1], cb[..., 0], cb[..., 1], ids)
    level = 1 - alpha if level is None else level
    fixed = [i for i in ids if not a.passed[i] and b.passed[i]]
    broken = [i for i in ids if a.passed[i] and not b.passed[i]]
    exact = {
        "case_pass": (
            mcnemar_exact(len(fixed), len(broken)),
            mcnemar_one_sided(len(fixed), len(broken)),
        )
    }
    metrics = _metric_entries(
        ps,
        METRICS,
        samples=samples,
        seed=seed,
        level=level,
        alpha=alpha,
        limits=limits,
        exact=exact,
    )
    cp = metrics["case_pass"]
    tested = _adjust(metrics, alpha)
    own_a, own_b = own_values(a), own_values(b)
    for m, e in metrics.items():
        e["own"] = {"a": own_a[m], "b": own_b[m]}
    flips = _flips(a, b, fixed, broken)
    return Comparison.model_validate(
        {
            "a": a.label,
            "b": b.label,
            "cases": len(ids),
            "only_in_a": len(set(a.counts) - set(ids)),
            "only_in_b": len(set(b.counts) - set(ids)),
            "alpha": alpha,
            "ci_level": level,
            "adjustment": "holm",
            "matcher": matchers,
            "metrics_tested": len(tested),
            "metrics": metrics,
            "mcnemar": {
                "fixed": len(fixed),
                "broken": len(broken),
                "p_value": exact["case_pass"][0],
            },
            "mde_case_pass": cp.get("mde"),
            "flipped_count": len(flips),
            "flipped": flips,
            **_consistency_of(a, b, ids, fixed + broken),
            "prompts_changed": prompts_changed(a, b),
        }
    )


def _adjust(metrics: dict[str, dict[str, Any]], alpha: float) -> list[str]:
    """Holm's adjustment of every metric with a p-value, and the stars it gives; returns
    the metrics tested."""
    tested = [m for m, e in metrics.items() if e["p_value"] is not None]
    for m, p in zip(tested, holm([metrics[m]["p_value"] for m in tested]), strict=True):
        metrics[m]["p_adjusted"] = p
        metrics[m]["significant"] = p < alpha
        metrics[m]["significant_unadjusted"] = metrics[m]["p_value"] < alpha
    for e in metrics.values():
        e.setdefault("significant", False)
    return tested


def own_values(run: RunOutcomes) -> dict[str, dict[str, Any]]:
    """Per metric, the run's own headline over all its cases (the value of its
    summary.json): the sum of the numerators over the sum of the denominators, and ``n``,
    the cases with something to check. A comparison's A and B are on the shared cases
    only, so they differ from these when a run has cases the other does not count."""
    if not run.counts:
        return {m: {"value": None, "n": 0} for m in METRICS}
    lacks = {"not_measured": True}
    counts = _counts_array(run, sorted(run.counts))
    out: dict[str, dict[str, Any]] = {}
    for j, m in enumerate(METRICS):
        num, den = counts[:, j, 0], counts[:, j, 1]
        total = float(den.sum())
        out[m] = {
            "value": float(num.sum()) / total if total > 0 else None,
            "n": int((den > 0).sum()),
            **(lacks if m in run.not_measured else {}),
        }
    return out


def _consistency_of(
    a: RunOutcomes, b: RunOutcomes, ids: list[str], flipped: list[str]
) -> dict[str, Any]:
    """B's (case, check) verdicts against A's, when both are run folders; with
    B a perturbed run (``RUN/perturb/<name>``) its names are mapped back for the diffs.
    ``changed_count``: the shared cases with at least one check verdict changed, the
    ``flipped`` ones included (None when a side has no check verdicts, as a baseline)."""
    if not a.checks or not b.checks:
        return {"changed_count": None}
    from hy_eval.harness.analysis._consistency import (
        changed_ids,
        consistency,
        records_unmeasured,
    )

    info = b.perturbation or PerturbFile()
    subjects = {cid: c.subjects for cid, c in info.cases.items()}
    leave = records_unmeasured(a.checks, b.checks)  # checks one side cannot have
    changed = (changed_ids(a.checks, b.checks, leave) & set(ids)) | set(flipped)
    return {
        "changed_count": len(changed),
        "perturbation": info.perturbation,
        "consistency": consistency(a.checks, b.checks, subjects),
    }
