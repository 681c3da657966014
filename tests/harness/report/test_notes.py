"""What a newcomer reads beside the numbers: the embedded model's figures
are a floor, a one-language run says so, every metric is defined where the numbers are
shown; a partial run's wall time reads unknown, never 0.0 s (item 7)."""

import json
import re
from pathlib import Path

from hy_eval.harness import terminal_summary, write_reports
from hy_eval.harness.report._notes import EMBEDDED_MODEL, MEANINGS, reading_notes
from hy_eval.harness.runlog import (
    CallCounts,
    PartialRun,
    RunManifest,
    RunSummary,
    read_summary,
)
from hy_eval.harness.scoring import METRICS
from hy_eval.llm.local._local import DEFAULT_LOCAL_MODEL
from tests.harness.report.test_report import scored_record

ROOT = Path(__file__).resolve().parents[3]


def _run(tmp_path, model, langs=("en",), partial=False):
    records = []
    for i, lang in enumerate(langs):
        rec = scored_record(i)
        rec["lang"] = lang
        records.append(rec)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = {
        "suite": "toy",
        "provider": "local",
        "model": model,
        "params": {"variant": "default", "guard": True},
        "dataset_hash": "d" * 64,
        "git": {"commit": "c", "dirty": False},
    }
    done = PartialRun(cases_done=len(records), cases_planned=5) if partial else None
    write_reports(tmp_path, RunManifest.model_validate(manifest), CallCounts(), 0.0, partial=done)
    summary = read_summary(tmp_path)
    assert summary is not None
    return summary


def test_every_metric_has_a_meaning_and_docs_define_it():
    assert set(MEANINGS) == set(METRICS)
    table = (ROOT / "docs" / "metrics.md").read_text("utf-8")
    for name in METRICS:
        assert f"| `{name}` |" in table, name
    assert EMBEDDED_MODEL == DEFAULT_LOCAL_MODEL


def test_the_embedded_model_is_called_a_floor_everywhere(tmp_path):
    summary = _run(tmp_path, DEFAULT_LOCAL_MODEL, langs=("en", "zh"))
    notes = reading_notes(summary)
    assert len(notes) == 1 and "a floor" in notes[0]
    assert notes[0] in terminal_summary(summary, tmp_path)
    assert notes[0] in (tmp_path / "report.md").read_text("utf-8")
    page = (tmp_path / "report.html").read_text("utf-8")
    assert "a floor that shows the pipeline runs offline" in page
    for name, meaning in MEANINGS.items():  # the page defines every metric
        assert re.search(
            rf"<code>{name}</code></td><td>{re.escape(meaning)}", page.replace("&#39;", "'")
        ), name
    assert "- `case_pass`: cases whose every check holds" in (tmp_path / "report.md").read_text()


def test_a_one_language_run_says_so_and_another_model_is_no_floor(tmp_path):
    summary = _run(tmp_path, "gpt-4o-mini", langs=("en", "en"))
    notes = reading_notes(summary)
    assert notes == [
        "All 2 cases are English (lang=en): these figures say nothing of the suite's other "
        "language; --sample N spreads N cases over every file."
    ]
    assert notes[0] in terminal_summary(summary, tmp_path)
    assert reading_notes(RunSummary()) == []


def test_a_partial_run_reads_wall_time_unknown(tmp_path):
    _run(tmp_path, "gpt-4o-mini", langs=("en", "zh"), partial=True)
    md = (tmp_path / "report.md").read_text("utf-8")
    page = (tmp_path / "report.html").read_text("utf-8")
    assert "Wall time unknown." in md and "Wall time 0.0 s" not in md
    assert "Wall time unknown." in page and "Wall time 0.0 s" not in page
