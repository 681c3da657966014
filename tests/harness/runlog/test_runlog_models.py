"""Every file a run writes or reads has one pydantic model in ``runlog`` (rule E2), and
run folders written before the models (``tests/data/runlog_v1``, made by the code of
6df52f2 with ``make.py`` beside it) still read through them: each file comes out byte for
byte as it was (apart from the ``schema_version`` the models add), and the reports,
comparisons and gates computed again from the old folders are the old ones."""

import json
import re
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

import hy_eval.harness.runlog as runlog
from hy_eval.cli import main
from hy_eval.harness.analysis import compare, perturbation_section, run_outcomes
from hy_eval.harness.gate import apply_gates, load_gates
from hy_eval.harness.report import add_perturbations, comparison_text, report_folder
from hy_eval.harness.runlog import (
    Baseline,
    Comparison,
    RunFolderError,
    RunSummary,
    ScoreRecord,
    read_baseline,
    read_comparison,
    read_gates_file,
    read_perturb_file,
    read_records,
    read_run,
    read_summary,
)
from hy_eval.harness.scoring import _matching

ROOT = Path(__file__).resolve().parents[3]
OLD = ROOT / "tests" / "data" / "runlog_v1"
#: Where make.py wrote the folders (the paths inside their reports).
MADE_IN = "/tmp/rl/gen/work"


def _models() -> list[type[BaseModel]]:
    return [v for v in vars(runlog).values() if isinstance(v, type) and issubclass(v, BaseModel)]


def without_version(data):
    """The data as the code before the models wrote it (JSON data, no
    ``schema_version``)."""
    return json.loads(json.dumps({k: v for k, v in data.items() if k != "schema_version"}))


def test_every_field_of_every_model_says_what_it_is_and_files_have_a_version():
    for model in _models():
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
    files = {m for m in _models() if issubclass(m, runlog.RunFile)}
    assert {m.__name__ for m in files} >= {
        "RunSummary",
        "PerturbFile",
        "GatesFile",
        "Baseline",
        "Comparison",
        "MatrixFile",
    }
    for model in files:
        data = model.model_construct().to_data()
        assert next(iter(data)) == "schema_version", model.__name__


@pytest.fixture
def old(tmp_path):
    """A copy of the old folders (reports are written into it)."""
    shutil.copytree(OLD, tmp_path / "old")
    return tmp_path / "old"


def test_old_files_read_through_the_models_and_write_back_as_they_were(old):
    run = old / "run"
    for folder in (run, run / "perturb" / "rename", old / "kw"):
        lines = (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        records = list(read_run(folder).records())
        assert [r.to_line() for r in records] == lines
        assert all(isinstance(r.score, ScoreRecord) and r.score.checks for r in records)
        summary = read_summary(folder)
        assert isinstance(summary, RunSummary) and summary.cases == 7
        text = (folder / "summary.json").read_text(encoding="utf-8")
        data = without_version(summary.to_data())
        assert json.dumps(data, ensure_ascii=False, indent=2) + "\n" == text
    summary = read_summary(run)
    section = summary.perturbations["rename"]
    assert section.consistency.value < 1 and section.changed_cases[0].changed
    assert section.changed_cases_count == 3
    perturb = read_perturb_file(run / "perturb" / "rename")
    assert perturb.perturbation == "rename" and perturb.cases["p-00"].subjects["user"] == "user"
    assert without_version(perturb.to_data()) == json.loads(
        (run / "perturb" / "rename" / "perturb.json").read_text(encoding="utf-8")
    )
    gates = read_gates_file(run)
    assert gates.failures and gates.comparison.metric("case_pass").worse_test.method == "McNemar"
    gates_text = (run / "gates.json").read_text()
    assert json.dumps(without_version(gates.to_data()), ensure_ascii=False, indent=1) == gates_text
    for name in ("cmp.json", "cmp-perturb.json"):
        cmp = read_comparison(old / name)
        cmp_text = (old / name).read_text()
        assert json.dumps(without_version(cmp.to_data()), ensure_ascii=False, indent=1) == cmp_text
    baseline = read_baseline(old / "baseline.json")
    assert baseline.matcher == "strict" and baseline.cases["t-00"].passed is False
    text = json.dumps(without_version(baseline.to_data()), indent=1, sort_keys=True) + "\n"
    assert text == (old / "baseline.json").read_text()


def test_the_committed_baseline_still_reads():
    path = ROOT / "reports" / "baselines" / "multi_speaker.json"
    baseline = read_baseline(path)
    assert isinstance(baseline, Baseline) and len(baseline.cases) == 457
    on_disk = path.read_text(encoding="utf-8")
    data = baseline.to_data()
    if "schema_version" not in json.loads(on_disk):  # blessed before the typed files
        data = without_version(data)
    text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True)
    assert text + "\n" == on_disk


def test_an_old_folder_reports_again_as_it_was(old, monkeypatch):
    # The matcher's measured quality is the old summary's (quality.json may be re-measured).
    kw = old / "kw"
    was = json.loads((kw / "summary.json").read_text(encoding="utf-8"))
    quality = read_summary(kw).matcher_quality
    monkeypatch.setattr(_matching, "quality_of", lambda name, model=None: quality)
    report_md = (kw / "report.md").read_text(encoding="utf-8")
    summary = report_folder(kw)
    now = without_version(json.loads((kw / "summary.json").read_text(encoding="utf-8")))
    assert _without_new_metrics(now) == was
    assert _without_new_metrics(without_version(summary.to_data())) == was
    assert _without_new_lines((kw / "report.md").read_text(encoding="utf-8")) == report_md.replace(
        f"{MADE_IN}/kw", str(kw)
    )


def test_an_old_metamorphic_run_gets_its_sections_and_gates_again(old, monkeypatch):
    run = old / "run"
    was = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    old_md = (run / "report.md").read_text(encoding="utf-8")
    quality = read_summary(run).matcher_quality
    monkeypatch.setattr(_matching, "quality_of", lambda name, model=None: quality)
    summary = report_folder(run)  # a report of the records alone: no perturbation section
    assert summary.perturbations == {}
    section = perturbation_section(run, summary, run / "perturb" / "rename")
    add_perturbations(run, summary, {"rename": section})
    now = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert _without_new_metrics(without_version(now)) == was
    assert _without_new_lines((run / "report.md").read_text(encoding="utf-8")) == old_md.replace(
        f"{MADE_IN}/run", str(run)
    )
    (run / "gates.json").rename(run / "gates.old.json")
    verdict = apply_gates(load_gates(old / "gates.toml"), summary, run, old / "baseline.json")
    assert not verdict.passed
    old_gates = json.loads((run / "gates.old.json").read_text())
    new_gates = _without_new_metrics(without_version(json.loads(verdict.path.read_text())))
    assert _without_paired_cis(new_gates["comparison"]) == _without_paired_cis(
        old_gates["comparison"]
    )
    new_gates.pop("comparison"), old_gates.pop("comparison")
    assert new_gates == old_gates
    told = (old / "run.txt").read_text(encoding="utf-8")
    assert all(line in told.splitlines() for line in verdict.text.splitlines())


@pytest.mark.parametrize(
    ("name", "a", "b", "mixed"),
    [("cmp", "kw", "run", True), ("cmp-perturb", "run", "run/perturb/rename", False)],
)
def test_old_folders_compare_as_they_did(old, name, a, b, mixed, monkeypatch):
    # compare names the matcher's quality from today's quality.json: give it the one the
    # old folders were scored with, so a re-measured benchmark does not fail this test.
    quality = read_summary(old / "run").matcher_quality
    monkeypatch.setattr(_matching, "quality_of", lambda name, model=None: quality)
    result = compare(run_outcomes(old / a), run_outcomes(old / b), mixed_matchers=mixed)
    was = json.loads((old / f"{name}.json").read_text())
    now_data = _without_new_metrics(without_version(result.to_data()))
    assert _without_paired_cis(now_data) == _without_paired_cis(was)
    text = (old / f"{name}.txt").read_text(encoding="utf-8")
    now = _without_new_lines(comparison_text(result) + "\n")
    assert _PAIRED_CI.sub("[ci]", now) == _PAIRED_CI.sub("[ci]", text)


#: Lines the reports gained since the old folders were made: the reading notes, the
#: metrics' meanings in report.md, the comparison's verdict and prompt-files lines.
_NEW_LINES = re.compile(
    r"^(\*\*All \d+ cases are .*\*\*\n\n|\*\*These figures come from the embedded.*\*\*\n\n"
    r"|Verdict: .*\n|Prompt files.*\n)",
    re.M,
)
_MEANINGS = re.compile(
    r"\nWhat each metric counts \(docs/metrics.md has the rules\):\n\n(- `.*\n)+"
)


#: Metrics added since the old folders were made: a report made again today has them
#: (nothing counted: n/a, n 0), the old files do not.
NEW_METRICS = ("echoed_subject_rate",)
_NEW_METRIC_LINES = re.compile(rf"^.*\b(?:{'|'.join(NEW_METRICS)})\b.*\n", re.M)


def _without_new_metrics(data):
    """JSON data made today, less the entries of ``NEW_METRICS`` wherever they are keys."""
    if isinstance(data, dict):
        return {k: _without_new_metrics(v) for k, v in data.items() if k not in NEW_METRICS}
    if isinstance(data, list):
        return [_without_new_metrics(v) for v in data]
    return data


def _without_new_lines(text):
    """A report made today, less what reports gained since the old folders were made."""
    return _NEW_METRIC_LINES.sub("", _MEANINGS.sub("", _NEW_LINES.sub("", text)))


#: A paired B - A interval as the comparison table prints it ([-0.250, +0.000]).
_PAIRED_CI = re.compile(r"\[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]")


def _without_paired_cis(comparison):
    """A comparison's data without the paired CIs of B - A: they are the score
    interval's now (docs/metrics.md), the old files' the percentile
    bootstrap's (often [0, 0] on these few cases). Each new CI still holds the
    difference, and everything else must be as it was."""
    comparison = json.loads(json.dumps(comparison))
    # A field added since (the prompt files that differ): the same prompts here.
    assert comparison.pop("prompts_changed", []) == []
    for entry in comparison["metrics"].values():
        lo, hi = entry.pop("ci")
        if entry.get("diff") is not None:
            assert lo <= entry["diff"] <= hi, (lo, entry["diff"], hi)
    return comparison


def test_a_comparison_written_by_the_cli_reads_back(old, tmp_path, capsys):
    out = tmp_path / "c.json"
    args = ["compare", str(old / "run"), str(old / "run/perturb/rename"), "--json", str(out)]
    assert main(args) == 0
    data = json.loads(out.read_text())
    assert next(iter(data)) == "schema_version"
    assert read_comparison(out).consistency.changed_cases_count == 3


def test_a_matrix_holm_p_is_written_last(old):
    cmp = read_comparison(old / "cmp.json")
    cmp.p_holm = 0.5
    assert list(cmp.to_data())[-1] == "p_holm"
    assert isinstance(cmp, Comparison)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not a readable perturbation file (json: invalid JSON"),
        ('{"cases": []}', "not a perturbation file (cases: input should be a valid dictionary"),
        ('{"cases": {"c": {"subjects": {"x": 1}}}}', "(cases.c.subjects.x: input should be"),
    ],
)
def test_a_bad_perturb_file_is_one_line(old, capsys, text, problem):
    sub = old / "run" / "perturb" / "rename"
    (sub / "perturb.json").write_text(text, encoding="utf-8")
    with pytest.raises(RunFolderError, match="perturb.json: ") as caught:
        read_perturb_file(sub)
    assert problem in str(caught.value) and "\n" not in str(caught.value)
    # compare reports it as one line, no traceback (exit 2)
    capsys.readouterr()
    assert main(["compare", str(old / "run"), str(sub)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("hy-eval: error: ") and problem in line
    # the run's step that writes the perturbations' sections: RunFolderError, one line
    with pytest.raises(RunFolderError):
        perturbation_section(old / "run", read_summary(old / "run"), sub)


def test_a_bad_summary_or_baseline_is_one_line(old, capsys):
    (old / "kw" / "summary.json").write_text('{"metrics": {"case_pass": 1}}', encoding="utf-8")
    capsys.readouterr()
    assert main(["baseline", "bless", str(old / "kw"), "--out", str(old / "b.json")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "summary.json: not a run summary (metrics.case_pass: input should be" in line
    (old / "baseline.json").write_text('{"suite": "toy", "cases": {}}', encoding="utf-8")
    with pytest.raises(RunFolderError, match=r"not a baseline \(dataset_hash: missing\)"):
        read_baseline(old / "baseline.json")


def test_a_record_score_is_typed_and_reads_old_partial_scores(tmp_path):
    """A score written without checks or facts (hand-made records of older tests) reads,
    and is written back as it was."""
    line = json.dumps({"id": "c", "score": {"counts": {}, "passed": True, "confusion": []}})
    path = tmp_path / "cases.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    (record,) = read_records(path)
    assert record.passed and record.score.checks == [] and record.score.failing() == []
    assert record.to_line() == line + "\n"
