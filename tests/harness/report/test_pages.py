"""The workbench pages without a browser (E7): ``cases_frame``, the
comparison page from the CLI, the fact-level diff, and CI entries read defensively."""

import json
import math

import pytest

from hy_eval.cli import main
from hy_eval.harness import METRICS, cases_frame, write_reports
from hy_eval.harness.analysis import fmt_ratio
from hy_eval.harness.report import metric_row
from hy_eval.harness.runlog import CallCounts, MetricEntry, RunFolderError, RunManifest
from tests.harness.report.test_report import scored_record
from tests.harness.report.test_report_escaping import embedded_data, manifest


def write_run(folder, records, variant="default"):
    folder.mkdir()
    (folder / "manifest.json").write_text(
        json.dumps({**manifest("m", variant), "params": {"variant": variant, "guard": True}})
    )
    (folder / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_cases_frame_gives_one_row_per_case_and_repeat_with_scores(tmp_path):
    """Rows in order of id and repeat; each metric's value and counts; the sums
    of a group give the summary's micro average."""
    records = [scored_record(i, r) for i in range(20) for r in (1, 0)]
    run = write_run(tmp_path / "run", records)
    summary = write_reports(run, RunManifest.model_validate(manifest()), CallCounts(), 0.0)
    df = cases_frame(run)
    assert len(df) == 40
    assert list(df["id"][:3]) == ["s000", "s000", "s001"] and list(df["repeat"][:2]) == [0, 1]
    assert {"lang", "rules", "tags", "passed", "failing_checks", *METRICS} <= set(df.columns)
    row = df[(df["id"] == "s005") & (df["repeat"] == 1)].iloc[0]
    assert row["attribution_accuracy"] == pytest.approx(1 / 3)  # counts [5 % 4, 3]
    assert row["rules"] == ["A1", "P2"] and row["lang"] == "en"
    assert math.isnan(row["owner_accuracy"])  # no count: the case does not count
    num, den = df["fact_recall_num"].sum(), df["fact_recall_den"].sum()
    assert num / den == pytest.approx(summary.metrics["fact_recall"].value)


def test_cases_frame_of_a_folder_without_cases_is_one_clear_error(tmp_path):
    with pytest.raises(RunFolderError, match="not a run folder"):
        cases_frame(tmp_path)


def test_compare_html_writes_the_comparison_page(tmp_path, capsys):
    """``hy-eval compare A B --html OUT``: the flipped case is in the page's data
    with both records and the fact-level diff."""
    a_recs = [scored_record(i) for i in range(6)]
    b_recs = [scored_record(i) for i in range(6)]
    flipped = next(r for r in b_recs if r["score"]["passed"])
    flipped["score"] = {**flipped["score"], "passed": False}
    flipped["score"]["facts"] = [{"text": "<b>new</b>", "owner": "user", "subject": "user"}]
    a, b = write_run(tmp_path / "a", a_recs), write_run(tmp_path / "b", b_recs, "other")
    out = tmp_path / "cmp.html"
    assert main(["compare", str(a), str(b), "--html", str(out)]) == 0
    assert f"comparison page: {out}" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert (
        "<b>new</b>" not in page
        and "flipped (pass/fail verdict changed): 1 case, 0 fixed by B, 1 broken by B" in page
    )
    data = embedded_data(page)
    assert [f["id"] for f in data["changed"]] == [flipped["id"]]
    entry = data["changed"][0]
    assert entry["change"] == "broken" and entry["b"]["facts"][0]["text"] == "<b>new</b>"
    assert entry["a"]["passed"] and not entry["b"]["passed"]


def test_compare_html_to_a_folder_that_does_not_exist_is_one_line(tmp_path, capsys):
    a = write_run(tmp_path / "a", [scored_record(i) for i in range(3)])
    code = main(["compare", str(a), str(a), "--html", str(tmp_path / "no" / "x.html")])
    assert code == 2
    assert "cannot write the page" in capsys.readouterr().err


def test_ci_entries_are_read_defensively():
    """A CI entry may gain keys or lack a CI; the summary's model reads it and the page
    still shows the value."""
    data = {"value": 0.5, "ci": [0.25, 0.75], "n": 4, "method": "bca", "ci_90": [0.3, 0.7]}
    entry = MetricEntry.model_validate(data)
    assert fmt_ratio(entry) == "0.500 [0.250, 0.750]"
    assert metric_row("case_pass", entry)["bar"] == {"lo": 25.0, "width": 50.0, "value": 50.0}
    bare = MetricEntry.model_validate({"value": 0.5})
    assert fmt_ratio(bare) == "0.500" and metric_row("x", bare)["ci"] == ""
    assert metric_row("x", None)["text"] == "n/a"
    few = MetricEntry.model_validate({**data, "small_n": True})
    assert metric_row("case_pass", few)["few"] == "n=4, few cases"
    assert metric_row("case_pass", entry)["few"] == ""
    assert fmt_ratio(few) == "0.500 [0.250, 0.750] (n=4, few cases)"
