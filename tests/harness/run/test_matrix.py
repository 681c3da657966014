"""The matrix's pure parts (``hy_eval.harness.run._matrix``); a whole matrix run through the
CLI is in ``test_gates.py::test_matrix_run_over_two_variants``."""

from pathlib import Path

import pytest

from hy_eval.harness import MatrixEntry, MatrixResult, RunConfig, RunError, run_matrix
from hy_eval.harness.run import combination_name, flipped_sections, metric_table
from hy_eval.harness.runlog import Comparison, MetricEntry, RunSummary
from hy_eval.harness.scoring import METRICS
from hy_eval.llm import ModelSpec


def entry(name, value, tokens=(300, 100), cases=4):
    metrics = {m: {"value": value} for m in METRICS}
    metrics["fact_recall"] = {"value": None}
    summary = {
        "metrics": metrics,
        "tokens": {"input": tokens[0], "output": tokens[1]},
        "cases": cases,
    }
    return MatrixEntry(name, Path(name), RunSummary.model_validate(summary), 0)


def test_combination_names_are_folder_names():
    assert combination_name(ModelSpec.parse("local"), "default") == "local--default"
    spec = ModelSpec.parse("openai:org/model:v1")
    assert combination_name(spec, "no_examples") == "openai_org_model_v1--no_examples"


def test_metric_table_has_a_row_per_metric_and_tokens_per_case():
    lines = metric_table([entry("a--default", 0.5), entry("b--default", 0.75)])
    assert lines[0] == "| metric | a--default | b--default |"
    assert "| case_pass | 0.500 | 0.750 |" in lines
    assert "| fact_recall | n/a | n/a |" in lines
    assert lines[-1] == "| tokens per case | 100 | 100 |"
    assert len(lines) == 2 + len(METRICS) + 1


def test_metric_table_shows_the_interval_and_n_and_what_is_not_measured():
    with_ci = entry("a", 0.5)
    with_ci.summary.metrics["case_pass"] = MetricEntry(value=0.5, ci=(0.25, 0.75), n=4)
    with_ci.summary.not_measured = ["fact_recall"]
    lines = metric_table([with_ci, entry("b", 0.75)])
    assert "| case_pass | 0.500 [0.250, 0.750] n=4 | 0.750 |" in lines
    assert "| fact_recall | n/m | n/a |" in lines


def test_flipped_cases_link_both_reports():
    result = MatrixResult(Path("."), [entry("a", 1.0), entry("b", 0.5)])  # runs in root
    diff = {
        "values_changed": {
            "root['facts'][0]": {},
            "root['facts'][1]": {},
            "root['basic_info']": {},
        },
        "iterable_item_removed": {"root['operations'][2]": ["ADD", 2, []]},
    }
    flipped = [{"id": "c1", "change": "broken", "diff": diff}]
    result.comparisons = [Comparison.model_validate({"a": "a", "b": "b", "flipped": flipped})]
    text = "\n".join(flipped_sections(result))
    assert "### Flipped cases: b against a" in text
    assert "[compare-b.html](compare-b.html)" in text
    # What changed in a user's words, not deepdiff's (values_changed, iterable_item_removed).
    changed = "facts: 2 changed; operations: 1 removed; profile changed"
    assert f"| c1 | broken | [A](a/report.html#c1) / [B](b/report.html#c1) | {changed} |" in text


def test_the_worst_exit_code_is_the_matrix_code():
    entries = [entry("a", 1.0), MatrixEntry("b", Path("b"), {}, 3)]
    assert MatrixResult(Path("m"), entries).code == 3


def test_a_matrix_without_models_is_refused(tmp_path):
    with pytest.raises(RunError, match="at least one model"):
        run_matrix(RunConfig(), [], ["default"], tmp_path)


def test_finished_runs_are_tabulated_side_by_side(tmp_path):
    """``table``: runs made apart, compared with the first, written as a matrix."""
    import shutil

    from hy_eval.harness.run import RunError, tabulate_runs

    data = Path(__file__).parents[2] / "data" / "runlog_v1"
    for name in ("a", "b"):
        shutil.copytree(data / "run", tmp_path / "runs" / name)
    result = tabulate_runs([tmp_path / "runs" / "a", tmp_path / "runs" / "b"], tmp_path / "t")
    text = (tmp_path / "t" / "matrix.md").read_text()
    assert text.startswith("| metric | a | b |")
    # A metric added after these summaries were written reads n/a, not a crash.
    assert "| echoed_subject_rate | n/a | n/a |" in text
    assert len(result.comparisons) == 1 and result.comparisons[0].flipped == []
    assert (tmp_path / "t" / "compare-b.html").is_file()
    assert (tmp_path / "t" / "matrix.json").is_file()
    with pytest.raises(RunError, match="no summary.json"):
        tabulate_runs([tmp_path / "runs" / "a", tmp_path], tmp_path / "again")
    with pytest.raises(RunError, match="different matchers"):
        tabulate_runs([tmp_path / "runs" / "a", data / "kw"], tmp_path / "again")
