"""``hy-eval report DIR``: the reports of whatever a run folder holds, marked partial when
the run did not finish; a folder that is no run, or holds no or a bad record, is one
line and exit 2."""

import json

from hy_eval.cli import main
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, model_args


def finished_run(tmp_path, n=4):
    suite = write_suite(tmp_path / "toy", n)
    run_dir = tmp_path / "run"
    with SuiteModel(suite.cases) as model:
        flags = [*model_args(model.server), "--suite", str(tmp_path / "toy"), "--quiet"]
        assert main([*flags, "--cache-mode", "off", "--out", str(run_dir)]) == 0
    return run_dir


def interrupt(run_dir, keep):
    """The folder as an interrupted run leaves it: ``keep`` records, no summary or report,
    the manifest not finished."""
    lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "cases.jsonl").write_text("".join(lines[:keep]))
    for name in ("summary.json", "report.md", "report.html"):
        (run_dir / name).unlink()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["finished"] = None
    (run_dir / "manifest.json").write_text(json.dumps(manifest))


def test_an_interrupted_run_gets_reports_marked_partial(tmp_path, capsys):
    run_dir = finished_run(tmp_path)
    interrupt(run_dir, 2)
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cases"] == 2
    assert summary["partial"] == {"cases_done": 2, "cases_planned": 4}
    sentence = "Partial run: 2 of 4 planned case records were finished before the run stopped"
    assert sentence in (run_dir / "report.md").read_text()
    assert sentence in (run_dir / "report.html").read_text()
    assert (run_dir / "metrics.png").exists()
    out = capsys.readouterr().out
    assert "case_pass" in out and sentence in out


def test_a_finished_run_is_reported_again_as_it_was(tmp_path):
    run_dir = finished_run(tmp_path)
    before = json.loads((run_dir / "summary.json").read_text())
    assert main(["report", str(run_dir)]) == 0
    after = json.loads((run_dir / "summary.json").read_text())
    assert "partial" not in after
    assert after == before


def test_what_is_no_run_to_report_is_one_line(tmp_path, capsys):
    run_dir = finished_run(tmp_path)
    cases = [
        (tmp_path / "toy", "not a run folder"),
        (run_dir, "not a case record"),
    ]
    lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "cases.jsonl").write_text(lines[0] + '{"id": 5}\n')
    for folder, message in cases:
        capsys.readouterr()
        assert main(["report", str(folder)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert message in err
    (run_dir / "cases.jsonl").write_text("")
    assert main(["report", str(run_dir)]) == 2
    assert "nothing to report" in capsys.readouterr().err
