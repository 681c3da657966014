"""The run folder's one owner (``runlog/``): records written by the runner read back the
same, a torn or doubled line is repaired, old folders still read, the suite kind comes
from data, and the report and the comparison count k of n repeats alike."""

import json

import pytest

from hy_eval.harness.analysis import _aggregate, run_outcomes
from hy_eval.harness.datasets import DatasetError, load_suite, suite_kind
from hy_eval.harness.runlog import (
    SCHEMA_VERSION,
    CaseRecord,
    RecordWriter,
    RunFolderError,
    RunManifest,
    read_manifest,
    read_records,
    repair_records,
    write_manifest,
)
from hy_eval.harness.scoring import METRICS


def record(case_id, repeat=0, passed=True, **kw):
    counts = {m: [0, 0] for m in METRICS}
    counts["case_pass"] = [int(passed), 1]
    counts["fact_recall"] = [int(passed), 1]
    return {
        "id": case_id,
        "repeat": repeat,
        "lang": "en",
        "rules": ["A1"],
        "tags": ["t"],
        "status": "ok",
        "error": None,
        "score": {"passed": passed, "counts": counts, "checks": [], "confusion": []},
        **kw,
    }


def manifest(**params):
    return RunManifest(suite="toy", provider="openai", model="m", params={"variant": "v", **params})


def test_an_error_record_leaves_out_the_pipeline_fields_and_reads_back_equal(tmp_path):
    rec = CaseRecord(id="c1", lang="zh", status="error", error="timeout: x", score={})
    line = rec.to_line()
    assert list(json.loads(line)) == ["id", "lang", "status", "error", "score"]
    path = tmp_path / "cases.jsonl"
    writer = RecordWriter(path)
    writer.write_line(line)
    writer.close()
    (back,) = read_records(path)
    assert back == rec and back.key == "c1#0" and back.facts == [] and back.rendered is None


def test_fields_the_model_does_not_name_are_kept(tmp_path):
    rec = CaseRecord.model_validate({**record("c1"), "new_field": {"a": 1}})
    assert json.loads(rec.to_line())["new_field"] == {"a": 1}


def test_repair_drops_a_torn_line_a_bad_line_and_a_duplicate(tmp_path):
    path = tmp_path / "cases.jsonl"
    a, b = json.dumps(record("a")), json.dumps(record("b"))
    path.write_text(f"{a}\nnot json\n{b}\n{a}\n{b[:20]}", encoding="utf-8")
    assert repair_records(path) == {"a#0", "b#0"}
    assert path.read_text(encoding="utf-8") == f"{a}\n{b}\n"
    before = path.stat().st_mtime_ns
    assert repair_records(path) == {"a#0", "b#0"}
    assert path.stat().st_mtime_ns == before  # nothing to repair: not rewritten


def test_a_manifest_without_schema_version_reads_as_version_one(tmp_path):
    write_manifest(tmp_path, manifest(pass_k=None))
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    del data["schema_version"]
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    assert read_manifest(tmp_path).schema_version == 1
    (tmp_path / "manifest.json").write_text("[1]")
    with pytest.raises(RunFolderError, match="not a run manifest"):
        read_manifest(tmp_path)


def test_report_and_comparison_count_k_of_n_repeats_alike(tmp_path):
    # a passes 2 of 3, b 3 of 3, c 0 of 3; with --pass-k 2: a and b pass, c fails.
    verdicts = {"a": [True, False, True], "b": [True] * 3, "c": [False] * 3}
    lines = [
        json.dumps(record(cid, r, ok)) + "\n"
        for cid, oks in verdicts.items()
        for r, ok in enumerate(oks)
    ]
    (tmp_path / "cases.jsonl").write_text("".join(reversed(lines)), encoding="utf-8")
    write_manifest(tmp_path, manifest(pass_k=2))
    rows = _aggregate.RecordRows()
    for rec in read_records(tmp_path / "cases.jsonl"):
        rows.add(rec)
    table = _aggregate.case_table(rows, 2)
    report = dict(zip(table["id"], table["passed"], strict=True))
    outcomes = run_outcomes(tmp_path)
    assert report == outcomes.passed == {"a": True, "b": True, "c": False}
    assert outcomes.counts["a"]["fact_recall"] == (2.0, 3.0)  # summed over repeats
    assert outcomes.counts["a"]["case_pass"] == (1.0, 1.0)  # the k-of-n verdict
    assert _aggregate.passes_k_of_n(2, 3, None) is False


def test_the_suite_kind_is_declared_in_data(tmp_path):
    assert load_suite("history").kind == "history"
    assert suite_kind("multi_speaker") == "memory"
    folder = tmp_path / "history"  # the folder's name plays no part
    folder.mkdir()
    assert suite_kind(folder) == "memory"
    (folder / "suite.toml").write_text('kind = "histories"\n')
    with pytest.raises(DatasetError, match="suite.toml:0: kind"):
        suite_kind(folder)


def test_a_line_that_is_no_case_record_is_one_line_naming_the_field(tmp_path):
    """A typed score refuses ``passed: 1``; the reader says where in one line (file,
    line, field), never a pydantic report quoting the value."""
    from tests.harness.report.test_report import scored_record

    good, bad = scored_record(1), scored_record(2)
    bad["score"]["passed"] = 1
    bad["error"] = "\x1b]52;c;planted\x07" * 50
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RunFolderError) as err:
        list(read_records(path))
    message = str(err.value)
    assert message == f"{path}:2: not a case record: score.passed: input should be a valid boolean"
