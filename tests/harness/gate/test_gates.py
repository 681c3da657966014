"""Paired statistics, baselines and gates (E4, E5): hand-computed values, a planted
regression that fails, a drop too small to be significant that passes with a warning,
replay-only with a changed prompt, and compare refusing different datasets."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from hy_eval.cli import main
from hy_eval.harness.analysis import holm, mcnemar_exact, paired_difference
from hy_eval.harness.analysis._stats import minimum_detectable_effect
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, model_args, perfect_extraction


def test_mcnemar_exact_against_hand_computed_and_scipy():
    # 1 case fixed, 9 broken: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22 / 1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(9, 1) == pytest.approx(22 / 1024)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(5, 5) == 1.0
    for fixed, broken in [(3, 12), (0, 6), (20, 31)]:
        expected = stats.binomtest(fixed, fixed + broken, 0.5).pvalue
        assert mcnemar_exact(fixed, broken) == pytest.approx(expected)


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]


def test_paired_interval_contains_the_true_difference():
    rng = np.random.default_rng(3)
    n = 5000
    a = (rng.random(n) < 0.6).astype(float)
    flip = rng.random(n) < 0.1  # B differs from A on ~10% of cases, mostly for the worse
    b = np.where(flip, (rng.random(n) < 0.2).astype(float), a)
    ones = np.ones(n)
    r = paired_difference(a, ones, b, ones)
    true = b.mean() - a.mean()
    assert r["ci"][0] < true < r["ci"][1] and r["diff"] == pytest.approx(true)
    # Pairing makes the interval much narrower than two independent samples would give.
    independent = 2 * 1.96 * math.sqrt(a.var() / n + b.var() / n)
    assert r["ci"][1] - r["ci"][0] < independent / 2


def test_minimum_detectable_effect():
    mde = minimum_detectable_effect(100, 0.5, 0.5, 20)
    assert mde == pytest.approx((1.959964 + 0.841621) * math.sqrt(0.2 / 100), rel=1e-5)
    assert minimum_detectable_effect(400, 0.5, 0.5, 80) == pytest.approx(mde / 2)


def _run(server, tmp_path, suite_dir, name, *extra):
    out = tmp_path / name
    args = [
        "--suite",
        str(suite_dir),
        *model_args(server),
        "--cache-mode",
        "off",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]
    return main(args), out


def _broken(case):
    return {
        "facts": [
            {"text": f"John likes coffee #{case.id[-2:].lstrip('0') or '0'}.", "owner": "user"}
        ],
        "basic_info": {},
    }


GATES = """
[metrics.case_pass]
max_drop = 0.0
[metrics.attribution_accuracy]
min = 0.2
max_drop = 0.0
"""


def test_planted_regression_fails_with_exit_1_naming_metric_and_cases(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy", 40)
    gates = tmp_path / "gates.toml"
    baseline = tmp_path / "baseline.json"
    gates.write_text(GATES)
    with SuiteModel(suite.cases) as model:
        code, good = _run(model.server, tmp_path, tmp_path / "toy", "good")
        assert code == 0
    assert main(["baseline", "bless", str(good), "--out", str(baseline)]) == 0
    data = json.loads(baseline.read_text())
    assert data["metrics"]["case_pass"] == 1.0 and len(data["cases"]) == 40
    broken_ids = [c.id for c in suite.cases[:12]]
    ext = {c.id: (_broken(c) if c.id in broken_ids else perfect_extraction(c)) for c in suite.cases}
    capsys.readouterr()
    with SuiteModel(suite.cases, ext) as model:
        code, bad = _run(
            model.server,
            tmp_path,
            tmp_path / "toy",
            "bad",
            "--gate",
            str(gates),
            "--baseline",
            str(baseline),
        )
    err = capsys.readouterr().err
    assert code == 1
    # Both values on the shared cases, one-sided McNemar (12 broken, 0 fixed ->
    # 1 / 2^12), Holm over the two gated metrics, the cases that got worse on each metric.
    assert (
        "gate FAILED: case_pass = 0.700 vs baseline 1.000 on the 40 shared cases: drop 0.300" in err
    )
    assert "gate FAILED: attribution_accuracy = 0.700 vs baseline 1.000" in err
    assert "one-sided McNemar p 0.0002, Holm over 2 gated metrics 0.0005 (alpha 0.05)" in err
    assert "worse on case_pass: t-00, t-01" in err and "worse on attribution_accuracy: t-00" in err
    assert "t-00" in err and "t-11" in err and "t-12" not in err
    assert json.loads((bad / "gates.json").read_text())["failures"]


def test_same_drop_on_too_few_cases_passes_with_a_warning(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy", 3)
    gates = tmp_path / "gates.toml"
    baseline = tmp_path / "baseline.json"
    gates.write_text(GATES)
    with SuiteModel(suite.cases) as model:
        _, good = _run(model.server, tmp_path, tmp_path / "toy", "good")
    assert main(["baseline", "bless", str(good), "--out", str(baseline)]) == 0
    ext = {c.id: (_broken(c) if c.id == "t-00" else perfect_extraction(c)) for c in suite.cases}
    capsys.readouterr()
    with SuiteModel(suite.cases, ext) as model:
        code, _ = _run(
            model.server,
            tmp_path,
            tmp_path / "toy",
            "bad",
            "--gate",
            str(gates),
            "--baseline",
            str(baseline),
        )
    out = capsys.readouterr()
    assert code == 0
    assert "gate warning: case_pass = 0.667 vs baseline 1.000" in out.out
    assert "not significant" in out.out
    # The verdict line does not say "all hold" when a gate was worse than allowed.
    assert "gates: all hold" not in out.out
    assert "gates: none failed, but 2 worse than allowed but not significant" in out.out


def test_the_effect_a_gate_sees_is_bounded_by_the_metric_range():
    """A rate cannot rise above 1: "this gate sees a rise of 2.240 or more" became a
    statement that there are too few cases, with the room left."""
    from hy_eval.harness.gate._gate import _sees

    assert _sees("rise", 2.24, 0.1, False, 12) == (
        "; on 12 cases this gate would see only a rise of 2.240 (80% power), more than the "
        "0.900 left from 0.100 to 1: too few cases to gate it"
    )
    assert "drop of 0.400 or more" in _sees("drop", 0.4, 0.9, True, 400)
    assert "too few cases" in _sees("drop", 0.2, 0.143, True, 12)


def test_a_gate_with_nothing_to_test_is_untested_not_held(tmp_path, capsys):
    """A gate on a metric no shared case has (operation accuracy on a suite without
    expected operations) was a warning under "gates: all hold"."""
    suite = write_suite(tmp_path / "toy", 4)
    gates = tmp_path / "gates.toml"
    baseline = tmp_path / "baseline.json"
    gates.write_text("[metrics.operation_accuracy]\nmax_drop = 0.0\n")
    with SuiteModel(suite.cases) as model:
        _, good = _run(model.server, tmp_path, tmp_path / "toy", "good")
        assert main(["baseline", "bless", str(good), "--out", str(baseline)]) == 0
        capsys.readouterr()
        flags = ["--gate", str(gates), "--baseline", str(baseline)]
        code, run = _run(model.server, tmp_path, tmp_path / "toy", "again", *flags)
    out = capsys.readouterr().out
    assert code == 0
    assert "gate UNTESTED: operation_accuracy: no shared case has it" in out
    assert "gates: none failed, but 1 could not be tested (no shared case)" in out
    assert "all hold" not in out
    assert json.loads((run / "gates.json").read_text())["untested"]


def test_absolute_floor_fails_without_a_baseline(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy", 4)
    gates = tmp_path / "gates.toml"
    gates.write_text(
        "[metrics.attribution_accuracy]\nmin = 0.9\n[metrics.merge_violation_rate_applied]\nmax = 0.0\n"
    )
    ext = {c.id: (_broken(c) if c.id == "t-00" else perfect_extraction(c)) for c in suite.cases}
    with SuiteModel(suite.cases, ext) as model:
        code, _ = _run(model.server, tmp_path, tmp_path / "toy", "r", "--gate", str(gates))
    assert code == 1
    assert "attribution_accuracy = 0.750" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, message",
    [
        ("[metrics.accuracy]\nmin = 0.5\n", "metrics.accuracy: unknown metric"),
        ("[metrics.case_pass]\nfloor = 0.5\n", "allowed keys are max, max_drop, max_rise, min"),
        ("[metrics.case_pass]\nmin = 'high'\n", "thresholds must be numbers"),
        ("alpha = 2\n[metrics.case_pass]\nmin = 0.1\n", "alpha must be"),
        ("nonsense = 1\n[metrics.case_pass]\nmin = 0.1\n", "unknown key(s) nonsense"),
        ("[metrics.case_pass\n", "invalid TOML"),
        ("", "no [metrics.<name>] or [consistency.<name>] gate"),
        ("[consistency.shuffle]\nmin = 0.9\n", "consistency.shuffle: unknown perturbation"),
        ("[consistency.rename]\nmin = 1.5\n", "min must be a number between 0 and 1"),
        ("[consistency.rename]\nmax = 0.5\n", "the one allowed key is min"),
    ],
)
def test_bad_gates_files_exit_2_before_any_call(tmp_path, capsys, content, message):
    gates = tmp_path / "g.toml"
    gates.write_text(content)
    assert main(["--suite", "multi_speaker", "--gate", str(gates), "--limit", "1"]) == 2
    assert message in capsys.readouterr().err


def test_replay_only_with_a_changed_prompt_exits_4(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy", 2)
    cache = tmp_path / "cache.sqlite"
    cassette = tmp_path / "toy.jsonl"
    with SuiteModel(suite.cases) as model:
        common = [
            *model_args(model.server),
            "--cache",
            str(cache),
        ]
        assert (
            main(
                [
                    "cassette",
                    "record",
                    "--suite",
                    str(tmp_path / "toy"),
                    "--file",
                    str(cassette),
                    *common,
                ]
            )
            == 0
        )
        recorded = model.server.count
        fresh = tmp_path / "fresh.sqlite"
        assert main(["cassette", "import", str(cassette), "--cache", str(fresh)]) == 0
        replay = [
            "--suite",
            str(tmp_path / "toy"),
            *model_args(model.server),
            "--cache",
            str(fresh),
            "--cache-mode",
            "replay-only",
            "--quiet",
        ]
        assert main([*replay, "--out", str(tmp_path / "same")]) == 0
        capsys.readouterr()
        # The no_examples variant changes the prompt text: every answer is a miss.
        assert main([*replay, "--variant", "no_examples", "--out", str(tmp_path / "changed")]) == 4
        assert model.server.count == recorded  # nothing reached the model in replay-only
    err = capsys.readouterr().err
    assert "no cached answer in replay-only mode" in err
    assert "re-record with: hy-eval cassette record --suite" in err
    rows = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert len(rows) == recorded and all("sk-" not in json.dumps(r) for r in rows)


def test_matrix_run_over_two_variants(tmp_path, capsys):
    suite = write_suite(tmp_path / "toy", 3)
    with SuiteModel(suite.cases) as model:
        code = main(
            [
                "--suite",
                str(tmp_path / "toy"),
                *model_args(model.server),
                "--cache-mode",
                "off",
                "--quiet",
                "--variants",
                "default,no_examples",
                "--out",
                str(tmp_path / "m"),
            ]
        )
    assert code == 0
    text = (tmp_path / "m" / "matrix.md").read_text()
    assert "| metric | openai--default | openai--no_examples |" in text
    assert "| case_pass | 1.000 [0.439, 1.000] n=3 | 1.000 [0.439, 1.000] n=3 |" in text
    assert "McNemar exact p = 1.0000" in text


def test_bless_refuses_to_replace_a_baseline_over_more_cases(tmp_path, capsys):
    """A 12-case run blessed over the committed 457-case baseline replaced it without a
    word. Now fewer cases (or another matcher) is refused, one line naming both counts,
    unless ``--force``; an equal or larger run replaces it."""
    suite = write_suite(tmp_path / "toy", 6)
    baseline = tmp_path / "baseline.json"
    with SuiteModel(suite.cases) as model:
        _, full = _run(model.server, tmp_path, tmp_path / "toy", "full")
        _, small = _run(model.server, tmp_path, tmp_path / "toy", "small", "--limit", "2")
        _, keyword = _run(model.server, tmp_path, tmp_path / "toy", "kw", "--matcher", "keyword")
    assert main(["baseline", "bless", str(full), "--out", str(baseline)]) == 0
    before = baseline.read_text()
    capsys.readouterr()
    assert main(["baseline", "bless", str(small), "--out", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert "with 2 cases where it has 6" in err and "--force" in err
    assert main(["baseline", "bless", str(keyword), "--out", str(baseline)]) == 2
    assert "matcher keyword where it has strict" in capsys.readouterr().err
    assert baseline.read_text() == before
    assert main(["baseline", "bless", str(full), "--out", str(baseline)]) == 0
    assert f"baseline written: {baseline}: 6 cases (it held 6)" in capsys.readouterr().out
    assert main(["baseline", "bless", str(small), "--out", str(baseline), "--force"]) == 0
    assert len(json.loads(baseline.read_text())["cases"]) == 2
    said = capsys.readouterr()  # --force shrinking a baseline says so, not only "written"
    assert f"baseline written: {baseline}: 2 cases (it held 6)" in said.out
    assert "warning: the baseline shrank from 6 to 2 cases (--force)" in said.err
