"""An external system in rounds: ``run --system mem0 --batch-dir DIR``
puts serve's cache-or-spool mode in front of the fake worker. Round 1 answers every
model call it has no answer for with an error, so the cases that asked one wait (no
record) while the others finish, and writes the calls as an OpenAI Batch file (exit 5,
saying how many cases finished and wait); once the file is answered, round 2 reads the
answers into the cache and the waiting cases finish, scored as a live run scores them."""

import json

import pytest

from hy_eval._exitcodes import ExitCode
from hy_eval.harness.run import RunError, Runner
from hy_eval.harness.systems._external import PASSED_VARIABLES
from tests.harness.run.test_batch_folder import (
    answer_file,
    check_vllm_input,
    lines_of,
    results_of,
    unanswered,
)
from tests.harness.systems.test_external import config, fake_system, script  # noqa: F401
from tests.loopback import LoopbackServer, Reply


def named(req):
    """``script``'s answer, naming the model asked (as a vendor's answer does)."""
    reply = script(req)
    return Reply(body={**reply.body, "model": req.body["model"]})


def folder_config(server, tmp_path, **kw):
    base = dict(
        cache_mode="read-write",
        cache_path=str(tmp_path / "answers.sqlite"),
        base_url=None,
        api_key=None,
        batch=True,
        batch_dir=str(tmp_path / "batches"),
    )
    return config(server, tmp_path, **{**base, **kw})


def test_an_external_system_finishes_its_cases_in_two_rounds(tmp_path, fake_system):  # noqa: F811
    with LoopbackServer(named) as server:
        _, live, code = Runner(config(server, tmp_path, out=str(tmp_path / "live"))).run()
        assert code == 0
        asked = server.count
        with pytest.raises(RunError) as info:
            Runner(folder_config(server, tmp_path)).run()
        assert server.count == asked  # the round asked the model nothing
        message = str(info.value)
        assert info.value.exit_code == ExitCode.BATCH_WAITING
        # The three cases that fail in the worker itself finished; the two that asked
        # the model wait, their two calls in one request file.
        (path,) = unanswered(tmp_path / "batches")
        assert message.startswith(f"3 cases finished, 2 wait; 2 requests wait in {path};")
        assert f"then run: python run_eval.py --resume {tmp_path / 'run'}" in message
        for line in lines_of(path):
            check_vllm_input(line)
        answer_file(path, results_of(path), server.openai_url)
        assert server.count == 2 * asked
        resumed = folder_config(server, tmp_path, resume=str(tmp_path / "run"), out=None)
        run_dir, rounds, code = Runner(resumed).run()
        assert code == 0 and server.count == 2 * asked  # round 2 answered from the cache
    records = [json.loads(t) for t in (run_dir / "cases.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == [f"t-0{i}" for i in range(2)] + [
        "t-02-die",
        "t-03-garbage",
        "t-04-refuse",
    ]
    assert rounds.metrics == live.metrics


def test_a_case_whose_system_swallows_the_wait_waits_too(tmp_path, fake_system, monkeypatch):  # noqa: F811
    # A system that goes on when its model call is answered 502 (hy_memory does for some
    # calls) finishes the case without that answer: recorded, it would be scored short of
    # a call and never asked again. It waits like a case that failed.
    monkeypatch.setenv("FAKE_SWALLOW", "1")
    passed = ("FAKE_MEASURES", "FAKE_SWALLOW", *PASSED_VARIABLES)
    monkeypatch.setattr("hy_eval.harness.systems._external.PASSED_VARIABLES", passed)
    with LoopbackServer(named) as server:
        _, live, code = Runner(config(server, tmp_path, out=str(tmp_path / "live"))).run()
        assert code == 0
        with pytest.raises(RunError) as info:
            Runner(folder_config(server, tmp_path)).run()
        (path,) = unanswered(tmp_path / "batches")
        assert str(info.value).startswith(f"3 cases finished, 2 wait; 2 requests wait in {path};")
        answer_file(path, results_of(path), server.openai_url)
        resumed = folder_config(server, tmp_path, resume=str(tmp_path / "run"), out=None)
        _, rounds, code = Runner(resumed).run()
    assert code == 0 and rounds.metrics == live.metrics


def test_a_request_that_never_finds_its_answer_fails_its_case_after_the_rounds(
    tmp_path,
    fake_system,  # noqa: F811
    monkeypatch,
):
    # A request that changes each round never finds its answer; here the file is simply
    # never answered, which the run cannot tell apart. With the limit at 1 round the
    # second run records the waiting cases as failed, saying why.
    monkeypatch.setattr("hy_eval.harness.run._batch.ROUNDS_LIMIT", 1)
    with LoopbackServer(named) as server:
        with pytest.raises(RunError) as info:
            Runner(folder_config(server, tmp_path)).run()
        assert "the next records them as failed" in str(info.value)
        resumed = folder_config(server, tmp_path, resume=str(tmp_path / "run"), out=None)
        run_dir, summary, code = Runner(resumed).run()
        assert code == 0 and server.count == 0  # --max-error-rate 1 in this config
    records = {r["id"]: r for r in map(json.loads, (run_dir / "cases.jsonl").open())}
    assert len(records) == 5 and summary.metrics["error_rate"].value == 1.0
    assert "no answer yet for request" in records["t-00"]["error"]
    assert "batches" in records["t-00"]["error"]


def test_serve_answers_from_the_cache_and_writes_its_misses(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import urllib.error
    import urllib.request
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    folder = tmp_path / "batches"
    cmd = [sys.executable, "-m", "hy_eval", "serve", "--provider", "openai"]
    cmd += ["--model", "m", "--cache", str(tmp_path / "c.sqlite"), "--batch-dir", str(folder)]
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "number 0."}]})

    def serve_and_ask():
        env = {**os.environ, "PYTHONPATH": str(root)}
        child = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # The first line: URL  token TOKEN  ...; serve answers only its token's bearer.
        words = child.stdout.readline().split()
        url, token = words[0], words[2]
        ask = urllib.request.Request(
            url + "/chat/completions",
            data=body.encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        )
        try:
            with urllib.request.urlopen(ask, timeout=60) as resp:
                answer = (resp.status, json.load(resp))
        except urllib.error.HTTPError as exc:
            answer = (exc.code, json.load(exc))
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=60)
        return answer, child.returncode, err

    (status, answer), code, err = serve_and_ask()
    assert status == 502 and "no answer yet for request" in answer["error"]["message"]
    assert code == ExitCode.BATCH_WAITING and "1 request waits in" in err
    (path,) = unanswered(folder)
    with LoopbackServer(named) as server:
        answer_file(path, results_of(path), server.openai_url)
    (status, answer), code, err = serve_and_ask()
    assert status == 200 and code == 0, err
    assert json.loads(answer["choices"][0]["message"]["content"]) == {
        "facts": [{"text": "The user likes coffee #0.", "owner": "user"}]
    }
