"""Killed and interrupted runs (issue 7): SIGKILL at seeded random moments, then --resume:
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

from ..harness.scripted_suite import SuiteModel
from ..harness.test_run import write_suite

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
