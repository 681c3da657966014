"""Synthetic runs with a known generating process, for measuring the error rates of the
public compare and gate functions (E4, E5).

The process is built from a real run: the committed baseline's cases (457) with their
per-case denominators of every metric. Each case and metric gets a true rate
q = (num + 0.2) / (den + 0.4) from the baseline's counts (so a case that was all right or
all wrong can still vary), a run draws num ~ Binomial(den, q) per case (facts of one case
share their case's rate: clustered), and a metric's true value is sum(den * q) / sum(den).
A run's suite is a draw of as many cases, with replacement, from the baseline's.
A second run of the same process is either independent of the first or correlated with it
(each case copied from the first run with probability ``rho``, as two runs of a nearly
deterministic model would be). ``case_pass`` is drawn the same way with den = 1.

``measure`` runs a scenario many times and returns the rate of the event it counts;
``benchmarks/bench_stats.py`` prints them all with more repetitions than the tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hy_eval.harness.analysis import RunOutcomes
from hy_eval.harness.runlog import MetricEntry, read_baseline
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "reports" / "baselines" / "multi_speaker.json"


@dataclass
class Process:
    """Per-case denominators and true rates, (cases x metrics)."""

    ids: list[str]
    den: np.ndarray
    q: np.ndarray

    def truth(self, metric: str) -> float:
        j = METRICS.index(metric)
        return float((self.den[:, j] * self.q[:, j]).sum() / self.den[:, j].sum())

    def shifted(self, metric: str, worse_by: float) -> Process:
        """The same process with ``metric``'s true value worse by exactly ``worse_by``
        (every case's rate scaled by one factor, so the weighted mean moves exactly)."""
        j = METRICS.index(metric)
        q = self.q.copy()
        if metric in ACCURACY_METRICS:
            q[:, j] *= 1 - worse_by / self.truth(metric)
        else:  # scale the complement, so rates stay below 1
            q[:, j] = 1 - (1 - q[:, j]) * (1 - worse_by / (1 - self.truth(metric)))
        return Process(self.ids, self.den, q)


def baseline_process(path: Path = BASELINE) -> Process:
    cases = read_baseline(path).cases
    ids = sorted(cases)
    counts = np.array(
        [[cases[i].counts.get(m, (0.0, 0.0)) for m in METRICS] for i in ids], dtype=float
    )
    num, den = counts[..., 0], counts[..., 1]
    return Process(ids, den, (num + 0.2) / (den + 0.4))


def sample_cases(process: Process, rng: np.random.Generator) -> Process:
    """A suite of the same size drawn from the process's cases with replacement: the
    cases themselves are a sample, which the CIs account for."""
    idx = rng.integers(0, len(process.ids), len(process.ids))
    ids = [f"c{k:03d}-{process.ids[i]}" for k, i in enumerate(idx)]
    return Process(ids, process.den[idx], process.q[idx])


def draw(process: Process, rng: np.random.Generator) -> np.ndarray:
    """One run's numerators, (cases x metrics)."""
    return rng.binomial(process.den.astype(int), process.q).astype(float)


def correlated(first: np.ndarray, other: np.ndarray, rho: float, rng: np.random.Generator):
    """Each case (all its metrics) copied from ``first`` with probability ``rho``."""
    copy = rng.random(len(first)) < rho
    return np.where(copy[:, None], first, other)


def outcomes(process: Process, num: np.ndarray, label: str) -> RunOutcomes:
    """A ``RunOutcomes`` such as ``run_outcomes`` gives, from drawn numerators."""
    j = METRICS.index("case_pass")
    counts = {
        cid: {m: (float(num[i, k]), float(process.den[i, k])) for k, m in enumerate(METRICS)}
        for i, cid in enumerate(process.ids)
    }
    passed = {cid: bool(num[i, j]) for i, cid in enumerate(process.ids)}
    return RunOutcomes(label, "sim", counts, passed)


def pair(
    process_a: Process, process_b: Process, rng: np.random.Generator, rho: float = 0.0
) -> tuple[RunOutcomes, RunOutcomes]:
    """A baseline run of ``process_a`` and a run of ``process_b`` on one sample of cases
    (B copied from A case by case with probability ``rho``)."""
    idx = rng.integers(0, len(process_a.ids), len(process_a.ids))
    ids = [f"c{k:03d}-{process_a.ids[i]}" for k, i in enumerate(idx)]
    process_a = Process(ids, process_a.den[idx], process_a.q[idx])
    process_b = Process(ids, process_b.den[idx], process_b.q[idx])
    a = draw(process_a, rng)
    b = draw(process_b, rng)
    if rho:
        b = correlated(a, b, rho, rng)
    return outcomes(process_a, a, "A"), outcomes(process_b, b, "B")


def values_of(run: RunOutcomes) -> dict[str, MetricEntry]:
    """The summary ``metrics`` the gates read (values only: no CI is needed to gate)."""
    out: dict[str, MetricEntry] = {}
    for m in METRICS:
        num = sum(c[m][0] for c in run.counts.values())
        den = sum(c[m][1] for c in run.counts.values())
        out[m] = MetricEntry(value=num / den if den else None)
    return out


def measure(event: Callable[[np.random.Generator], bool], reps: int, seed: int) -> float:
    """The share of ``reps`` seeded repetitions in which ``event`` happens."""
    rng = np.random.default_rng(seed)
    return sum(bool(event(rng)) for _ in range(reps)) / reps


def binomial_ok(rate: float, nominal: float, reps: int, sds: float = 3.0) -> bool:
    """``rate`` is at most ``nominal`` plus ``sds`` Monte Carlo standard errors."""
    return rate <= nominal + sds * (nominal * (1 - nominal) / reps) ** 0.5


def gate_spec(limits: Mapping[str, float]) -> dict[str, dict[str, float]]:
    return {
        m: {("max_drop" if m in ACCURACY_METRICS else "max_rise"): v} for m, v in limits.items()
    }
