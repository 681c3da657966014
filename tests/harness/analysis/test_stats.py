"""The statistics, exact pieces: the binomial tail behind McNemar at any n (against scipy), Wilson
intervals, CIs with width at 0, 1 and small n, Holm-adjusted stars in compare, and gates
that test the hypothesis they name at the file's alpha, with like-for-like messages (E3-E5).
"""

import math

import numpy as np
import pytest
from scipy import stats

from hy_eval.harness import ratio_with_ci
from hy_eval.harness.analysis import (
    RunOutcomes,
    binom_half_cdf,
    format_p,
    mcnemar_exact,
    mcnemar_one_sided,
    wilson_interval,
)
from hy_eval.harness.gate import GateConfigError, Gates, evaluate_outcomes, load_gates
from hy_eval.harness.runlog import MetricEntry
from hy_eval.harness.scoring import METRICS


@pytest.mark.parametrize(
    "fixed, broken",
    [
        (0, 1),
        (3, 12),
        (20, 31),
        (500, 524),
        (600, 700),
        (4_990, 5_210),
        (0, 3_000),
        (49_700, 50_300),
    ],
)
def test_mcnemar_matches_scipy_binomtest_at_any_n(fixed, broken):
    # 2.0**n overflowed once fixed + broken reached 1,024.
    n = fixed + broken
    assert mcnemar_exact(fixed, broken) == pytest.approx(
        stats.binomtest(fixed, n, 0.5).pvalue, rel=1e-9, abs=1e-300
    )
    assert mcnemar_one_sided(fixed, broken) == pytest.approx(
        stats.binomtest(fixed, n, 0.5, alternative="less").pvalue, rel=1e-9, abs=1e-300
    )


def test_binomial_tail_symmetry_and_ends():
    assert binom_half_cdf(-1, 5) == 0.0 and binom_half_cdf(5, 5) == 1.0
    assert binom_half_cdf(1, 10) == pytest.approx(11 / 1024)
    assert binom_half_cdf(8, 10) == pytest.approx(1 - 11 / 1024)
    assert mcnemar_exact(7, 7) == 1.0 and mcnemar_one_sided(0, 0) == 1.0


def test_wilson_interval_hand_computed():
    # 0 of 8: centre = half = (z^2 / 2n) / (1 + z^2 / n) = 0.1622, so [0, 0.3244].
    lo, hi = wilson_interval(0.0, 8)
    assert lo == 0.0 and hi == pytest.approx(0.3244, abs=1e-4)
    lo, hi = wilson_interval(1.0, 8)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.3244, abs=1e-4)


def test_ci_has_width_at_0_and_1_and_marks_small_n():
    # The percentile bootstrap once gave [0, 0] for 0 of 8 cases.
    r = ratio_with_ci(np.zeros(8), np.ones(8))
    assert r["ci"][0] == 0.0 and r["ci"][1] == pytest.approx(0.3244, abs=1e-4)
    assert r["small_n"] is True
    r = ratio_with_ci(np.ones(157), np.ones(157))
    assert r["ci"][1] == 1.0 and 0.97 < r["ci"][0] < 0.99 and r["small_n"] is False
    # Interior, on many cases, the bootstrap's width stands (not widened to the cases').
    rng = np.random.default_rng(4)
    facts = rng.integers(1, 5, 2000).astype(float)
    r = ratio_with_ci(rng.binomial(facts.astype(int), 0.7).astype(float), facts)
    se = math.sqrt(0.7 * 0.3 / facts.sum())
    assert r["ci"][1] - r["ci"][0] == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_report_rows_on_few_cases_say_so():
    from hy_eval.harness.analysis import fmt_ratio as _fmt

    def entry(n):
        return MetricEntry.model_validate(ratio_with_ci(np.zeros(n), np.ones(n)))

    assert _fmt(entry(8)) == "0.000 [0.000, 0.324] (n=8, few cases)"
    assert "few" not in _fmt(entry(10))


def test_format_p_says_below_one_in_b():
    assert format_p(0.0, 2000) == "p < 1/2000 (0.0005)"
    assert format_p(0.0123) == "p = 0.0123"


def _runs(a_pass, b_pass, extra=None):
    """Two runs from per-case pass flags; ``extra`` (metric -> (a nums, b nums)) sets
    further 0/1 metrics with denominator 1."""

    def run(label, passes, side):
        counts = {}
        for i, ok in enumerate(passes):
            c = {m: (0.0, 0.0) for m in METRICS}
            c["case_pass"] = (float(ok), 1.0)
            for m, nums in (extra or {}).items():
                c[m] = (float(nums[side][i]), 1.0)
            counts[f"c{i:04d}"] = c
        return RunOutcomes(
            label, "h", counts, {k: bool(v["case_pass"][0]) for k, v in counts.items()}
        )

    return run("A", a_pass, 0), run("B", b_pass, 1)


def _gate(metrics, alpha=0.05):
    return Gates("test", metrics, None, alpha)


def test_gate_alpha_is_honoured():
    # 9 broken, 4 fixed: one-sided McNemar p = P(X <= 4 | 13) = 1093 / 8192 = 0.133.
    a, b = _runs([True] * 9 + [False] * 4 + [True] * 30, [False] * 9 + [True] * 4 + [True] * 30)
    spec = {"case_pass": {"max_drop": 0.0}}
    loose = evaluate_outcomes(_gate(spec, 0.20), {}, b, a)
    strict = evaluate_outcomes(_gate(spec, 0.05), {}, b, a)
    assert not loose.ok and strict.ok
    assert "one-sided McNemar p 0.1334" in loose.failures[0]
    assert "(60% CI)" in loose.failures[0]  # the two-sided level whose end is the 1-sided 80%
    assert "not significant" in strict.warnings[0]


def test_holm_across_gated_metrics():
    # Two metrics, each worse with one-sided p near 0.035: alone, each fails at 0.05;
    # together Holm asks for 0.025 of the smaller, and both hold.
    a_flags = [True] * 7 + [False] + [True] * 40
    b_flags = [False] * 7 + [True] + [True] * 40
    extra = {"profile_name_accuracy": (np.array(a_flags, int), np.array(b_flags, int))}
    a, b = _runs(a_flags, b_flags, extra)
    one = evaluate_outcomes(_gate({"case_pass": {"max_drop": 0.0}}), {}, b, a)
    both = evaluate_outcomes(
        _gate({"case_pass": {"max_drop": 0.0}, "profile_name_accuracy": {"max_drop": 0.0}}),
        {},
        b,
        a,
    )
    assert not one.ok and "one-sided McNemar p 0.0352" in one.failures[0]
    assert both.ok and len(both.warnings) == 2
    assert all("Holm over 2 gated metrics" in w for w in both.warnings)


def test_max_drop_tests_a_drop_beyond_the_allowance():
    # A drop above max_drop on the point estimate alone no longer fails; the
    # gate asks whether the drop is larger than allowed.
    n = 400
    a_flags = [True] * n
    slightly = [i >= 24 for i in range(n)]  # drop 0.06 against an allowance of 0.05
    a, b = _runs(a_flags, slightly)
    res = evaluate_outcomes(_gate({"case_pass": {"max_drop": 0.05}}), {}, b, a)
    assert res.ok and "drop 0.060, allowed 0.050" in res.warnings[0]
    far = [i >= 120 for i in range(n)]  # drop 0.30: every resample is beyond 0.05
    a, b = _runs(a_flags, far)
    res = evaluate_outcomes(_gate({"case_pass": {"max_drop": 0.05}}), {}, b, a)
    assert not res.ok
    assert "one-sided score p < 0.0001, Holm over 1 gated metrics < 0.0001" in res.failures[0]


def test_failure_lists_the_cases_worse_on_that_metric():
    # Every failing metric used to list case_pass's broken cases.
    n = 60
    a_pass = [True] * n
    b_pass = [i >= 15 for i in range(n)]  # case_pass broken on c0000..c0014
    owner_b = np.array([0 if 40 <= i < 55 else 1 for i in range(n)])  # worse on c0040..c0054
    a, b = _runs(a_pass, b_pass, {"profile_name_accuracy": (np.ones(n, int), owner_b)})
    spec = {"case_pass": {"max_drop": 0.0}, "profile_name_accuracy": {"max_drop": 0.0}}
    res = evaluate_outcomes(_gate(spec), {}, b, a)
    name_failure = next(f for f in res.failures if f.startswith("profile_name_accuracy"))
    assert "profile_name_accuracy = 0.750 vs baseline 1.000 on the 60 shared cases" in name_failure
    assert "worse on profile_name_accuracy: c0040, c0041" in name_failure
    assert "c0000" not in name_failure


@pytest.mark.parametrize(
    "content, message",
    [
        ("[metrics.case_pass]\nmax_rise = 0.1\n", "max_rise does not apply (use max_drop"),
        ("[metrics.error_rate]\nmax_drop = 0.1\n", "max_drop does not apply (use max_rise"),
        ("[metrics.case_pass]\nmax_drop = -0.1\n", "must be >= 0"),
    ],
)
def test_gates_file_names_a_testable_hypothesis(tmp_path, content, message):
    path = tmp_path / "g.toml"
    path.write_text(content)
    with pytest.raises(GateConfigError, match=message.replace("(", r"\(")):
        load_gates(path)


def test_resampled_sums_are_the_float64_sums_in_either_precision():
    """The float32 product is taken only where it is exact: whole counts, sums < 2**24."""
    from hy_eval.harness.analysis._stats import _resampled_sums, _weight_chunks

    rng = np.random.default_rng(3)
    small = rng.integers(0, 9, size=(300, 6)).astype(float)  # float32 path
    fractional = small + 0.25  # not whole: float64 path
    large = small * 2.0**20  # sums past 2**24: float64 path
    for counts in (small, fractional, large):
        weights = np.concatenate(list(_weight_chunks(len(counts), 500, 11)))
        expected = weights @ counts
        got = _resampled_sums(counts, 500, 11)
        assert got.dtype == np.float64
        assert np.array_equal(got, expected)
