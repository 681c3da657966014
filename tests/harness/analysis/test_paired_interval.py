"""The paired B - A interval (E4; docs/metrics.md, "Comparing two runs"): its coverage at
the edges and on few cases, by vectorised simulation; that it never has zero width when
the runs differ; that it never contradicts the test printed beside it; and the gate's
``max_drop`` test at exactly the allowed drop (E5). ``benchmarks/bench_paired_ci.py`` and
``benchmarks/bench_stats.py --only max_drop`` measure the same with more repetitions.

Every coverage here is of ``paired_score_interval``, the interval before it is widened to
0 beside a test that does not reject (``_metric_entries``): the printed interval contains
it (``test_printed_interval_contains_the_score_interval``), so covers at least as often.
"""

import numpy as np
import pytest

from hy_eval.harness.analysis import paired_difference
from hy_eval.harness.analysis._paired_ci import (
    bounds_at,
    paired_parts,
    paired_score_interval,
    worse_beyond_p,
)
from hy_eval.harness.analysis._stats import wilson_interval, z_quantile
from hy_eval.harness.scoring import METRICS
from tests.harness.simulated_runs import baseline_process

#: The cells where the bootstrap fell short (n, A's rate, B's rate) with the bootstrap's coverage there, and the
#: suite's size. 0.93 is the floor asked for in every cell.
CELLS = [
    (10, 1.0, 0.95),  # bootstrap 0.377, zero width in 62%
    (10, 0.98, 0.93),  # 0.527
    (30, 1.0, 0.95),  # 0.793
    (30, 0.5, 0.45),  # 0.957
    (100, 0.98, 0.93),  # 0.963
    (457, 1.0, 0.95),
    (457, 0.98, 0.93),
    (457, 0.5, 0.45),
]


def _bernoulli(n, pa, pb, reps, seed):
    """(n x reps) independent Bernoulli cases of A and B, one unit a case."""
    r = np.random.default_rng(seed)
    a = (r.random((n, reps)) < pa).astype(float)
    b = (r.random((n, reps)) < pb).astype(float)
    return a, np.ones_like(a), b, np.ones_like(b)


@pytest.mark.parametrize("n, pa, pb", CELLS)
def test_paired_interval_covers_at_the_edges_and_on_few_cases(n, pa, pb):
    # 2,000 repetitions: one Monte Carlo SE is 0.005 at 0.95, so 0.93 is 4 SEs below it.
    a_num, a_den, b_num, b_den = _bernoulli(n, pa, pb, 2000, seed=n)
    lo, hi = paired_score_interval(a_num, a_den, b_num, b_den)
    covered = (lo <= pb - pa + 1e-12) & (pb - pa - 1e-12 <= hi)
    assert covered.mean() >= 0.93, covered.mean()
    differ = (a_num != b_num).any(axis=0)
    assert np.all(hi[differ] - lo[differ] > 0.01)  # the bootstrap: [0, 0] in 62% at n=10


def test_paired_interval_is_not_wider_where_the_bootstrap_was_right():
    # n = 100, 0.5 -> 0.45: the percentile bootstrap covered (0.957) with a mean width of
    # 0.270 (benchmarks/bench_paired_ci.py, before); the score interval is as wide.
    lo, hi = paired_score_interval(*_bernoulli(100, 0.5, 0.45, 2000, seed=7))
    assert 0.26 < np.mean(hi - lo) < 0.285, np.mean(hi - lo)


@pytest.mark.parametrize("metric", ["fact_recall", "attribution_accuracy", "misattribution_rate"])
@pytest.mark.parametrize("n", [2, 5, 10, 30, 100, 457])
def test_paired_interval_covers_ratios_with_per_case_denominators(metric, n):
    # Cases drawn from the committed baseline's with their own denominators (facts of a
    # case share its rate: clustered), B worse by 0.05 (simulated_runs.py's process).
    base = baseline_process()
    worse = base.shifted(metric, 0.05)
    j = METRICS.index(metric)
    keep = np.flatnonzero(base.den[:, j] > 0)
    r = np.random.default_rng(n + j)
    idx = keep[r.integers(0, len(keep), (n, 1000))]
    den = base.den[idx, j]
    a = r.binomial(den.astype(int), base.q[idx, j]).astype(float)
    b = r.binomial(den.astype(int), worse.q[idx, j]).astype(float)
    lo, hi = paired_score_interval(a, den, b, den)
    true = worse.truth(metric) - base.truth(metric)
    covered = (lo <= true) & (true <= hi)
    # 1,000 repetitions: one SE is 0.007 at 0.95; 0.93 is 2.9 SEs below it.
    assert covered.mean() >= 0.93, covered.mean()


def test_one_unit_a_case_is_newcombes_method_10_by_hand():
    # A 2 x 2 table: both pass 12, A only 2, B only 8, neither 3; n = 25. A = 14/25,
    # B = 20/25, phi the table's (ad - bc) / sqrt of its margins' product, computed by hand
    # and shrunk by (n - 2) / n (_paired_ci's docstring).
    pairs = [(1, 1)] * 12 + [(1, 0)] * 2 + [(0, 1)] * 8 + [(0, 0)] * 3
    a = np.array([p[0] for p in pairs], float)
    b = np.array([p[1] for p in pairs], float)
    ones = np.ones(25)
    lo, hi = paired_score_interval(a, ones, b, ones)
    la, ua = wilson_interval(14 / 25, 25)
    lb, ub = wilson_interval(20 / 25, 25)
    phi = (12 * 3 - 2 * 8) / np.sqrt(14 * 11 * 20 * 5) * 23 / 25  # shrunk by (n - 2) / n
    d = 20 / 25 - 14 / 25
    x, y = 0.8 - lb, ua - 0.56
    assert lo == pytest.approx(d - np.sqrt(x * x - 2 * phi * x * y + y * y))
    x, y = ub - 0.8, 0.56 - la
    assert hi == pytest.approx(d + np.sqrt(x * x - 2 * phi * x * y + y * y))
    # Swapping the runs mirrors the interval.
    lo2, hi2 = paired_score_interval(b, ones, a, ones)
    assert (lo2, hi2) == (pytest.approx(-hi), pytest.approx(-lo))


def test_printed_interval_contains_the_score_interval():
    r = np.random.default_rng(11)
    for _ in range(30):
        n = int(r.integers(5, 60))
        den = r.integers(1, 5, n).astype(float)
        a = r.binomial(den.astype(int), 0.7).astype(float)
        b = r.binomial(den.astype(int), 0.6).astype(float)
        res = paired_difference(a, den, b, den, samples=300)
        lo, hi = paired_score_interval(a, den, b, den)
        assert res["ci"][0] <= lo + 1e-12 and hi - 1e-12 <= res["ci"][1]


def test_the_interval_and_the_test_beside_it_never_contradict():
    # The issue: a 20-case comparison printed a fact_recall 95% CI excluding 0 beside
    # p = 0.069. Here 20-case fact_recall-like runs, B a copy of A on half the cases and
    # worse elsewhere: wherever p >= 0.05 the CI holds 0 (the bootstrap excluded
    # 0 beside p >= 0.05 in 38 of these 150).
    r = np.random.default_rng(12)
    seen_both = [0, 0]
    for _ in range(150):
        den = r.integers(1, 6, 20).astype(float)
        q = r.beta(4, 2, 20)
        a = r.binomial(den.astype(int), q).astype(float)
        fresh = r.binomial(den.astype(int), np.clip(q - 0.2, 0, 1)).astype(float)
        b = np.where(r.random(20) < 0.5, a, fresh)
        res = paired_difference(a, den, b, den, samples=400)
        lo, hi = res["ci"]
        excludes = lo > 0 or hi < 0
        assert not (excludes and res["p_value"] >= 0.05), (lo, hi, res["p_value"])
        seen_both[excludes] += 1
    assert min(seen_both) > 5, seen_both  # both kinds of outcome were met


def _case_pass_boundary(reps, seed, limit=0.05):
    """One-sided score p of "case_pass dropped by more than ``limit``" on ``reps`` pairs
    of runs whose true drop is exactly ``limit``: the baseline's cases drawn with
    replacement (457), A and B independent (simulated_runs.py's process)."""
    base = baseline_process()
    worse = base.shifted("case_pass", limit)
    j = METRICS.index("case_pass")
    r = np.random.default_rng(seed)
    idx = r.integers(0, len(base.ids), (len(base.ids), reps))
    a = (r.random(idx.shape) < base.q[idx, j]).astype(float)
    b = (r.random(idx.shape) < worse.q[idx, j]).astype(float)
    ones = np.ones_like(a)
    return worse_beyond_p(paired_parts(a, ones, b, ones), -1.0, limit)


def test_max_drop_at_exactly_the_allowed_drop_fails_at_most_alpha():
    # The bootstrap inversion failed case_pass at exactly the allowed drop 7.2% of the
    # time (1,000 repetitions, benchmarks/bench_stats.py --only max_drop); alpha is 5%.
    # 10,000 pairs of runs: the size is read within 2.5 standard errors of alpha (0.0554).
    # With 3,000 the bound was 0.0599, and a re-blessed baseline (case_pass 25 -> 28 of 457)
    # drew 0.061 at this seed while 10,000 pairs at three seeds read 0.049 to 0.050.
    p = _case_pass_boundary(10_000, seed=13)
    rate = float(np.mean(p < 0.05))
    assert rate <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / 10_000), rate


def test_the_gate_p_is_the_inverted_interval():
    # p < alpha exactly when the one-sided (1 - alpha) bound of the drop exceeds the limit.
    r = np.random.default_rng(14)
    a = (r.random((200, 40)) < 0.9).astype(float)
    b = (r.random((200, 40)) < 0.8).astype(float)
    ones = np.ones_like(a)
    parts = paired_parts(a, ones, b, ones)
    p = worse_beyond_p(parts, -1.0, 0.02)
    for alpha in (0.01, 0.05, 0.2):
        _, upper = bounds_at(parts, z_quantile(1 - alpha))
        bound = -upper  # the least the drop can be at one-sided 1 - alpha
        assert np.array_equal(p < alpha, bound > 0.02)
    assert 0 < (p < 0.05).sum() < 40  # both verdicts met
