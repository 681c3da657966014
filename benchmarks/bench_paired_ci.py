"""Coverage of the paired B - A interval, measured through the public
``hy_eval.harness.analysis.paired_difference`` (what ``compare``, the comparison page and
the systems table print), and how often it contradicts the test beside it.
docs/metrics.md ("Comparing two runs") quotes this script's output.

    python benchmarks/bench_paired_ci.py [--reps 300] [--only NAME]
    python benchmarks/bench_paired_ci.py --code=/tmp/old   # the same on another checkout

``--code=DIR`` imports ``hy_eval`` from DIR (``git archive 9b924d6 | tar -x -C /tmp/old``:
the percentile bootstrap before the score interval) to measure it the same way.

Tables (each cell its own seed, so a cell's figures do not depend on the others):

- ``bernoulli``: A and B independent Bernoulli cases (one unit a case, as ``case_pass``),
  the cells where the bootstrap fell short and the suite's size (457): coverage of the
  true B - A, the share of zero-width intervals (and of those where the runs differ on
  some case), the mean width;
- ``clustered``: cases drawn from the committed baseline's with their real per-case
  denominators and B worse by 0.05 (``tests/harness/simulated_runs.py``), for
  fact_recall, attribution_accuracy and misattribution_rate at 2, 5, 10, 30, 100 and 457
  cases (the systems table compares attribution on 2 to 7);
- ``boundary`` (``--boundary-reps``, default 20,000; this checkout's code only): the
  gate's one-sided score test of "case_pass dropped by more than 0.05" when the true drop
  is exactly 0.05, on the baseline's 457 cases (``simulated_runs.py``), vectorised: how
  often it rejects at alpha 0.05 (the gate's failure rate at the boundary; through
  ``evaluate_outcomes`` it is ``bench_stats.py --only max_drop``, 1,000 repetitions);
- ``contradicts``: 20-case runs of fact_recall-like ratios (1 to 5 facts a case), A and B
  correlated: the share whose 95% interval excludes 0 while the test's p >= 0.05, and the
  share whose interval holds 0 while p < 0.05.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CODE = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--code=")), None)
if CODE:
    sys.path.insert(0, CODE)

from hy_eval.harness.analysis import paired_difference  # noqa: E402
from hy_eval.harness.scoring import METRICS  # noqa: E402

#: (cases, A's rate, B's rate): the cells where the bootstrap fell short, then the suite's
#: size and the middle.
BERNOULLI = [
    (10, 1.0, 0.95),
    (10, 0.98, 0.93),
    (30, 1.0, 0.95),
    (30, 0.5, 0.45),
    (100, 0.98, 0.93),
    (100, 0.5, 0.45),
    (457, 1.0, 0.95),
    (457, 0.98, 0.93),
    (457, 0.5, 0.45),
    (10, 0.5, 0.45),
]
CLUSTERED = ("fact_recall", "attribution_accuracy", "misattribution_rate")


def _simulator() -> Any:
    """``tests/harness/simulated_runs.py`` of this checkout, whatever ``--code`` says."""
    import importlib.util

    path = ROOT / "tests" / "harness" / "simulated_runs.py"
    spec = importlib.util.spec_from_file_location("simulated_runs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["simulated_runs"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _one(a_num, a_den, b_num, b_den, true: float) -> tuple[bool, bool, bool, float]:  # type: ignore[no-untyped-def]
    """Whether the interval covers ``true``, whether it has zero width, whether it has
    zero width though the runs differ on some case, and its width."""
    lo, hi = paired_difference(a_num, a_den, b_num, b_den)["ci"]
    zero = bool(hi - lo <= 1e-12)
    differ = bool(np.any(a_num != b_num))
    return bool(lo - 1e-12 <= true <= hi + 1e-12), zero, zero and differ, float(hi - lo)


def bernoulli(n: int, pa: float, pb: float) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    ones = np.ones(n)

    def rep(r: np.random.Generator) -> tuple[bool, bool, bool, float]:
        a = (r.random(n) < pa).astype(float)
        b = (r.random(n) < pb).astype(float)
        return _one(a, ones, b, ones, pb - pa)

    return rep


def clustered(metric: str, n: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    sim = _simulator()
    base = sim.baseline_process()
    worse = base.shifted(metric, 0.05)
    j = METRICS.index(metric)
    keep = np.flatnonzero(base.den[:, j] > 0)  # cases that count for the metric
    true = worse.truth(metric) - base.truth(metric)

    def rep(r: np.random.Generator) -> tuple[bool, bool, bool, float]:
        idx = keep[r.integers(0, len(keep), n)]
        den = base.den[idx, j].astype(int)
        a = r.binomial(den, base.q[idx, j]).astype(float)
        b = r.binomial(den, worse.q[idx, j]).astype(float)
        return _one(a, den.astype(float), b, den.astype(float), true)

    return rep


def contradicts(r: np.random.Generator) -> tuple[bool, bool]:
    """A 20-case fact_recall-like pair: B copies A's case with probability 0.5, else draws
    it afresh at a rate 0.2 lower. Whether the 95% CI excludes 0 while p >= 0.05 (a
    contradiction), and whether it holds 0 while p < 0.05 (the interval more cautious
    than the test)."""
    n = 20
    den = r.integers(1, 6, n).astype(float)
    q = r.beta(4, 2, n)
    a = r.binomial(den.astype(int), q).astype(float)
    fresh = r.binomial(den.astype(int), np.clip(q - 0.2, 0, 1)).astype(float)
    b = np.where(r.random(n) < 0.5, a, fresh)
    res = paired_difference(a, den, b, den)
    lo, hi = res["ci"]
    excludes = lo > 0 or hi < 0
    return excludes and res["p_value"] >= 0.05, not excludes and res["p_value"] < 0.05


def scenarios() -> dict[str, Callable[[np.random.Generator], object]]:
    out: dict[str, Callable[[np.random.Generator], object]] = {}
    for n, pa, pb in BERNOULLI:
        out[f"bernoulli n={n} {pa} -> {pb}"] = bernoulli(n, pa, pb)
    for metric in CLUSTERED:
        for n in (2, 5, 10, 30, 100, 457):
            out[f"clustered {metric} n={n}, B worse by 0.05"] = clustered(metric, n)
    name = "contradicts, 20-case fact_recall-like: CI excludes 0, p >= 0.05 / holds 0, p < 0.05"
    out[name] = contradicts
    return out


def boundary(reps: int, limit: float = 0.05) -> float:
    """The share of ``reps`` pairs of runs, true case_pass drop exactly ``limit``, whose
    one-sided score p is below 0.05 (``_paired_ci.worse_beyond_p``, as the gate's)."""
    from hy_eval.harness.analysis._paired_ci import paired_parts, worse_beyond_p

    base = _simulator().baseline_process()
    worse = base.shifted("case_pass", limit)
    j = METRICS.index("case_pass")
    r = np.random.default_rng(4299)
    hits = 0
    for start in range(0, reps, 2000):  # in chunks: (457 x 2,000) arrays at a time
        size = min(2000, reps - start)
        idx = r.integers(0, len(base.ids), (len(base.ids), size))
        a = (r.random(idx.shape) < base.q[idx, j]).astype(float)
        b = (r.random(idx.shape) < worse.q[idx, j]).astype(float)
        ones = np.ones_like(a)
        hits += int((worse_beyond_p(paired_parts(a, ones, b, ones), -1.0, limit) < 0.05).sum())
    return hits / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--only", help="run the scenarios whose name contains this")
    ap.add_argument("--boundary-reps", type=int, default=20000)
    ap.add_argument("--code", help="import hy_eval from this folder (see above)")
    args = ap.parse_args()
    for i, (name, fn) in enumerate(scenarios().items()):
        if args.only and args.only not in name:
            continue
        rng = np.random.default_rng(4200 + i)
        start = time.perf_counter()
        rows = np.array([np.atleast_1d(fn(rng)) for _ in range(args.reps)], dtype=float)  # type: ignore[call-overload, type-var]
        if rows.shape[1] == 4:
            cover, zero, zero_differ, width = rows.mean(0)
            se = np.sqrt(cover * (1 - cover) / args.reps)
            text = (
                f"coverage {cover:.3f} (+-{se:.3f}), zero width {zero:.3f} "
                f"({zero_differ:.3f} with the runs differing), mean width {width:.3f}"
            )
        else:
            text = " / ".join(f"{x:.3f}" for x in rows.mean(0))
        took = time.perf_counter() - start
        print(f"{name}: {text}  ({args.reps} reps, {took:.0f} s)")
        sys.stdout.flush()
    if CODE is None and (not args.only or args.only in "boundary"):
        rate = boundary(args.boundary_reps)
        se = np.sqrt(rate * (1 - rate) / args.boundary_reps)
        print(
            "boundary: case_pass max_drop 0.05, true drop exactly 0.05, 457 cases: "
            f"the score test rejects at alpha 0.05 in {rate:.4f} (+-{se:.4f}, "
            f"{args.boundary_reps} reps)"
        )


if __name__ == "__main__":
    main()
