"""The statistics, by simulation: the error rates of the public compare and gate functions on
synthetic runs with a known generating process built from the committed baseline's cases
(``simulated_runs.py``). Seeded, so each figure is the same on every run; repetitions are
few enough for about half a minute, and each bound leaves 2.5 Monte Carlo standard
errors above the nominal rate: rates like those measured before the statistics were
reworked (9% gate false alarms, 21.5% of comparisons starred, 20-33% firing at a drop
equal to max_drop, 45% CI coverage at n=10) fail here. ``benchmarks/bench_stats.py`` measures the same with 1,000 repetitions.
"""

import numpy as np
import pytest

from hy_eval.harness import ratio_with_ci
from hy_eval.harness.analysis import compare
from hy_eval.harness.gate import Gates, evaluate_outcomes, load_gates
from tests.harness.simulated_runs import (
    ROOT,
    baseline_process,
    binomial_ok,
    gate_spec,
    measure,
    pair,
    values_of,
)

SAMPLES = 500  # bootstrap and permutation samples per comparison (the product uses 2,000)
ALPHA = 0.05


@pytest.fixture(scope="module")
def process():
    return baseline_process()


def _ci_gates(alpha=ALPHA):
    """This project's own CI gates, the baseline ones (max_drop / max_rise)."""
    spec = {
        m: s
        for m, s in load_gates(ROOT / ".ci" / "gates.toml").metrics.items()
        if "max_drop" in s or "max_rise" in s
    }
    assert len(spec) == 5
    return Gates("ci", spec, None, alpha)


def _fails(gates, a, b):
    return not evaluate_outcomes(gates, values_of(b), b, a, samples=SAMPLES).ok


def test_gates_keep_the_family_wise_false_alarm_rate_at_alpha(process):
    # Two runs of one process, independent or correlated: the CI gates fail at most alpha.
    gates = _ci_gates()
    indep = measure(lambda r: _fails(gates, *pair(process, process, r)), 125, seed=1)
    corr = measure(lambda r: _fails(gates, *pair(process, process, r, rho=0.7)), 125, seed=2)
    assert binomial_ok((indep + corr) / 2, ALPHA, 250, sds=2.5), (indep, corr)


def test_compare_stars_keep_the_false_alarm_rate_at_alpha(process):
    def starred(r):
        res = compare(*pair(process, process, r), samples=SAMPLES)
        return any(e.significant for e in res.metrics.values())

    rate = measure(starred, 150, seed=3)
    assert binomial_ok(rate, ALPHA, 150, sds=2.5), rate


def test_max_drop_at_exactly_the_allowed_drop_fails_at_most_alpha(process):
    # The null of max_drop = 0.05 is "the drop is at most 0.05"; its worst case is 0.05.
    rates = []
    for seed, metric in enumerate(("case_pass", "attribution_accuracy")):
        worse = process.shifted(metric, 0.05)
        assert worse.truth(metric) == pytest.approx(process.truth(metric) - 0.05)
        gates = Gates("sim", gate_spec({metric: 0.05}), None, ALPHA)
        rates.append(
            measure(lambda r, w=worse, g=gates: _fails(g, *pair(process, w, r)), 200, 4 + seed)
        )
    assert binomial_ok(sum(rates) / 2, ALPHA, 400, sds=2.5), rates


def test_a_real_drop_is_caught_more_often_at_a_larger_alpha(process):
    # alpha is honoured by the bootstrap-tested metrics too (it was fixed at 0.05). The drop
    # is sized for middling power on the baseline's cases (12% and 33% here): at 0.10 the
    # 457-case suite catches it nearly always at either alpha, and nothing is compared.
    worse = process.shifted("attribution_accuracy", 0.05)
    strict, loose = _ci_gates(0.05), _ci_gates(0.20)

    def both(r):
        a, b = pair(process, worse, r)
        return _fails(strict, a, b), _fails(loose, a, b)

    # 120 pairs of runs (40 read 0.15 against 0.25 after the baseline was re-blessed at
    # attribution 0.457, on the margin's edge; 120 read 0.12 against 0.33).
    rng = np.random.default_rng(6)
    hits = np.array([both(rng) for _ in range(120)])
    assert hits[:, 1].mean() > hits[:, 0].mean() + 0.1, hits.mean(0)
    assert not (hits[:, 0] & ~hits[:, 1]).any()  # what 0.05 catches, 0.20 catches too


@pytest.mark.parametrize("n, p", [(10, 0.95), (20, 0.95), (157, 0.99), (8, 0.02)])
def test_single_run_ci_covers_at_the_edges(n, p):
    def covers(r):
        lo, hi = ratio_with_ci((r.random(n) < p).astype(float), np.ones(n), samples=500)["ci"]
        return lo <= p <= hi and hi > lo

    rate = measure(covers, 300, seed=n)
    assert rate >= 0.93, rate  # the percentile bootstrap alone: 45% / 71% / 84%


def test_paired_ci_covers_the_true_difference(process):
    worse = process.shifted("attribution_accuracy", 0.05)
    true = worse.truth("attribution_accuracy") - process.truth("attribution_accuracy")

    def covers(r):
        res = compare(*pair(process, worse, r), samples=SAMPLES).metrics
        lo, hi = res["attribution_accuracy"].ci
        return lo <= true <= hi

    # 200 repetitions: with 80, 2.5 Monte Carlo standard errors reach down to 0.89, and
    # the baseline blessed with the strict matcher (fewer matched facts) drew 0.875 there
    # while 600 repetitions give 0.94 (seeds 8, 108, 208: 0.925, 0.955, 0.94).
    rate = measure(covers, 200, seed=8)
    assert 0.91 <= rate <= 0.99, rate
