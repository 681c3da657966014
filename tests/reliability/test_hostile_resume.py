"""Hostile run folders on ``--resume``: nothing written in a folder chooses where a key
is sent (the judge's endpoint included), and a resume writes its answers to the cache
file the run was started with (docs/reliability.md, "Hostile input, round two").

Every request goes through the real OpenAI or Anthropic SDK to loopback servers; the
keys are canaries, and the "elsewhere" server counts what reached it."""

import json

from hy_eval.cli import main
from tests.harness.run.test_matcher_runs import JudgedSuiteModel, write_suite
from tests.harness.scripted_suite import model_args
from tests.loopback import LoopbackServer, Reply, anthropic_message, openai_completion
from tests.reliability.test_run_folder import error_lines, ids_of

OPENAI_KEY = "sk-canary-OPENAI-7d1f2e3a"
ANTHROPIC_KEY = "sk-ant-canary-ANTHROPIC-9c8b7a6d"


def judged_run(model, tmp_path, *extra):
    """A finished ``--matcher judge`` run of the three-case suite cut back to one record,
    as a kill would leave it."""
    run_dir = tmp_path / "run"
    flags = [*model_args(model.server), "--suite", str(tmp_path / "m"), "--quiet"]
    flags += ["--concurrency", "1"]  # records in suite order: the first is en-nurse
    code = main([*flags, "--matcher", "judge", "--retries", "0", "--out", str(run_dir), *extra])
    assert code == 0
    lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "cases.jsonl").write_text(lines[0])
    return run_dir


def plant(run_dir, **params):
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["params"].update(params)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))


def evil_server():
    """A server that would take any request; each one it gets is a leaked key."""
    return LoopbackServer(
        lambda req: Reply(
            body=anthropic_message('{"same": true, "reason": "x"}')
            if "/messages" in req.path
            else openai_completion('{"same": true, "reason": "x"}')
        )
    )


def test_resume_never_sends_a_key_to_the_judge_url_in_the_manifest(tmp_path, monkeypatch, capsys):
    """The manifest's judge URL was taken on resume and got ``Bearer <key>`` (3 requests).
    Now the judge's endpoint is the command line's; a manifest naming another is refused
    before any request, whether or not the command line names a judge URL."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    suite = write_suite(tmp_path / "m")
    with JudgedSuiteModel(suite.cases) as model, evil_server() as evil:
        run_dir = judged_run(model, tmp_path, "--cache-mode", "off")
        plant(run_dir, judge_base_url=evil.openai_url)
        before = model.server.count
        resume = ["--resume", str(run_dir), *model_args(model.server), "--quiet"]
        for extra in ([], ["--matcher", "keyword", "--judge-base-url", model.server.openai_url]):
            capsys.readouterr()
            assert main([*resume, *extra]) == 2
            (line,) = error_lines(capsys)
            assert f"was run with --judge-base-url {evil.openai_url}" in line
        assert evil.count == 0 and model.server.count == before
    assert ids_of(run_dir) == ["en-nurse"]  # nothing appended


def test_resume_never_sends_the_anthropic_key_to_a_planted_judge(tmp_path, monkeypatch, capsys):
    """``judge_provider: anthropic`` planted with an URL: the Anthropic key went there and
    the run died with a traceback. Now: one line, exit 2, no request."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    suite = write_suite(tmp_path / "m")
    with JudgedSuiteModel(suite.cases) as model, evil_server() as evil:
        run_dir = judged_run(model, tmp_path, "--cache-mode", "off")
        plant(run_dir, judge_provider="anthropic", judge_base_url=evil.anthropic_url)
        capsys.readouterr()
        assert main(["--resume", str(run_dir), *model_args(model.server), "--quiet"]) == 2
        (line,) = error_lines(capsys)
        assert "was run with --judge-provider anthropic" in line
        assert evil.count == 0
    assert OPENAI_KEY not in line and ANTHROPIC_KEY not in line


def test_a_judge_run_resumes_with_the_command_it_was_given(tmp_path, capsys):
    """The honest case: a judge on another model resumes when the command line names the
    same judge, and the refusal of a bare resume gives that command."""
    suite = write_suite(tmp_path / "m")
    same = {"The user is a nurse at a Berlin hospital."}
    with JudgedSuiteModel(suite.cases, same=same) as model:
        run_dir = judged_run(model, tmp_path, "--cache-mode", "off", "--judge-model", "judge-m")
        capsys.readouterr()
        assert main(["--resume", str(run_dir), *model_args(model.server), "--quiet"]) == 2
        (line,) = error_lines(capsys)
        command = line.split("resume with: ")[1]
        assert command.endswith("--judge-model judge-m")
        assert main([*command.split()[2:], "--quiet"]) == 0
    assert sorted(ids_of(run_dir)) == ["en-drink", "en-nurse", "zh-nurse"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["judge"]["model"] == "judge-m"


def test_resume_keeps_the_cache_file_of_the_run(tmp_path, capsys):
    """A run started with ``--cache X`` and resumed as the printed hint said wrote to the
    default cache, so a later run with ``--cache X`` paid for every answer again. Now the
    hint names ``--cache X``, a bare resume is refused, and the resumed answers are in X:
    a rerun with ``--cache X`` asks the model nothing."""
    suite = write_suite(tmp_path / "m")
    cache = tmp_path / "mine.sqlite"
    with JudgedSuiteModel(suite.cases) as model:
        run_dir = tmp_path / "run"
        flags = [*model_args(model.server), "--suite", str(tmp_path / "m"), "--quiet"]
        flags += ["--concurrency", "1"]
        assert main([*flags, "--cache", str(cache), "--out", str(run_dir), "--no-reuse"]) == 0
        lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
        (run_dir / "cases.jsonl").write_text(lines[0])
        cache.unlink()  # the answers of the cut cases must come back into this file
        capsys.readouterr()
        assert main(["--resume", str(run_dir), *model_args(model.server), "--quiet"]) == 2
        (line,) = error_lines(capsys)
        command = line.split("resume with: ")[1]
        assert command.endswith(f"--cache {cache}")
        assert main([*command.split()[2:], "--quiet"]) == 0
        before = model.server.count
        again = [*flags, "--cache", str(cache), "--out", str(tmp_path / "again"), "--no-reuse"]
        assert main([*again, "--filter", "id=en-drink,id=zh-nurse"]) == 0
        assert model.server.count == before  # every answer came from X
