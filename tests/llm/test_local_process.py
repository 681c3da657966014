"""The embedded model runs in a process of its own: a native crash there stops
the run with a one-line message naming the case, keeps the finished cases, and --resume
completes the run. These tests put a scripted stand-in behind the real pipe protocol
(tests/llm/fake_llama_worker.py); the real llama.cpp worker is tested in test_local.py."""

import asyncio
import json
import re
from pathlib import Path

import pytest

from hy_eval.cli import main
from hy_eval.harness import RunConfig, RunError, Runner
from hy_eval.llm import (
    ConfigError,
    LLMClient,
    ModelProcessDied,
    ProviderError,
    Request,
    make_provider,
)
from hy_eval.llm.local import _local
from tests.harness.run.test_run import write_suite

FAKE = Path(__file__).with_name("fake_llama_worker.py")


@pytest.fixture
def fake_worker(monkeypatch):
    monkeypatch.setattr(_local, "WORKER_SCRIPT", FAKE)


def plan(tmp_path, **fields):
    path = tmp_path / "plan.gguf"
    path.write_text(json.dumps({"marker": str(tmp_path / "crashed"), **fields}))
    return path


def call(provider, text="[user]: I like tea."):
    client = LLMClient(provider, cache_mode="off")
    request = Request.of([{"role": "user", "content": text}], max_tokens=50)
    return asyncio.run(client.complete(request))


def test_a_crash_of_the_model_process_is_an_error_naming_the_signal(fake_worker, tmp_path):
    provider = make_provider("local", str(plan(tmp_path, crash_at=2)))
    assert json.loads(call(provider).text)["facts"]
    with pytest.raises(ModelProcessDied) as info:
        call(provider)
    assert info.value.returncode == -11
    assert str(info.value) == "local model process died (signal 11, SIGSEGV)"
    # The next call starts a new process (the plan's marker stops a second crash).
    assert json.loads(call(provider).text)["facts"]


def test_an_exit_is_told_apart_from_a_signal(fake_worker, tmp_path):
    provider = make_provider("local", str(plan(tmp_path, crash_at=1, exit_code=2)))
    with pytest.raises(ModelProcessDied, match=r"^local model process exited with code 2$"):
        call(provider)


def test_a_bad_request_costs_the_call_not_the_process(fake_worker, tmp_path):
    provider = make_provider("local", str(plan(tmp_path)))
    process = provider._all()[0]  # the first of idle processes takes each call
    call(provider)
    pid = process.pid
    with pytest.raises(ProviderError) as info:
        call(provider, "BAD-REQUEST")
    assert info.value.kind == "bad_request" and "too long" in str(info.value)
    call(provider)
    assert process.pid == pid


#: One process decoding several requests together: calls in flight on one pipe.
BATCHED = {"processes": 1, "slots": 4}


def worker_args(process):
    """The model process's arguments after the model file: context, threads, slots."""
    return process._child.proc.args[3:]


def ask(text):
    return Request.of([{"role": "user", "content": text}], max_tokens=50)


async def in_flight(provider, texts, *, timeout=30.0):
    """``texts`` sent at once, each by its own call; the answers or errors, in order."""
    calls = [provider.complete(ask(t), 0) for t in texts]
    return await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), timeout)


def test_calls_in_flight_get_their_own_answers_in_any_order(fake_worker, tmp_path):
    # The worker holds four requests, then answers them last first, each after a reply
    # nobody asked for: four calls at once, each routed by its id. One at a time, the
    # first call would wait forever (the timeout).
    provider = make_provider(
        "local", str(plan(tmp_path, reverse=4, echo=True, stray=True)), options=BATCHED
    )
    texts = [f"question {i}" for i in range(4)]
    answers = asyncio.run(in_flight(provider, texts))
    said = [json.loads(a.text) for a in answers]
    assert [s["said"] for s in said] == texts
    assert sorted(s["served"] for s in said) == [1, 2, 3, 4]
    assert not provider._process().busy and provider._process().answered


def test_a_crash_fails_every_call_in_flight_and_the_next_call_starts_anew(fake_worker, tmp_path):
    provider = make_provider(
        "local", str(plan(tmp_path, reverse=3, crash_at=3, echo=True)), options=BATCHED
    )
    errors = asyncio.run(in_flight(provider, ["a", "b", "c"]))
    assert [type(e) for e in errors] == [ModelProcessDied] * 3
    assert {e.returncode for e in errors} == {-11}
    process = provider._process()
    assert process.pid is None and not process.busy
    # A new process (its first request), which answers: the marker stops a second crash.
    answer = asyncio.run(in_flight(provider, ["d", "e", "f"]))
    assert [json.loads(a.text)["served"] for a in answer] == [1, 2, 3]


def test_an_unroutable_reply_fails_every_call_in_flight(fake_worker, tmp_path):
    provider = make_provider("local", str(plan(tmp_path, reverse=3, garbage_at=3)), options=BATCHED)
    errors = asyncio.run(in_flight(provider, ["a", "b", "c"]))
    assert [type(e) for e in errors] == [ProviderError] * 3
    assert {e.kind for e in errors} == {"bad_answer"}
    assert "unreadable reply b'not a reply" in str(errors[0])
    assert provider._process().pid is None  # killed; the next call starts a new one


def test_abort_ends_every_call_in_flight_at_once(fake_worker, tmp_path):
    marker = tmp_path / "slow"
    model = plan(tmp_path, slow_from=1, slow_s=60, slow_marker=str(marker))
    provider = make_provider("local", str(model), options=BATCHED)

    async def abort_when_busy():
        calls = asyncio.ensure_future(in_flight(provider, ["a", "b", "c"]))
        while not marker.exists():
            await asyncio.sleep(0.02)
        assert provider._process().busy
        provider.abort()
        return await asyncio.wait_for(calls, 10)

    errors = asyncio.run(abort_when_busy())
    assert [type(e) for e in errors] == [ModelProcessDied] * 3
    assert {e.returncode for e in errors} == {-9}
    assert not provider._process().busy


def test_processes_and_slots_reach_the_workers_and_stay_out_of_the_cache_key(
    fake_worker, tmp_path, monkeypatch
):
    monkeypatch.setattr(_local.os, "cpu_count", lambda: 2)
    model = str(plan(tmp_path, echo=True))
    default = make_provider("local", model)
    three = make_provider("local", model, options={"slots": 3, "threads": 2})
    # Two cores: two processes of one thread, one request at a time each; two threads
    # given: one process.
    assert (default.processes, default.threads, default.default_concurrency) == (2, 1, 2)
    assert (three.processes, three.default_concurrency) == (1, 3)
    assert json.loads(call(default).text)["argv"] == ["8192", "1", "1"]
    assert json.loads(call(three).text)["argv"] == ["8192", "2", "3"]
    assert three.key_options == default.key_options
    with pytest.raises(ConfigError, match=r"slots must be at least 1 \(got 0\)"):
        make_provider("local", model, options={"slots": 0})


def test_the_cli_concurrency_is_processes_times_slots(fake_worker, tmp_path, monkeypatch):
    monkeypatch.setattr(_local.os, "cpu_count", lambda: 2)
    assert _local.split_concurrency(1) == (1, 1)
    assert _local.split_concurrency(2) == (2, 1)
    assert _local.split_concurrency(5) == (2, 3)
    assert _local.split_concurrency(4, threads=2) == (1, 4)
    write_suite(tmp_path / "suite", 4)
    model = plan(tmp_path)
    args = ["--suite", str(tmp_path / "suite"), "--model", str(model), "--cache-mode", "off"]
    assert main([*args, "--out", str(tmp_path / "run"), "--quiet", "--concurrency", "4"]) == 0
    assert worker_args(_local.model_process(model, 8192, 1, 2, 0)) == ["8192", "1", "2"]
    assert worker_args(_local.model_process(model, 8192, 1, 2, 1)) == ["8192", "1", "2"]


def local_config(tmp_path, model, **kw):
    return RunConfig(
        suite=str(tmp_path / "suite"),
        provider="local",
        model=str(model),
        cache_mode="off",
        out=str(tmp_path / "run"),
        progress=False,
        **kw,
    )


def records(run_dir):
    lines = (Path(run_dir) / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["id"] for line in lines]


def test_a_crash_mid_run_keeps_the_finished_cases_and_resume_completes(fake_worker, tmp_path):
    write_suite(tmp_path / "suite", 6)
    # One case at a time, two requests per case (extract, reconcile: each case has a
    # memory): request 7 is case 4's extraction, after three finished cases.
    model = plan(tmp_path, crash_at=7)
    with pytest.raises(RunError) as info:
        Runner(local_config(tmp_path, model, concurrency=1)).run()
    run_dir = tmp_path / "run"
    assert info.value.exit_code == 3
    assert str(info.value) == (
        f"local model process died (signal 11, SIGSEGV) on case t-03; 3 cases kept in "
        f"{run_dir / 'cases.jsonl'}; finish with python run_eval.py --resume {run_dir} "
        f"--model {model}"
    )
    assert records(run_dir) == ["t-00", "t-01", "t-02"]
    done, summary, code = Runner(local_config(tmp_path, model, resume=str(run_dir))).run()
    assert code == 0 and done == run_dir
    assert sorted(records(run_dir)) == [f"t-{i:02d}" for i in range(6)]
    assert summary.metrics["case_pass"].n == 6


def test_the_cli_says_it_in_one_line_with_exit_3(fake_worker, tmp_path, capsys):
    write_suite(tmp_path / "suite", 3)
    model = plan(tmp_path, crash_at=3)
    out = tmp_path / "run"
    args = ["--suite", str(tmp_path / "suite"), "--model", str(model), "--cache-mode", "off"]
    # One case at a time, so that the crash is on the second case's first request.
    assert main([*args, "--out", str(out), "--concurrency", "1"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert re.fullmatch(
        r"hy-eval: error: local model process died \(signal 11, SIGSEGV\) on case t-01; "
        r"1 case kept in .*; finish with python run_eval.py --resume \S+ --model \S+plan.gguf",
        err[-1],
    ), err
    assert main(["--resume", str(out), "--model", str(model)]) == 0


def test_the_cli_prints_where_a_native_crash_happened():
    """faulthandler is on in the CLI: a segfault prints the Python stack."""
    import subprocess
    import sys

    code = (
        "import ctypes\n"
        "from hy_eval.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "ctypes.string_at(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == -11
    assert "Fatal Python error: Segmentation fault" in done.stderr
    assert 'File "<string>", line 7' in done.stderr


def test_memory_add_says_the_model_process_died_and_writes_nothing(fake_worker, tmp_path, capsys):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([{"role": "user", "name": "Tim", "content": "I like tea."}]))
    db = tmp_path / "mem.sqlite"
    model = plan(tmp_path, crash_at=1)
    args = ["memory", "add", str(conv), "--user-id", "tim", "--db", str(db), "--model", str(model)]
    assert main(args) == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == "hy-eval: error: local model process died (signal 11, SIGSEGV)"
    assert main(["memory", "show", "--user-id", "tim", "--db", str(db)]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == []


def test_threads_reach_the_model_process_and_stay_out_of_the_cache_key(fake_worker, tmp_path):
    write_suite(tmp_path / "suite", 1)
    model = plan(tmp_path)
    args = ["--suite", str(tmp_path / "suite"), "--model", str(model), "--cache-mode", "off"]
    assert main([*args, "--out", str(tmp_path / "run"), "--quiet", "--threads", "3"]) == 0
    process = _local.model_process(model, 8192, 3, 1)
    assert process.pid is not None and worker_args(process) == ["8192", "3", "1"]
    threaded = make_provider("local", str(model), options={"threads": 3})
    assert threaded.key_options == make_provider("local", str(model)).key_options


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--threads", "0"], "--threads must be at least 1 (got 0)"),
        (
            ["--threads", "2", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"],
            "--threads applies to the local provider only",
        ),
    ],
)
@pytest.mark.parametrize("kind", ["run", "memory add"])
def test_threads_are_refused_in_one_line(tmp_path, capsys, flags, message, kind):
    write_suite(tmp_path / "suite", 1)
    if kind == "run":
        args = ["--suite", str(tmp_path / "suite"), "--out", str(tmp_path / "run")]
    else:
        conversation = tmp_path / "c.json"
        conversation.write_text('[{"role": "user", "content": "I like tea."}]')
        args = ["memory", "add", str(conversation), "--user-id", "tim"]
        args += ["--db", str(tmp_path / "store.sqlite")]
    assert main([*args, "--cache-mode", "off", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"hy-eval: error: {message}"
