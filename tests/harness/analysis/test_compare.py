"""``compare`` says the same thing in the terminal, in ``--json`` and on the page:
"flipped" is a case whose pass/fail verdict changed, "changed" a case with at least one
check verdict changed (flipped ones included), and the table's A and B are on the ``n``
shared cases, with each run's own headline named where the shared cases are fewer."""

import html
import json
import re

import numpy as np
import pytest
from scipy import stats

from hy_eval.cli import main
from hy_eval.harness import write_reports
from hy_eval.harness.analysis import RunOutcomes, compare, holm
from hy_eval.harness.report import comparison_text
from hy_eval.harness.report._compare_text import verdict_lines
from hy_eval.harness.runlog import CallCounts, RunManifest
from tests.harness.analysis.test_stats import _runs
from tests.harness.gate.test_gates import _run
from tests.harness.report.test_pages import write_run
from tests.harness.report.test_report import scored_record
from tests.harness.report.test_report_escaping import manifest
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel

FLIPPED = "flipped (pass/fail verdict changed): 1 case, 0 fixed by B, 1 broken by B"
CHANGED = "changed (at least one check's verdict changed, flipped ones included): 3 cases"


def _record(i, fact_ok=True, absent_ok=True, recall=None):
    """Case ``s00i`` with two checks; it passes when both do."""
    rec = scored_record(i)
    rec["score"]["passed"] = fact_ok and absent_ok
    rec["score"]["checks"] = [
        {"check": "fact", "ok": fact_ok, "detail": ""},
        {"check": "absent", "ok": absent_ok, "detail": ""},
    ]
    if recall is not None:
        rec["score"]["counts"]["fact_recall"] = recall
    return rec


@pytest.fixture
def two_runs(tmp_path):
    """Ten cases. s000-s002 fail in A. B breaks s003 (flipped), fails s001 and s002 on
    one more check (changed, not flipped), and has nothing to check for fact_recall on
    s005, so fact_recall is compared on 9 cases while A's own headline is on 10."""
    a = [_record(i, fact_ok=i > 2) for i in range(10)]
    b = [
        _record(i, fact_ok=i > 3, absent_ok=i not in (1, 2), recall=[0, 0] if i == 5 else None)
        for i in range(10)
    ]
    run_a = write_run(tmp_path / "a", a)
    run_b = write_run(tmp_path / "b", b, "other")
    summary_a = write_reports(run_a, RunManifest.model_validate(manifest()), CallCounts(), 0.0)
    return run_a, run_b, summary_a


def _compare_cli(two_runs, tmp_path, capsys):
    run_a, run_b, _ = two_runs
    out_json, out_html = tmp_path / "cmp.json", tmp_path / "cmp.html"
    capsys.readouterr()
    args = ["compare", str(run_a), str(run_b), "--json", str(out_json), "--html", str(out_html)]
    assert main(args) == 0
    text = capsys.readouterr().out
    page = out_html.read_text(encoding="utf-8")
    # The page's visible words: tags dropped, entities decoded, the data block left out.
    page = page[: page.index('<script type="application/json"')]
    page_text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))
    return text, json.loads(out_json.read_text()), page_text


def test_the_terminal_table_has_n_and_says_a_and_b_are_on_the_shared_cases(
    two_runs, tmp_path, capsys
):
    text, result, _ = _compare_cli(two_runs, tmp_path, capsys)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("metric"))
    assert lines[head].split()[:4] == ["metric", "n", "A", "B"]
    assert lines[head - 1] == (
        "A and B are on the n shared cases that count for the metric in both runs:"
    )
    rows = {line.split()[0]: line.split() for line in lines[head + 1 : head + 15]}
    recall = result["metrics"]["fact_recall"]
    assert rows["fact_recall"][1:4] == ["9", f"{recall['a']:.3f}", f"{recall['b']:.3f}"]
    assert rows["case_pass"][1] == "10"
    # A's own headline is its summary.json's value, on all ten cases, named under the table.
    own = two_runs[2].metrics["fact_recall"]
    assert own.n == recall["own"]["a"]["n"] == 10
    assert recall["own"]["a"]["value"] == pytest.approx(own.value)
    assert f"{own.value:.3f}" != f"{recall['a']:.3f}"  # the two differ here
    assert (
        f"  fact_recall: A {own.value:.3f} on 10 cases, "
        f"B {recall['own']['b']['value']:.3f} on 9 cases (n 9 in the table)"
    ) in lines
    assert "each run's own headline (its summary.json, all its cases)" in text


def test_flipped_and_changed_are_counted_alike_in_terminal_json_and_page(
    two_runs, tmp_path, capsys
):
    text, result, page = _compare_cli(two_runs, tmp_path, capsys)
    # One meaning of "flipped" in the terminal: the pass/fail line, and the changed line
    # saying that it includes them (the page's path holds the test's name).
    lines = [x for x in text.splitlines() if not x.startswith("comparison page: ")]
    words = [line for line in lines if "flipped" in line]
    assert words == [FLIPPED + "; McNemar exact p = 1.0000", CHANGED]
    assert "  changed s001: absent#0" in text
    assert result["flipped_count"] == len(result["flipped"]) == 1
    assert result["changed_count"] == 3
    assert result["consistency"]["changed_count"] == 3
    assert "flipped" not in json.dumps(result["consistency"])
    # The page: the same sentences, so the same numbers in the same words.
    assert FLIPPED in page and CHANGED in page
    assert "A and B are on the n shared cases that count for the metric in both runs." in page
    assert "fact_recall: A 0." in page and "on 10 cases" in page and "(n 9 in the table)" in page
    for line in text.splitlines():
        if line.startswith(("flipped (", "changed (", "  fact_recall: A ")):
            assert line.strip() in page


def test_a_p_value_below_0_001_reads_below_0_001_in_the_terminal_and_on_the_page():
    """300 cases broken, none fixed: McNemar's exact p is about 1e-90, which four
    decimals printed as 0.0000; the JSON keeps the number."""
    a_pass = [True] * 300 + [True] * 200
    b_pass = [False] * 300 + [True] * 200
    res = compare(*_runs(a_pass, b_pass), samples=200)
    assert 0 < res.mcnemar.p_value < 1e-80
    res.p_holm = 3 * res.mcnemar.p_value  # as a matrix run sets it
    text = comparison_text(res)
    assert "0.0000" not in text
    flipped = "flipped (pass/fail verdict changed): 300 cases, 0 fixed by B, 300 broken by B"
    assert flipped + "; McNemar exact p < 0.001 (Holm-adjusted < 0.001)" in text.splitlines()
    # The page prints the same sentence (verdict_lines) and its metric table the same
    # words for p (the table's p column here, from the same helper).
    assert verdict_lines(res)[0] in text.splitlines()
    row = next(line for line in text.splitlines() if line.startswith("case_pass"))
    assert row.count("< 0.001") == 2  # p and p_holm
    assert res.to_data()["mcnemar"]["p_value"] == res.mcnemar.p_value


def test_label_names_the_runs_on_the_page_and_one_label_alone_is_refused(
    two_runs, tmp_path, capsys
):
    """One --label is refused before anything is computed: one line, exit 2, no text on
    the terminal and no --json or --html file written. Two name A and B on the page."""
    run_a, run_b, _ = two_runs
    out_json, out_html = tmp_path / "cmp.json", tmp_path / "cmp.html"
    args = ["compare", str(run_a), str(run_b), "--json", str(out_json), "--html", str(out_html)]
    capsys.readouterr()
    assert main([*args, "--label", "old prompt"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        "hy-eval: error: --label names both runs: give it twice, for A then for B"
    ]
    assert not out_json.exists() and not out_html.exists()
    assert main([*args, "--label", "old prompt", "--label", "new <prompt>"]) == 0
    page = out_html.read_text(encoding="utf-8")
    assert "<h1>B = new &lt;prompt&gt; vs A = old prompt</h1>" in page
    assert "<title>hy_eval: B = new &lt;prompt&gt; vs A = old prompt</title>" in page


def test_a_baseline_without_check_verdicts_has_no_changed_count():
    counts = {f"c{i}": {"case_pass": (float(i % 2), 1.0)} for i in range(6)}
    passed = {k: bool(v["case_pass"][0]) for k, v in counts.items()}
    flipped = {**passed, "c1": False}
    a = RunOutcomes("A", "h", counts, passed)
    b = RunOutcomes("B", "h", {**counts, "c1": {"case_pass": (0.0, 1.0)}}, flipped)
    result = compare(a, b, samples=200)
    assert result.changed_count is None and result.flipped_count == 1
    text = comparison_text(result)
    assert FLIPPED in text and "changed (" not in text
    assert result.metrics["case_pass"].own.a.to_data() == {"value": 0.5, "n": 6}


# -- the statistics of a comparison, and what it refuses -------------------------------


def test_compare_stars_on_holm_adjusted_p_and_says_so():
    rng = np.random.default_rng(7)
    n = 150
    extra = {
        m: ((rng.random(n) < 0.5).astype(int), (rng.random(n) < 0.5).astype(int))
        for m in ("profile_name_accuracy", "parse_failure_rate", "error_rate", "fallback_rate")
    }
    a, b = _runs(rng.random(n) < 0.5, rng.random(n) < 0.4, extra)
    res = compare(a, b)
    tested = [m for m, e in res.metrics.items() if e.p_value is not None]
    assert len(tested) == 5
    adjusted = holm([res.metrics[m].p_value for m in tested])
    for m, p in zip(tested, adjusted, strict=True):
        e = res.metrics[m]
        assert e.p_adjusted == pytest.approx(p)
        assert e.significant == (p < 0.05)
        assert e.significant_unadjusted == (e.p_value < 0.05)
        assert e.mde > 0
    text = comparison_text(res)
    assert "* = Holm-adjusted p (p_holm) < 0.05 across the 5 metrics compared" in text
    assert "p_holm" in text and "MDE" in text


def test_compare_at_scale_runs_exact_mcnemar():
    # 1,100 discordant cases: the old 2.0**n overflowed and `hy-eval compare` crashed.
    a_pass = [True] * 600 + [False] * 500 + [True] * 900
    b_pass = [False] * 600 + [True] * 500 + [True] * 900
    res = compare(*_runs(a_pass, b_pass), samples=200)
    assert res.mcnemar.p_value == pytest.approx(stats.binomtest(500, 1100).pvalue, rel=1e-9)
    assert len(res.metrics["case_pass"].worse_cases) == 600


def test_compare_refuses_different_datasets(tmp_path, capsys):
    a_suite = write_suite(tmp_path / "a", 3)
    b_suite = write_suite(tmp_path / "b", 4)
    with SuiteModel(a_suite.cases) as model:
        _, run_a = _run(model.server, tmp_path, tmp_path / "a", "ra")
    with SuiteModel(b_suite.cases) as model:
        _, run_b = _run(model.server, tmp_path, tmp_path / "b", "rb")
    capsys.readouterr()
    assert main(["compare", str(run_a), str(run_b)]) == 2
    assert "different datasets" in capsys.readouterr().err
    assert main(["compare", str(run_a), str(run_b), "--common-only"]) == 0
    assert "on 3 shared cases" in capsys.readouterr().out
