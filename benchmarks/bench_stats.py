"""Measured error rates of the statistics: coverage of the CIs, false alarms of
compare's stars and of the gates, power of the gates. docs/metrics.md and docs/ci.md
quote this script's output.

    python benchmarks/bench_stats.py [--reps 1000] [--samples 2000] [--only NAME]
    python benchmarks/bench_stats.py --code=/tmp/old   # the same on another checkout

``--code=DIR`` imports ``hy_eval`` from DIR (for instance ``git archive dbc9ebb | tar -x
-C /tmp/old``, the older statistics) to measure it the same way; gate scenarios need
``evaluate_outcomes`` and are skipped where it does not exist.

Synthetic runs come from the committed baseline's cases with a known generating process
(``tests/harness/simulated_runs.py`` describes it); every rate goes through the public
``compare``, ``evaluate_outcomes`` and ``ratio_with_ci``. Seeded: the same arguments give
the same figures. ``tests/harness/analysis/test_error_rates.py`` checks the same rates with fewer
repetitions.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CODE = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--code=")), None)
if CODE:
    sys.path.insert(0, CODE)

import inspect  # noqa: E402

from hy_eval.harness import ratio_with_ci  # noqa: E402
from hy_eval.harness.analysis import compare  # noqa: E402
from hy_eval.harness.gate import Gates, load_gates  # noqa: E402

try:
    from hy_eval.harness.gate import evaluate_outcomes
except ImportError:  # older code (dbc9ebb): no gate outcomes
    evaluate_outcomes = None


def _simulator():  # type: ignore[no-untyped-def]
    """``tests/harness/simulated_runs.py`` of this checkout, whatever ``--code`` says."""
    import importlib.util

    path = ROOT / "tests" / "harness" / "simulated_runs.py"
    spec = importlib.util.spec_from_file_location("simulated_runs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["simulated_runs"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


_sim = _simulator()
baseline_process, draw, gate_spec = _sim.baseline_process, _sim.draw, _sim.gate_spec
pair, sample_cases, values_of = _sim.pair, _sim.sample_cases, _sim.values_of

CI_GATES = {
    m: next(iter(s.values()))
    for m, s in load_gates(ROOT / ".ci" / "gates.toml").metrics.items()
    if "max_drop" in s or "max_rise" in s
}


def _compare(a, b, samples: int):  # type: ignore[no-untyped-def]
    if "samples" in inspect.signature(compare).parameters:
        return compare(a, b, samples=samples)
    return compare(a, b)


def gate_fails(limits: dict[str, float], alpha: float, samples: int) -> Callable[..., bool]:
    gates = Gates("sim", gate_spec(limits), None, alpha)

    def run(a, b) -> bool:  # type: ignore[no-untyped-def]
        return not evaluate_outcomes(gates, values_of(b), b, a, samples=samples).ok

    return run


def scenarios(samples: int) -> dict[str, Callable[[np.random.Generator], object]]:
    """name -> one repetition, returning True (the event) / False, or a tuple of them."""
    proc = baseline_process()
    out: dict[str, Callable[[np.random.Generator], object]] = {}
    if evaluate_outcomes is not None:
        ci_gates = gate_fails(CI_GATES, 0.05, samples)
        out["gate .ci/gates.toml, same process, independent runs: fails"] = lambda r: ci_gates(
            *pair(proc, proc, r)
        )
        out["gate .ci/gates.toml, same process, correlated runs (rho 0.7): fails"] = lambda r: (
            ci_gates(*pair(proc, proc, r, rho=0.7))
        )

    def stars(r: np.random.Generator) -> tuple[bool, bool]:
        res = _compare(*pair(proc, proc, r), samples).metrics.values()
        return any(e.significant for e in res), any(e.significant_unadjusted for e in res)

    out["compare, same process: any metric starred (Holm) / any unadjusted p < 0.05"] = stars

    def paired_coverage(r: np.random.Generator) -> tuple[bool, ...]:
        res = _compare(*pair(proc, proc, r), samples).metrics
        return tuple(
            res[m].ci[0] <= 0 <= res[m].ci[1]
            for m in ("case_pass", "attribution_accuracy", "misattribution_rate")
        )

    out["compare 95% CI of B-A covers 0 (case_pass, attribution, misattribution)"] = paired_coverage
    if evaluate_outcomes is None:
        return out
    for metric in ("case_pass", "attribution_accuracy"):
        shifted = proc.shifted(metric, 0.05)
        fails = gate_fails({metric: 0.05}, 0.05, samples)
        out[f"gate {metric} max_drop 0.05, true drop exactly 0.05: fails"] = (
            lambda r, s=shifted, f=fails: f(*pair(proc, s, r))
        )
    for drop in (0.05, 0.10):
        shifted = proc.shifted("attribution_accuracy", drop)
        by_alpha = [gate_fails(CI_GATES, a, samples) for a in (0.05, 0.20)]
        out[f"gate .ci/gates.toml, attribution drop {drop}: fails at alpha 0.05 / 0.20"] = (
            lambda r, s=shifted, g=by_alpha: tuple(f(*pair(proc, s, r)) for f in g)
        )
    return out


def coverage_scenarios() -> dict[str, Callable[[np.random.Generator], object]]:
    """Single-run 95% CIs (``ratio_with_ci``) on binomial cases, and on the baseline's
    real per-case denominators (clustered facts)."""
    out: dict[str, Callable[[np.random.Generator], object]] = {}
    for n, p in ((8, 0.0), (10, 0.95), (20, 0.95), (157, 0.99), (157, 0.5)):

        def one(r: np.random.Generator, n: int = n, p: float = p) -> bool:
            ci = ratio_with_ci((r.random(n) < p).astype(float), np.ones(n))["ci"]
            return bool(ci[0] <= p <= ci[1])

        out[f"single-run 95% CI covers p, n={n} cases, p={p}"] = one
    proc = baseline_process()
    from hy_eval.harness.scoring import METRICS

    names = ("case_pass", "attribution_accuracy", "misattribution_rate", "untouched_violation_rate")

    def real(r: np.random.Generator) -> tuple[bool, ...]:
        suite = sample_cases(proc, r)
        num = draw(suite, r)
        hits = []
        for m in names:
            j = METRICS.index(m)
            ci = ratio_with_ci(num[:, j], suite.den[:, j])["ci"]
            hits.append(ci[0] <= proc.truth(m) <= ci[1])
        return tuple(hits)

    out["single-run 95% CI covers the truth on the baseline's cases (" + ", ".join(names) + ")"] = (
        real
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=2000, help="bootstrap/permutation samples")
    ap.add_argument("--only", help="run the scenarios whose name contains this")
    ap.add_argument("--code", help="import hy_eval from this folder (see above)")
    args = ap.parse_args()
    todo = {**coverage_scenarios(), **scenarios(args.samples)}
    for i, (name, fn) in enumerate(todo.items()):
        if args.only and args.only not in name:
            continue
        rng = np.random.default_rng(1000 + i)
        start = time.perf_counter()
        hits = np.array([np.atleast_1d(fn(rng)) for _ in range(args.reps)], dtype=float)
        rates = " / ".join(f"{x:.3f}" for x in hits.mean(0))
        se = max(float(np.sqrt(x * (1 - x) / args.reps)) for x in hits.mean(0))
        print(
            f"{name}: {rates}  (+-{se:.3f}, {args.reps} reps, {time.perf_counter() - start:.0f} s)"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
