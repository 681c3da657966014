"""The system-under-test seam with an external system: a worker process (a fake memory
system speaking the protocol, ``fake_worker.py``) whose model calls go through
``hy-eval serve`` to the loopback server, scored from what it stored (docs/systems.md).
Hand-computed figures; a worker that dies, writes garbage or refuses costs its case only;
replay-only answers from the cache and stops on a miss; an install that fails is one
line."""

import json
import sys
from pathlib import Path

import pytest

from hy_eval._exitcodes import ExitCode
from hy_eval.harness import RunConfig, Runner, load_suite
from hy_eval.harness.run import RunError
from hy_eval.harness.systems import CaseFailed, SystemInstallError, ensure_venv
from hy_eval.harness.systems._external import PASSED_VARIABLES
from tests.loopback import LoopbackServer, Reply, openai_completion

FAKE = Path(__file__).with_name("fake_worker.py")

#: What the model tells the fake system to store, by the case's number in its message.
PLANS = {
    # The user's fact, stored with the right owner; m1 left alone.
    0: {"facts": [{"text": "The user likes coffee #0.", "owner": "user"}]},
    # John's fact written over the user's memory m1: a cross-subject merge (R2), m1 not
    # untouched, and John's coffee stored (the case's absent check).
    1: {"update": {"m1": "John likes coffee #1."}},
}


def script(req):
    text = req.prompt_text
    for n, plan in PLANS.items():
        if f"number {n}." in text:
            return Reply(body=openai_completion(json.dumps(plan)))
    return Reply(body=openai_completion(json.dumps({})))


def suite_folder(tmp_path: Path) -> str:
    """The toy suite under ``tmp_path``, written the first time."""
    folder = tmp_path / "toy"
    return str(folder) if folder.exists() else write_suite(folder)


def write_suite(folder: Path) -> str:
    labels = ["t-00", "t-01", "t-02-die", "t-03-garbage", "t-04-refuse"]
    lines = []
    for i, label in enumerate(labels):
        case = {
            "id": label,
            "lang": "en",
            "rules": ["A1", "R2"],
            "existing": [{"id": "m1", "text": "The user likes tea.", "owner": "user"}],
            "messages": [
                {"role": "user", "name": "Tim", "content": f"I like coffee number {i}."},
                {"role": "assistant", "name": "John", "content": f"Me too, coffee number {i}."},
            ],
            "expect": {
                "facts": [{"subject": "user", "owner": "user", "keywords": ["coffee", f"#{i}"]}],
                "absent": [{"subject": "John", "keywords": ["coffee", f"#{i}"]}],
                "profile": {"name": "Tim"},
                "untouched": ["m1"],
            },
        }
        lines.append(json.dumps(case))
    folder.mkdir()
    (folder / "toy.jsonl").write_text("\n".join(lines) + "\n")
    return str(folder)


@pytest.fixture
def fake_system(monkeypatch):
    """``mem0`` played by the fake worker under this interpreter."""
    monkeypatch.setattr(
        "hy_eval.harness.systems._launch.ensure_venv", lambda name: Path(sys.executable)
    )
    monkeypatch.setattr("hy_eval.harness.systems._external.worker_script", lambda name: FAKE)
    # The fake's own switch, passed like the allow-listed variables.
    passed = ("FAKE_MEASURES", *PASSED_VARIABLES)
    monkeypatch.setattr("hy_eval.harness.systems._external.PASSED_VARIABLES", passed)
    monkeypatch.setenv("FAKE_MEASURES", "owner")


def config(server, tmp_path, **kw):
    base = dict(
        suite=suite_folder(tmp_path),
        system="mem0",
        provider="openai",
        model="scripted",
        base_url=server.openai_url,
        api_key="sk-dummy",
        cache_mode="off",
        out=str(tmp_path / "run"),
        progress=False,
        retries=0,
        max_error_rate=1.0,
        concurrency=1,
    )
    return RunConfig(**{**base, **kw})


def test_an_external_system_is_scored_from_its_store(tmp_path, fake_system):
    with LoopbackServer(script) as server:
        run_dir, summary, code = Runner(config(server, tmp_path)).run()
    assert code == ExitCode.OK
    m = summary.metrics
    assert summary.system == "mem0"
    # Three of five cases failed in the worker: died, wrote garbage, refused.
    assert (m["error_rate"].value, m["error_rate"].n) == (0.6, 5)
    records = {r["id"]: r for r in map(json.loads, (run_dir / "cases.jsonl").open())}
    assert "worker exited (code 3)" in records["t-02-die"]["error"]
    assert "not JSON" in records["t-03-garbage"]["error"]
    assert records["t-04-refuse"]["error"] == "mem0: the fake refused"
    # t-00 found the user's fact; t-01's only new text is John's, written over m1: the
    # same coffee, found, with the wrong subject.
    assert m["fact_recall"].value == 1.0
    assert m["attribution_accuracy"].value == 0.5
    assert m["owner_accuracy"].value == 1.0
    assert m["misattribution_rate"].value == 0.5  # John's coffee stored for t-01
    assert m["untouched_violation_rate"].value == 0.5
    # t-00: one ADD, no violation; t-01: one UPDATE of the user's m1 with John's fact.
    assert m["merge_violation_rate_applied"].value == 0.5
    assert records["t-01"]["operations"]["applied"] == [{"op": "UPDATE", "fact": 0, "targets": [1]}]
    # What the fake cannot expose is not measured, never 0 or 1.
    # echoed_subject_rate: the system writes with its own prompts, whose examples the
    # harness does not know.
    for metric in (
        "profile_name_accuracy",
        "merge_violation_rate_raw",
        "fallback_rate",
        "echoed_subject_rate",
    ):
        assert m[metric].value is None, metric
        assert metric in summary.not_measured
    assert "owner_accuracy" not in summary.not_measured
    report = (run_dir / "report.md").read_text()
    assert "system mem0 on" in report and "| profile_name_accuracy | n/m |" in report
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["params"]["system"] == "mem0"
    # Every case's model call went through the server to the loopback model, and its
    # tokens (10 in, 5 out a call) are the case's.
    assert summary.calls.calls == 2
    assert records["t-00"]["tokens"] == {"input": 10, "output": 5}
    assert summary.tokens.input == 20 and summary.tokens.output == 10
    assert len([r for r in server.requests if "coffee number" in r.prompt_text]) == 2


def test_without_owners_the_fact_check_ignores_the_owner(tmp_path, fake_system, monkeypatch):
    monkeypatch.setenv("FAKE_MEASURES", "")
    with LoopbackServer(script) as server:
        _, summary, _ = Runner(config(server, tmp_path, filter="id=t-00")).run()
    assert summary.metrics["owner_accuracy"].value is None
    assert "owner_accuracy" in summary.not_measured
    assert summary.metrics["case_pass"].value == 1.0  # nothing else failed


def test_replay_only_answers_from_the_cache_and_stops_on_a_miss(tmp_path, fake_system):
    cache = str(tmp_path / "answers.sqlite")
    with LoopbackServer(script) as server:
        _, first, _ = Runner(
            config(server, tmp_path, cache_mode="read-write", cache_path=cache)
        ).run()
        asked = len(server.requests)
        _, again, _ = Runner(
            config(
                server,
                tmp_path,
                cache_mode="replay-only",
                cache_path=cache,
                out=str(tmp_path / "again"),
            )
        ).run()
        assert len(server.requests) == asked  # nothing new asked of the model
    assert again.metrics == first.metrics
    with LoopbackServer(script) as server:
        empty = str(tmp_path / "empty.sqlite")
        with pytest.raises(RunError) as caught:
            Runner(
                config(
                    server,
                    tmp_path,
                    cache_mode="replay-only",
                    cache_path=empty,
                    out=str(tmp_path / "miss"),
                )
            ).run()
    assert caught.value.exit_code == ExitCode.CACHE_MISS
    assert "no cached answer in replay-only mode" in str(caught.value)


def test_a_system_that_cannot_be_installed_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "mem0.txt").write_text("./there-is-no-such-project\n")
    monkeypatch.setattr("hy_eval.harness.systems._venv.WORKERS", tmp_path)
    monkeypatch.setenv("HY_EVAL_SYSTEMS_DIR", str(tmp_path / "envs"))
    with pytest.raises(SystemInstallError) as caught:
        ensure_venv("mem0")
    message = str(caught.value)
    assert message.startswith("mem0: install failed: ") and "\n" not in message
    assert (tmp_path / "envs" / "mem0-install.log").is_file()
    assert not [p for p in (tmp_path / "envs").iterdir() if p.is_dir()]  # nothing half-made
    with LoopbackServer(script) as server:
        with pytest.raises(RunError) as run_error:
            Runner(config(server, tmp_path)).run()
    assert run_error.value.exit_code == ExitCode.USAGE
    assert str(run_error.value).startswith("mem0: install failed")


def test_a_matrix_across_systems_runs_the_others_when_one_cannot_install(
    tmp_path, fake_system, monkeypatch
):
    from hy_eval.harness.run import run_matrix
    from hy_eval.llm import ModelSpec

    def install(name):
        if name == "hy_memory":
            raise SystemInstallError("hy_memory: install failed: no such distribution")
        return Path(sys.executable)

    monkeypatch.setattr("hy_eval.harness.systems._launch.ensure_venv", install)
    told = []
    with LoopbackServer(script) as server:
        result = run_matrix(
            config(server, tmp_path, filter="id=t-00"),
            [ModelSpec.parse("openai")],
            ["default"],
            tmp_path / "matrix",
            systems=["hy_memory", "mem0"],
            on_skip=lambda name, why: told.append((name, why)),
        )
    assert told == [
        ("hy_memory--openai--default", "hy_memory: install failed: no such distribution")
    ]
    assert [e.name for e in result.entries] == ["mem0--openai--default"]
    assert result.code == 2
    assert (
        "hy_memory--openai--default not run: hy_memory: install failed"
        in (tmp_path / "matrix" / "matrix.md").read_text()
    )


def test_the_command_line_says_a_failed_install_in_one_line(tmp_path, monkeypatch, capsys):
    from hy_eval.cli import main

    def install(name):
        raise SystemInstallError(f"{name}: install failed: no matching distribution")

    monkeypatch.setattr("hy_eval.harness.systems._launch.ensure_venv", install)
    with LoopbackServer(script) as server:
        code = main(
            [
                "run",
                "--suite",
                suite_folder(tmp_path),
                "--system",
                "mem0",
                "--provider",
                "openai",
                "--model",
                "scripted",
                "--base-url",
                server.openai_url,
                "--api-key",
                "sk-dummy",
                "--cache-mode",
                "off",
                "--out",
                str(tmp_path / "r"),
                "--quiet",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1] == "hy-eval: error: mem0: install failed: no matching distribution"
    assert main(["run", "--suite", suite_folder(tmp_path), "--system", "letta"]) == 2
    assert (
        "--system must be one of hy_eval, hy_memory, mem0 (got 'letta')" in capsys.readouterr().err
    )


def test_relative_folders_are_made_absolute_for_the_worker(tmp_path, fake_system, monkeypatch):
    """A relative HY_EVAL_SYSTEMS_DIR or --out names nothing from the worker's own
    folder: both reach it absolute, and a missing interpreter costs the case, said so."""
    import asyncio

    from hy_eval.harness.systems import ExternalSystem, WorkerSettings
    from hy_eval.harness.systems._venv import env_folder

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HY_EVAL_SYSTEMS_DIR", "envs")
    assert env_folder("mem0").is_absolute()
    with LoopbackServer(script) as server:
        _, summary, _ = Runner(config(server, tmp_path, filter="id=t-00", out="run")).run()
    assert summary.metrics["error_rate"].value == 0.0
    suite = load_suite(suite_folder(tmp_path))
    missing = WorkerSettings(
        "mem0", tmp_path / "no-python", "http://127.0.0.1:9/v1", "m", embed_model="e"
    )
    with pytest.raises(CaseFailed, match="cannot start the worker"):
        asyncio.run(
            ExternalSystem(missing, lambda: None).add_case(suite.cases[0], label="x", repeat=0)
        )


def test_a_run_of_another_system_takes_no_record_of_ours(tmp_path, fake_system):
    """The issue's sequence: our pipeline, then mem0, on one read-write cache. mem0's run
    computes its own records (its worker ran every case) and reports what mem0 cannot
    measure as n/m, not our pipeline's figures under mem0's name."""
    cache = str(tmp_path / "cache.sqlite")
    with LoopbackServer(script) as server:
        _own_dir, own, _ = Runner(
            config(
                server,
                tmp_path,
                system="hy_eval",
                cache_mode="read-write",
                cache_path=cache,
                out=str(tmp_path / "own"),
            )
        ).run()
        assert not own.not_measured and own.metrics["parse_failure_rate"].value is not None
        assert own.metrics["echoed_subject_rate"].value == 0.0  # measured on our prompts
        _mem_dir, mem, _ = Runner(
            config(
                server,
                tmp_path,
                cache_mode="read-write",
                cache_path=cache,
                out=str(tmp_path / "mem0"),
            )
        ).run()
        assert mem.calls.records_reused == 0
        assert mem.system == "mem0"
        assert mem.metrics["parse_failure_rate"].value is None
        assert "parse_failure_rate" in mem.not_measured
        assert mem.metrics["echoed_subject_rate"].value is None
        assert "echoed_subject_rate" in mem.not_measured
        # The same mem0 run again takes its own records whole.
        _, again, _ = Runner(
            config(
                server,
                tmp_path,
                cache_mode="read-write",
                cache_path=cache,
                out=str(tmp_path / "mem0-again"),
            )
        ).run()
    assert again.calls.records_reused == 2  # the three failed cases are not kept
    assert again.metrics == mem.metrics
