"""A run folder under hostile or careless use (rules E2, E5):
one run writes a folder at a time, ``--resume`` never sends a key to the URL a manifest
names and keeps the run's settings, numbers that mean nothing are refused in one line,
no run is written into a dataset folder and ``baseline bless`` writes nowhere but
``reports/baselines/``."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hy_eval._exitcodes import ExitCode
from hy_eval.cli import main
from hy_eval.harness import RunError, Runner
from hy_eval.harness.datasets import DATASETS_DIR
from hy_eval.harness.gate import default_baseline_path
from hy_eval.harness.run import LOCK_NAME
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, model_args, scripted_config
from tests.loopback import LoopbackServer, Reply, openai_completion

SECRET = "sk-dummy-RESUME-5b1e0d4c"


class SlowModel(SuiteModel):
    def answer(self, req):
        reply = super().answer(req)
        reply.delay = 0.05
        return reply


def run_args(model, suite_dir, out, *extra):
    return [
        "--suite",
        str(suite_dir),
        *model_args(model.server),
        "--quiet",
        "--out",
        str(out),
        *extra,
    ]


def error_lines(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("hy-eval: error:")]


def ids_of(run_dir):
    return [json.loads(line)["id"] for line in (run_dir / "cases.jsonl").read_text().splitlines()]


# -- one run per folder (docs/reliability.md, item 4) -----------------------------------


def hold_lock(path):
    """Another process holding the run folder's lock, as a running run would."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_folder_locked_by_another_process_is_refused(tmp_path, capsys):
    """The second run on one --out gets exit 2 and one clear line."""
    suite = write_suite(tmp_path / "toy", 3)
    out = tmp_path / "run"
    out.mkdir()
    holder = hold_lock(out / LOCK_NAME)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with SuiteModel(suite.cases) as model:
            code = main(run_args(model, tmp_path / "toy", out, "--cache-mode", "off"))
            assert model.server.count == 0
    finally:
        holder.kill()
        holder.wait()
    assert code == 2
    lines = error_lines(capsys)
    assert lines == [
        f"hy-eval: error: {out}: another run is writing this folder; wait for it to end"
    ]
    assert not (out / "cases.jsonl").exists() and not (out / "manifest.json").exists()


def test_a_killed_run_leaves_no_stale_lock(tmp_path):
    """The OS drops the lock of a SIGKILLed process; the folder resumes."""
    suite = write_suite(tmp_path / "toy", 3)
    out = tmp_path / "run"
    out.mkdir()
    holder = hold_lock(out / LOCK_NAME)
    assert holder.stdout.readline().strip() == "locked"
    holder.kill()
    holder.wait()
    with SuiteModel(suite.cases) as model:
        assert main(run_args(model, tmp_path / "toy", out, "--cache-mode", "off")) == 0
    assert sorted(ids_of(out)) == ["t-00", "t-01", "t-02"]


def test_two_runs_started_together_on_one_folder_do_not_merge(tmp_path):
    """Both used to pass the "already holds a run" check and every case
    ended up twice in cases.jsonl. Now exactly one runs; the other is refused (exit 2)."""
    suite = write_suite(tmp_path / "toy", 12)
    out = tmp_path / "run"
    results, errors = [], []
    with SlowModel(suite.cases) as model:
        start = threading.Barrier(2)

        def go():
            cfg = scripted_config(model.server, out, suite=str(tmp_path / "toy"), concurrency=4)
            start.wait()
            try:
                results.append(Runner(cfg).run()[1])
            except RunError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=go) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 1 and len(errors) == 1, (results, errors)
    assert errors[0].exit_code == 2
    assert "another run is writing this folder" in str(errors[0]) or "already holds a run" in str(
        errors[0]
    )
    ids = ids_of(out)
    assert sorted(ids) == sorted(c.id for c in suite.cases)  # each case once
    assert results[0].cases == 12


def test_a_run_that_loses_the_folder_lock_leaves_the_winners_folder(tmp_path, monkeypatch):
    """Two runs both saw no folder; the one that made it holds the lock and writes in it.
    The other, refused, used to remove the folder as its own empty one, under the winner."""
    suite = write_suite(tmp_path / "toy", 2)
    out = tmp_path / "run"

    def lost(run_dir):
        (run_dir / "manifest.json").write_text("{}")  # the winner's, written meanwhile
        return None, f"{run_dir}: another run is writing this folder; wait for it to end"

    monkeypatch.setattr("hy_eval.harness.run._runner.lock_folder", lost)
    with SlowModel(suite.cases) as model:
        cfg = scripted_config(model.server, out, suite=str(tmp_path / "toy"))
        with pytest.raises(RunError, match="another run is writing this folder"):
            Runner(cfg).run()
    assert (out / "manifest.json").read_text() == "{}"


# -- --resume uses the command line's model (docs/reliability.md, item 5) ---------------


def interrupted_run(model, tmp_path, n=4, *extra):
    """A finished run cut back to two records, as a kill would leave it."""
    write_suite(tmp_path / "toy", n)
    run_dir = tmp_path / "run"
    assert main(run_args(model, tmp_path / "toy", run_dir, *extra)) == 0
    lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "cases.jsonl").write_text("".join(lines[:2]))
    return run_dir


def test_resume_never_sends_the_key_to_the_url_in_the_manifest(tmp_path, monkeypatch, capsys):
    """A copied run folder whose manifest names another server. The
    resume used that server and sent it ``Bearer <key>``; now it is refused, no request."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    suite = write_suite(tmp_path / "suite", 4)
    evil = LoopbackServer(lambda req: Reply(body=openai_completion("{}")))
    with SuiteModel(suite.cases) as model, evil:
        run_dir = interrupted_run(model, tmp_path, 4, "--cache-mode", "off")
        manifest = json.loads((run_dir / "manifest.json").read_text())
        manifest["base_url"] = manifest["params"]["base_url"] = evil.openai_url
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
        before = model.server.count
        capsys.readouterr()
        code = main(["--resume", str(run_dir), *model_args(model.server), "--quiet"])
        assert evil.count == 0
        assert model.server.count == before
    assert code == 2
    (line,) = error_lines(capsys)
    assert f"was run with openai:scripted at {evil.openai_url}" in line
    assert f"this command line gives openai:scripted at {model.server.openai_url}" in line
    assert len(ids_of(run_dir)) == 2  # nothing appended


def test_resume_without_model_flags_names_the_flags_it_needs(tmp_path, capsys):
    """The default provider (local) is not the run's (openai): refused,
    and the message gives the command that resumes."""
    suite = write_suite(tmp_path / "suite", 4)
    with SuiteModel(suite.cases) as model:
        run_dir = interrupted_run(model, tmp_path, 4, "--cache-mode", "off")
        capsys.readouterr()
        assert main(["--resume", str(run_dir), "--quiet"]) == 2
        (line,) = error_lines(capsys)
        assert "this command line gives local:default" in line
        command = line.split("resume with the same model flags: ")[1]
        assert command == (
            f"python run_eval.py --resume {run_dir} --provider openai --model scripted "
            f"--base-url {model.server.openai_url}"
        )
        # The command it gives works.
        assert main([*command.split()[2:], "--quiet"]) == 0
    assert sorted(ids_of(run_dir)) == ["t-00", "t-01", "t-02", "t-03"]


def test_resume_keeps_the_runs_settings(tmp_path, capsys):
    """--cache-mode off and --concurrency survive a resume that does not
    repeat them (they were rewritten as read-write and null); a flag given overrides."""
    suite = write_suite(tmp_path / "suite", 4)
    cache = tmp_path / "cache.sqlite"
    with SuiteModel(suite.cases) as model:
        run_dir = interrupted_run(
            model, tmp_path, 4, "--cache-mode", "off", "--concurrency", "3", "--cache", str(cache)
        )
        resume = ["--resume", str(run_dir), *model_args(model.server), "--cache", str(cache)]
        assert main([*resume, "--quiet"]) == 0
        params = json.loads((run_dir / "manifest.json").read_text())["params"]
        assert params["cache_mode"] == "off" and params["concurrency"] == 3
        assert not cache.exists()  # cache off: no cache file was made
        assert len(json.loads((run_dir / "manifest.json").read_text())["resumed"]) == 1
        lines = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
        (run_dir / "cases.jsonl").write_text("".join(lines[:2]))
        assert main([*resume, "--concurrency", "2", "--quiet"]) == 0
        params = json.loads((run_dir / "manifest.json").read_text())["params"]
        assert params["cache_mode"] == "off" and params["concurrency"] == 2
    assert sorted(ids_of(run_dir)) == ["t-00", "t-01", "t-02", "t-03"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m["params"].update(concurrency=-3),
        lambda m: m["params"].update(limit="all"),
        lambda m: m["params"].update(limit=True),
        lambda m: m["params"].update(guard="yes"),
        lambda m: m["params"].update(timeout="5"),
        lambda m: m["params"].update(suite=["multi_speaker"]),
        lambda m: m.pop("params"),
    ],
    ids=[
        "negative-concurrency",
        "limit-not-a-number",
        "limit-a-bool",
        "guard-not-a-bool",
        "timeout-a-string",
        "suite-a-list",
        "no-params",
    ],
)
def test_resume_of_a_bad_manifest_is_one_line(tmp_path, capsys, edit):
    """A manifest is input; its settings are checked like flags."""
    suite = write_suite(tmp_path / "suite", 3)
    with SuiteModel(suite.cases) as model:
        run_dir = interrupted_run(model, tmp_path, 3, "--cache-mode", "off")
        manifest = json.loads((run_dir / "manifest.json").read_text())
        edit(manifest)
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
        capsys.readouterr()
        assert main(["--resume", str(run_dir), *model_args(model.server), "--quiet"]) == 2
    (line,) = error_lines(capsys)
    assert "manifest.json" in line


# -- numbers that mean nothing, a run folder in a dataset folder (docs/reliability.md, item 10) ---


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--limit", "-1"], "--limit must be at least 1 (got -1)"),
        (["--limit", "0"], "--limit must be at least 1 (got 0)"),
        (["--sample", "0"], "--sample must be at least 1 (got 0)"),
        (["--concurrency", "-3"], "--concurrency must be at least 1 (got -3)"),
        (["--concurrency", "0"], "--concurrency must be at least 1 (got 0)"),
        (["--repeats", "0"], "--repeats must be at least 1 (got 0)"),
        (["--timeout", "-1"], "--timeout must be above 0 seconds (got -1.0)"),
        (["--retries", "-2"], "--retries must be 0 or more (got -2)"),
        (["--retry-delay", "-0.5"], "--retry-delay must be 0 or more (got -0.5)"),
        (["--max-error-rate", "1.5"], "--max-error-rate must be between 0 and 1 (got 1.5)"),
        (["--temperature", "-1"], "--temperature must be 0 or more (got -1.0)"),
        (["--repeats", "2", "--pass-k", "3"], "--pass-k must be between 1 and --repeats (2)"),
    ],
)
def test_meaningless_numbers_are_one_line_usage_errors(tmp_path, capsys, flags, message):
    """--limit -1 ran 4 of 5 cases; --concurrency -3 was a traceback."""
    suite = write_suite(tmp_path / "toy", 5)
    out = tmp_path / "run"
    with SuiteModel(suite.cases) as model:
        code = main(run_args(model, tmp_path / "toy", out, "--cache-mode", "off", *flags))
        assert model.server.count == 0
    assert code == 2
    (line,) = error_lines(capsys)
    assert message in line
    assert not out.exists()


def test_a_run_folder_in_a_dataset_folder_is_refused(tmp_path, capsys):
    """--out datasets/<suite> wrote cases.jsonl into the suite, where the
    next load reads it as a dataset file."""
    suite = write_suite(tmp_path / "toy", 2)
    before = sorted(p.name for p in DATASETS_DIR.rglob("*"))
    with SuiteModel(suite.cases) as model:
        for out in (
            DATASETS_DIR / "multi_speaker",
            DATASETS_DIR / "new-run",
            tmp_path / "toy",
            tmp_path / "toy" / "run",
        ):
            capsys.readouterr()
            assert main(run_args(model, tmp_path / "toy", out, "--cache-mode", "off")) == 2
            (line,) = error_lines(capsys)
            assert "is inside the dataset folder" in line, out
        assert model.server.count == 0
    assert sorted(p.name for p in DATASETS_DIR.rglob("*")) == before
    assert sorted(p.name for p in (tmp_path / "toy").iterdir()) == ["toy.jsonl"]


# -- bless writes only to reports/baselines/ (docs/reliability.md, item 8) --------------


def test_bless_refuses_a_suite_name_that_leaves_the_baselines_folder(tmp_path, monkeypatch, capsys):
    """E5: a manifest and summary saying "suite": "../../../../elsewhere/x"
    made bless write reports/baselines/../../../../elsewhere/x.json."""
    suite = write_suite(tmp_path / "toy", 2)
    run_dir = tmp_path / "run"
    with SuiteModel(suite.cases) as model:
        assert main(run_args(model, tmp_path / "toy", run_dir, "--cache-mode", "off")) == 0
    for name in ("manifest.json", "summary.json"):
        data = json.loads((run_dir / name).read_text())
        data["suite"] = "../../../../elsewhere/x"
        (run_dir / name).write_text(json.dumps(data))
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    capsys.readouterr()
    assert main(["baseline", "bless", str(run_dir)]) == 2
    (line,) = error_lines(capsys)
    assert "is not a plain file name" in line
    written = [p for p in tmp_path.rglob("*.json") if p.parent.name in ("elsewhere", "baselines")]
    assert written == []
    # An explicit --out is the user's own choice and still works.
    assert main(["baseline", "bless", str(run_dir), "--out", "mine.json"]) == 0
    assert (work / "mine.json").is_file()


@pytest.mark.parametrize(
    "name", ["../x", "a/b", "..", ".", "", "x\0y", "a\\..\\b", "/etc/passwd", 3, None]
)
def test_unsafe_suite_names_have_no_baseline_path(name):
    from hy_eval.harness.gate import GateConfigError

    with pytest.raises(GateConfigError):
        default_baseline_path(name)


def test_plain_suite_names_keep_their_baseline_path():
    for name in ("multi_speaker", "toy", "v1.2-zh", "多人对话"):
        assert default_baseline_path(name) == Path("reports/baselines") / f"{name}.json"


def test_lock_file_is_the_only_extra_file(tmp_path):
    """The lock lives in the run folder as an empty ``.lock``; nothing else is added."""
    suite = write_suite(tmp_path / "toy", 2)
    with SuiteModel(suite.cases) as model:
        assert main(run_args(model, tmp_path / "toy", tmp_path / "run", "--cache-mode", "off")) == 0
    lock = tmp_path / "run" / LOCK_NAME
    assert lock.is_file() and lock.stat().st_size == 0
    # Released at the end: this process can take it again at once.
    import fcntl

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_memory_commands_refuse_meaningless_numbers(tmp_path, capsys):
    """The same rule for ``memory search --limit`` (SQLite read -1 as no
    limit) and the model flags of ``memory add``."""
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["memory", "search", "coffee", "--user-id", "tim", "--db", db, "--limit", "-1"]) == 2
    )
    assert error_lines(capsys) == ["hy-eval: error: --limit must be at least 1 (got -1)"]
    conversation = tmp_path / "c.json"
    conversation.write_text('[{"role": "user", "content": "I like tea."}]')
    flags = ["--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--retries", "0"]
    base = ["memory", "add", str(conversation), "--user-id", "tim", "--db", db, *flags]
    assert main([*base, "--timeout", "0"]) == 2
    assert error_lines(capsys) == ["hy-eval: error: --timeout must be above 0 seconds (got 0.0)"]
    assert main([*base, "--timeout", "5", "--retries", "-1"]) == 2
    assert error_lines(capsys) == ["hy-eval: error: --retries must be 0 or more (got -1)"]


def test_a_lock_file_that_is_a_symlink_is_not_followed(tmp_path, capsys):
    """A copied folder's ``.lock`` pointing elsewhere is refused in one
    line; the file it points to is not created or touched."""
    suite = write_suite(tmp_path / "toy", 2)
    out = tmp_path / "run"
    out.mkdir()
    target = tmp_path / "elsewhere.txt"
    (out / LOCK_NAME).symlink_to(target)
    with SuiteModel(suite.cases) as model:
        assert main(run_args(model, tmp_path / "toy", out, "--cache-mode", "off")) == 2
    (line,) = error_lines(capsys)
    assert "cannot open the run folder's lock file" in line
    assert not target.exists()


def test_what_a_resume_prints_names_the_settings_that_ran(tmp_path, capsys):
    """A resume runs with its manifest's suite; the replay-only miss hint after it names
    that suite, not the command line's default."""
    suite = write_suite(tmp_path / "suite", 3)
    with SuiteModel(suite.cases) as model:
        run_dir = interrupted_run(model, tmp_path, 3, "--cache-mode", "off")
        capsys.readouterr()
        code = main(
            [
                "--resume",
                str(run_dir),
                *model_args(model.server),
                "--cache-mode",
                "replay-only",
                "--cache",
                str(tmp_path / "empty.sqlite"),
                "--quiet",
            ]
        )
    assert code == ExitCode.CACHE_MISS
    (line,) = error_lines(capsys)
    assert f"--suite {tmp_path / 'toy'}" in line
