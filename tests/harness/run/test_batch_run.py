"""``run --batch`` end to end: the scripted model of ``scripted_suite`` behind
the loopback server's batch endpoints, through the real openai provider. Round 1 sends
the extraction requests, round 2 the reconcile requests; the normal run then asks
nothing; its summary equals an interactive run's (timing, cost and call counters
aside); a run killed by SIGKILL while it waits resumes without a second submit."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hy_eval.harness import Runner, load_suite
from hy_eval.llm.batch._engine import STATE_NAME
from tests.harness.scripted_suite import SuiteModel, scripted_config
from tests.loopback import BatchScript, LoopbackServer

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 12
#: Summary fields a batch run may differ in: timing, cost and the call counters.
NOT_COMPARED = ("wall_s", "cost_usd", "calls")


def batch_model(polls=1):
    model = SuiteModel(load_suite("multi_speaker").cases)
    model.server = LoopbackServer(model.answer, batch=BatchScript(polls=polls))
    return model


def prices(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[models."scripted"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n')
    return str(path)


def run_config(server, tmp_path, name, **kw):
    return scripted_config(
        server,
        kw.pop("out", tmp_path / name),
        structured="json_schema",
        cache_mode="read-write",
        cache_path=str(tmp_path / f"{name}.sqlite"),
        limit=kw.pop("limit", LIMIT),
        retries=0,
        prices=prices(tmp_path),
        batch_poll_interval=0.02,
        **kw,
    )


def start_cli(server, tmp_path, out, *extra):
    """``hy-eval run --batch`` in a child process, against ``server``."""
    cmd = [sys.executable, "-m", "hy_eval", "run", "--suite", "multi_speaker"]
    cmd += ["--limit", str(LIMIT), "--provider", "openai", "--model", "scripted"]
    cmd += ["--base-url", server.openai_url, "--api-key", "sk-dummy"]
    cmd += ["--structured", "json_schema", "--cache", str(tmp_path / "batch.sqlite")]
    cmd += ["--out", str(out), "--batch", "--batch-poll-interval", "0.02", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def wait_for_polls(server, child, polls):
    deadline = time.monotonic() + 60
    while server.batch.polls < polls:
        assert child.poll() is None, child.stderr.read()
        assert time.monotonic() < deadline, "the child never polled"
        time.sleep(0.05)


def comparable(summary):
    return {k: v for k, v in summary.to_data().items() if k not in NOT_COMPARED}


def test_batch_run_equals_interactive_run_and_asks_nothing_interactively(tmp_path):
    with batch_model() as model:
        server = model.server
        _, interactive, code = Runner(run_config(server, tmp_path, "interactive")).run()
        assert code == 0
        asked = server.count
        run_dir, batched, code = Runner(run_config(server, tmp_path, "batch", batch=True)).run()
        assert code == 0
        assert server.count == asked  # the batch run made no interactive call
        assert server.batch.submissions == 2  # extraction, then reconcile
    rounds = json.loads((run_dir / STATE_NAME).read_text())["batches"]
    assert [b["round"] for b in rounds] == [1, 2]
    schemas = {b["response_format"]["json_schema"]["name"] for b in server.batched}
    assert schemas == {"memory_extraction", "memory_reconcile"}
    assert len(server.batched) == asked
    assert batched.calls.cache_hits == batched.calls.calls == asked
    assert comparable(batched) == comparable(interactive)
    assert batched.cost_usd == interactive.cost_usd / 2  # the batch price
    assert batched.cost_usd > 0
    assert batched.calls.batch == {
        "batches": 2,
        "requests": asked,
        "succeeded": asked,
        "failed": 0,
        "expired": 0,
        "canceled": 0,
    }


def test_a_second_batch_run_of_the_same_cases_submits_nothing(tmp_path):
    with batch_model() as model:
        server = model.server
        Runner(run_config(server, tmp_path, "batch", batch=True)).run()
        # Another folder, the same cache: every answer is there already.
        cfg = run_config(server, tmp_path, "batch", batch=True, out=str(tmp_path / "again"))
        _, again, code = Runner(cfg).run()
        assert code == 0 and server.batch.submissions == 2 and server.count == 0
    assert again.calls.records_reused == LIMIT


def test_a_run_killed_while_waiting_resumes_without_submitting_again(tmp_path):
    with batch_model(polls=10**6) as model:
        server = model.server
        out = tmp_path / "batch"
        child = start_cli(server, tmp_path, out)
        wait_for_polls(server, child, 3)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert server.batch.submissions == 1
        kept = json.loads((out / STATE_NAME).read_text())["batches"]
        assert [b["status"] for b in kept] == ["submitted"]
        server.batch.script.polls = 0  # the vendor finishes the batch
        cfg = run_config(server, tmp_path, "batch", resume=str(out), out=None)
        _, summary, code = Runner(cfg).run()
        assert code == 0
        # The kept batch was polled, not sent again; round 2 was the only new submit.
        assert server.batch.submissions == 2 and server.count == 0
    assert summary.cases == LIMIT and summary.calls.cache_hits == summary.calls.calls


def test_ctrl_c_leaves_the_batch_running_by_default_and_cancels_it_when_asked(tmp_path):
    with batch_model(polls=10**6) as model:
        server = model.server
        child = start_cli(server, tmp_path, tmp_path / "left")
        wait_for_polls(server, child, 2)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode == 130, err
        assert "left running" in err and "--resume" in err and server.batch.cancels == []
        child = start_cli(server, tmp_path, tmp_path / "cancel", "--batch-cancel-on-interrupt")
        wait_for_polls(server, child, server.batch.polls + 2)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode == 130, err
        assert "were cancelled" in err and len(server.batch.cancels) == 1


def test_a_matrix_run_sends_each_combination_through_batches(tmp_path):
    from hy_eval.harness import run_matrix
    from hy_eval.llm import ModelSpec

    with batch_model() as model:
        server = model.server
        base = run_config(server, tmp_path, "matrix", batch=True, limit=6)
        spec = ModelSpec("openai", "scripted")
        result = run_matrix(base, [spec], ["default", "no_examples"], tmp_path / "matrix")
        assert server.count == 0  # every answer came through a batch
    per_run = [json.loads((e.run_dir / STATE_NAME).read_text())["batches"] for e in result.entries]
    assert [len(b) for b in per_run] == [2, 2]  # extraction and reconcile, per combination
    assert all(e.code == 0 for e in result.entries)


def test_requests_a_batch_did_not_answer_are_asked_interactively(tmp_path):
    with batch_model() as model:
        server = model.server
        _, interactive, _ = Runner(run_config(server, tmp_path, "interactive")).run()
        asked = server.count
        expired = set()

        def expire_first_two(custom_id):
            if len(expired) < 2 or custom_id in expired:
                expired.add(custom_id)
                return True
            return False

        server.batch.script.expire = expire_first_two
        _, batched, code = Runner(run_config(server, tmp_path, "batch", batch=True)).run()
        assert code == 0
        assert server.count - asked == 2  # the two expired requests, asked by the normal run
        assert batched.calls.cache_hits == batched.calls.calls - 2
        assert batched.calls.batch["expired"] == 2
    assert comparable(batched) == comparable(interactive)
