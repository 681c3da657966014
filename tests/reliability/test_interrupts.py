"""Killed and interrupted runs: SIGKILL at seeded random moments, then --resume:
every case exactly once and the same summary as an uninterrupted run over the same cache.
SIGINT stops cleanly and says how to resume."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel

ROOT = Path(__file__).resolve().parents[2]


def cli(server, suite_dir, cache, *extra):
    return [
        sys.executable,
        str(ROOT / "run_eval.py"),
        "--suite",
        str(suite_dir),
        "--provider",
        "openai",
        "--model",
        "scripted",
        "--base-url",
        server.openai_url,
        "--cache",
        str(cache),
        "--concurrency",
        "4",
        "--quiet",
        *extra,
    ]


class SlowSuiteModel(SuiteModel):
    def answer(self, req):
        reply = super().answer(req)
        reply.delay = 0.02
        return reply


def ids_of(run_dir):
    return [json.loads(line)["id"] for line in (run_dir / "cases.jsonl").read_text().splitlines()]


def test_sigkill_at_random_moments_then_resume(tmp_path):
    suite = write_suite(tmp_path / "toy", 40)
    cache = tmp_path / "cache.sqlite"
    rng = random.Random(2026)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with SlowSuiteModel(suite.cases) as model:
        # The reference: one uninterrupted run (it also fills the cache for some cases).
        reference = tmp_path / "reference"
        subprocess.run(
            cli(model.server, tmp_path / "toy", cache, "--out", str(reference)),
            check=True,
            capture_output=True,
            env=env,
            timeout=120,
        )
        expected = json.loads((reference / "summary.json").read_text())["metrics"]
        killed_mid_run = 0
        for trial in range(10):
            run_dir = tmp_path / f"trial{trial}"
            fresh_cache = tmp_path / f"cache{trial}.sqlite"  # so each trial asks the model
            proc = subprocess.Popen(
                cli(model.server, tmp_path / "toy", fresh_cache, "--out", str(run_dir)),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
            )
            time.sleep(rng.uniform(0.3, 1.5))
            if proc.poll() is None:
                killed_mid_run += 1
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            done_before = len(ids_of(run_dir)) if (run_dir / "cases.jsonl").exists() else 0
            if not (run_dir / "manifest.json").exists():
                continue  # killed before the run folder existed: nothing to resume
            result = subprocess.run(
                cli(model.server, tmp_path / "toy", fresh_cache, "--resume", str(run_dir)),
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert result.returncode == 0, result.stderr
            ids = ids_of(run_dir)
            assert sorted(ids) == sorted(c.id for c in suite.cases), (trial, done_before)
            assert len(ids) == len(set(ids))
            got = json.loads((run_dir / "summary.json").read_text())["metrics"]
            assert got == expected, trial
    assert killed_mid_run >= 5  # the kills really landed during runs


def test_sigint_stops_cleanly_with_resume_hint(tmp_path):
    suite = write_suite(tmp_path / "toy", 60)
    with SlowSuiteModel(suite.cases) as model:
        run_dir = tmp_path / "run"
        proc = subprocess.Popen(
            cli(
                model.server,
                tmp_path / "toy",
                tmp_path / "c.sqlite",
                "--out",
                str(run_dir),
                "--concurrency",
                "1",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 60
        records = run_dir / "cases.jsonl"
        while time.time() < deadline and not (
            records.exists() and records.read_text().count("\n") >= 2
        ):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert f"Resume with: python run_eval.py --resume {run_dir}" in err
    assert "Traceback" not in err
    done = ids_of(run_dir)
    assert 0 < len(done) < 60 and len(done) == len(set(done))


FAKE_WORKER = ROOT / "tests" / "llm" / "fake_llama_worker.py"


def local_run(tmp_path, slow_from, slow_s=30):
    """A CLI run on the local provider with the scripted stand-in worker: requests from the
    ``slow_from``-th on take ``slow_s`` seconds (touching ``slow`` first). Returns the
    process and the marker, run folder and cache paths."""
    write_suite(tmp_path / "toy", 6)
    marker = tmp_path / "slow"
    plan = tmp_path / "plan.gguf"
    plan.write_text(
        json.dumps({"slow_from": slow_from, "slow_s": slow_s, "slow_marker": str(marker)})
    )
    run_dir, cache = tmp_path / "run", tmp_path / "c.sqlite"
    # One case at a time: the tests count the worker's requests in order.
    args = ["--suite", str(tmp_path / "toy"), "--model", str(plan), "--cache", str(cache)]
    args += ["--concurrency", "1"]
    code = (
        "import sys; from pathlib import Path; from hy_eval.llm.local import _local; "
        f"_local.WORKER_SCRIPT = Path({str(FAKE_WORKER)!r}); from hy_eval.cli import main; "
        f"sys.exit(main({[*args, '--out', str(run_dir), '--quiet']!r}))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not marker.exists() and proc.poll() is None:
        time.sleep(0.02)
    assert marker.exists(), proc.communicate()
    time.sleep(0.3)
    return proc, run_dir, cache


def cached_answers(cache):
    import sqlite3

    with sqlite3.connect(cache) as db:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


def test_ctrl_c_on_the_local_model_exits_at_once_keeping_the_answers(tmp_path):
    # Every case asks for the same reconcile answer (cached after t-00): requests 1-2 are
    # t-00's, 3-5 the extractions of t-01 to t-03, and request 6, t-04's extraction, is
    # the one the model is still computing at Ctrl-C.
    proc, run_dir, cache = local_run(tmp_path, slow_from=6)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    took = time.perf_counter() - sent
    assert proc.returncode == 130, err
    assert took < 2.0, (took, err)
    assert err.count("interrupted") == 1, err
    assert err.count("Resume with:") == 1, err
    assert "Traceback" not in err
    # The message says the running case's unfinished answer is discarded, and no longer
    # offers a second Ctrl-C that the finished run could not take.
    assert "its unfinished model answer is discarded" in err and "Ctrl-C again" not in err
    print(f"exit {took:.2f} s after SIGINT")
    assert ids_of(run_dir) == ["t-00", "t-01", "t-02", "t-03"]
    assert cached_answers(cache) == 5


class StallingSuiteModel(SuiteModel):
    """Quick answers for the first few requests, then 30 s each (a remote call in flight
    that a first Ctrl-C leaves its grace period to end)."""

    def __init__(self, cases, quick):
        super().__init__(cases)
        self.quick = quick
        self.served = 0

    def answer(self, req):
        reply = super().answer(req)
        self.served += 1
        reply.delay = 0.01 if self.served <= self.quick else 30
        return reply


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    suite = write_suite(tmp_path / "toy", 20)
    run_dir = tmp_path / "run"
    with StallingSuiteModel(suite.cases, quick=4) as model:
        proc = subprocess.Popen(
            cli(model.server, tmp_path / "toy", tmp_path / "c.sqlite", "--out", str(run_dir)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline and model.served <= 4:
            time.sleep(0.02)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.perf_counter() - sent
    assert proc.returncode == 130, err
    # Quit at once, not at the end of the first Ctrl-C's grace period: the process ended
    # in the second handler, before the run could say what it kept (which the grace
    # path prints on its way out). Not a timing: a loaded machine must not fail it.
    assert "Ctrl-C again: quitting now" in err
    assert "Resume with" not in err, err
    assert took < 30, took  # the stalled answers (30 s) were not waited for
    assert err.count("interrupted") == 1, err
    assert "Traceback" not in err
