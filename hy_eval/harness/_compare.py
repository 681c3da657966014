"""Paired comparison of two runs on the same case ids (rule E4).

For each metric: the difference B - A with a paired bootstrap 95% CI (cases resampled
jointly, so each case is compared with itself). For ``case_pass``: McNemar's exact test on
the discordant cases. With more than one comparison, Holm's correction. The minimum
detectable effect at 80% power says what difference the suite can see at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hy_eval.harness._runner import read_records
from hy_eval.harness._scoring import ACCURACY_METRICS, METRICS
from hy_eval.harness._stats import BOOTSTRAP_SAMPLES, SEED

Z_975 = 1.959963984540054
Z_80 = 0.8416212335729143


class CompareError(ValueError):
    """Two runs that cannot be compared (different datasets, nothing in common)."""


@dataclass
class RunOutcomes:
    """Per-case metric counts and outputs of one run (or one baseline)."""

    label: str
    dataset_hash: str
    counts: dict[str, dict[str, tuple[float, float]]]  # case id -> metric -> (num, den)
    passed: dict[str, bool]
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def outputs_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a case record a structural diff looks at."""
    return {
        "facts": [(f["text"], f["owner"]) for f in record.get("facts", [])],
        "operations": [
            (o["op"], o["fact"], tuple(o["targets"]))
            for o in record.get("operations", {}).get("applied", [])
        ],
        "basic_info": record.get("basic_info", {}),
        "error": record.get("error"),
    }


def load_run(run_dir: str | Path) -> RunOutcomes:
    import json

    path = Path(run_dir)
    manifest_path = path / "manifest.json"
    if not manifest_path.is_file():
        raise CompareError(f"{path}: not a run folder (no manifest.json)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    counts: dict[str, dict[str, tuple[float, float]]] = {}
    passes: dict[str, list[bool]] = {}
    outputs: dict[str, dict[str, Any]] = {}
    for rec in read_records(path / "cases.jsonl"):
        cid = rec["id"]
        mine = counts.setdefault(cid, {})
        for m, (num, den) in rec["score"]["counts"].items():
            old = mine.get(m, (0.0, 0.0))
            mine[m] = (old[0] + num, old[1] + den)
        passes.setdefault(cid, []).append(bool(rec["score"]["passed"]))
        if rec.get("repeat", 0) == 0:
            outputs[cid] = outputs_of(rec)
    k = manifest["params"].get("pass_k")
    # k of n repeats must pass (default all); without repeats that is the case's own verdict.
    passed = {cid: sum(p) >= (k or len(p)) for cid, p in passes.items()}
    for cid, ok in passed.items():
        counts[cid]["case_pass"] = (float(ok), 1.0)
    label = f"{manifest['provider']}:{manifest['model']}/{manifest['params']['variant']}"
    return RunOutcomes(label, manifest["dataset_hash"], counts, passed, outputs, manifest)


def paired_difference(
    a_num: np.ndarray,
    a_den: np.ndarray,
    b_num: np.ndarray,
    b_den: np.ndarray,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = SEED,
) -> dict[str, Any]:
    """B - A for a ratio metric, with a paired percentile bootstrap CI over cases."""
    keep = (a_den > 0) & (b_den > 0)
    a_num, a_den, b_num, b_den = a_num[keep], a_den[keep], b_num[keep], b_den[keep]
    k = len(a_den)
    if k == 0:
        return {"a": None, "b": None, "diff": None, "ci": [None, None], "n": 0, "p_value": None}
    a = float(a_num.sum() / a_den.sum())
    b = float(b_num.sum() / b_den.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, k, size=(samples, k))
    diffs = b_num[idx].sum(1) / b_den[idx].sum(1) - a_num[idx].sum(1) / a_den[idx].sum(1)
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    # Bootstrap p-value of "no difference": twice the share on the far side of 0.
    p = min(1.0, 2.0 * min(float(np.mean(diffs <= 0)), float(np.mean(diffs >= 0))))
    if np.all(diffs == 0):
        p = 1.0
    return {"a": a, "b": b, "diff": b - a, "ci": [float(lo), float(hi)], "n": int(k), "p_value": p}


def mcnemar_exact(fixed: int, broken: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test on the discordant pairs."""
    n = fixed + broken
    if n == 0:
        return 1.0
    k = min(fixed, broken)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


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


def structural_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """What changed between two outputs of one case (facts, owners, operations, L0)."""
    from deepdiff import DeepDiff

    diff = DeepDiff(dict(a), dict(b), ignore_order=True, view="text")
    out: dict[str, Any] = json_safe(diff.to_dict())
    return out


def json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def compare(a: RunOutcomes, b: RunOutcomes, *, common_only: bool = False) -> dict[str, Any]:
    """The paired comparison of B against A on their shared case ids."""
    if a.dataset_hash != b.dataset_hash and not common_only:
        raise CompareError(
            f"the runs used different datasets ({a.dataset_hash[:12]} vs {b.dataset_hash[:12]}); "
            "compare only the shared case ids with --common-only"
        )
    ids = sorted(set(a.counts) & set(b.counts))
    if not ids:
        raise CompareError("the runs have no case id in common")
    metrics: dict[str, Any] = {}
    for m in METRICS:
        arr = {
            side: (
                np.array([run.counts[i].get(m, (0, 0))[0] for i in ids], dtype=float),
                np.array([run.counts[i].get(m, (0, 0))[1] for i in ids], dtype=float),
            )
            for side, run in (("a", a), ("b", b))
        }
        entry = paired_difference(*arr["a"], *arr["b"])
        entry["higher_is_better"] = m in ACCURACY_METRICS
        lo, hi = entry["ci"]
        entry["significant"] = lo is not None and (lo > 0 or hi < 0)
        metrics[m] = entry
    fixed = [i for i in ids if not a.passed[i] and b.passed[i]]
    broken = [i for i in ids if a.passed[i] and not b.passed[i]]
    p_a = sum(a.passed[i] for i in ids) / len(ids)
    p_b = sum(b.passed[i] for i in ids) / len(ids)
    flips = []
    for i in fixed + broken:
        flips.append(
            {
                "id": i,
                "change": "fixed" if i in fixed else "broken",
                "diff": structural_diff(a.outputs.get(i, {}), b.outputs.get(i, {})),
            }
        )
    return {
        "a": a.label,
        "b": b.label,
        "cases": len(ids),
        "only_in_a": len(set(a.counts) - set(ids)),
        "only_in_b": len(set(b.counts) - set(ids)),
        "metrics": metrics,
        "mcnemar": {
            "fixed": len(fixed),
            "broken": len(broken),
            "p_value": mcnemar_exact(len(fixed), len(broken)),
        },
        "mde_case_pass": minimum_detectable_effect(len(ids), p_a, p_b, len(fixed) + len(broken)),
        "flipped": flips,
    }


def comparison_text(result: Mapping[str, Any]) -> str:
    lines = [
        f"B = {result['b']} vs A = {result['a']} on {result['cases']} shared cases",
        f"{'metric':<30}{'A':>8}{'B':>8}{'B-A':>9}  95% CI",
    ]
    for m, e in result["metrics"].items():
        if e["diff"] is None:
            continue
        star = " *" if e["significant"] else ""
        lines.append(
            f"{m:<30}{e['a']:>8.3f}{e['b']:>8.3f}{e['diff']:>+9.3f}  "
            f"[{e['ci'][0]:+.3f}, {e['ci'][1]:+.3f}]{star}"
        )
    mc = result["mcnemar"]
    lines.append(
        f"case_pass flips: {mc['fixed']} fixed by B, {mc['broken']} broken by B; "
        f"McNemar exact p = {mc['p_value']:.4f}"
        + (f" (Holm-adjusted {result['p_holm']:.4f})" if "p_holm" in result else "")
    )
    mde = result["mde_case_pass"]
    if mde is not None:
        lines.append(
            f"this suite detects a case_pass difference of about {mde:.3f} or more "
            "(80% power, alpha 0.05); smaller differences are noise here"
        )
    for flip in result["flipped"][:20]:
        lines.append(f"  {flip['change']:<6} {flip['id']}")
    if len(result["flipped"]) > 20:
        lines.append(f"  ... and {len(result['flipped']) - 20} more")
    lines.append("(* = the 95% CI of the difference excludes 0)")
    return "\n".join(lines)
