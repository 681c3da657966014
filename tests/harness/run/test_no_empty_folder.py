"""A run that fails before its first case leaves no folder in reports/ (docs/ci.md's gate command on a fresh clone exited 4 on a replay-only miss and left an
empty run folder); one that failed after some cases keeps them, for --resume."""

import pytest

from hy_eval.harness import RunConfig, RunError, Runner
from tests.harness.run.test_run import config, write_suite
from tests.harness.scripted_suite import SuiteModel, perfect_extraction
from tests.loopback import Reply


def test_a_replay_only_miss_at_the_first_case_leaves_no_folder(tmp_path):
    suite = write_suite(tmp_path / "toy", 3)
    out = tmp_path / "run"
    with SuiteModel(suite.cases) as model:
        cfg = config(
            model.server,
            tmp_path,
            suite=str(tmp_path / "toy"),
            out=out,
            cache_mode="replay-only",
            cache_path=str(tmp_path / "empty.sqlite"),
            concurrency=1,
        )
        with pytest.raises(RunError) as info:
            Runner(cfg).run()
    assert info.value.exit_code == 4
    assert not out.exists()


def test_a_miss_after_finished_cases_keeps_the_folder(tmp_path):
    suite = write_suite(tmp_path / "toy", 3)
    cache = str(tmp_path / "cache.sqlite")
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    with SuiteModel(suite.cases, ext) as model:
        # The first case's answers cached, then a replay of all three misses on the second.
        Runner(
            config(
                model.server,
                tmp_path,
                suite=str(tmp_path / "toy"),
                out=tmp_path / "a",
                cache_mode="read-write",
                cache_path=cache,
                limit=1,
            )
        ).run()
        out = tmp_path / "b"
        cfg = config(
            model.server,
            tmp_path,
            suite=str(tmp_path / "toy"),
            out=out,
            cache_mode="replay-only",
            cache_path=cache,
            concurrency=1,
        )
        with pytest.raises(RunError):
            Runner(cfg).run()
    assert (out / "cases.jsonl").read_text().count("\n") == 1


def test_a_failed_resume_keeps_its_folder(tmp_path):
    suite = write_suite(tmp_path / "toy", 2)
    ext = {c.id: perfect_extraction(c) for c in suite.cases}
    ext["t-01"] = Reply(500, {"error": {"message": "down"}})
    out = tmp_path / "run"
    with SuiteModel(suite.cases, ext) as model:
        Runner(
            config(
                model.server,
                tmp_path,
                suite=str(tmp_path / "toy"),
                out=out,
                retries=0,
                max_error_rate=1.0,
            )
        ).run()
    assert (out / "manifest.json").exists()
    with pytest.raises(RunError):  # another model than the run's: refused
        Runner(RunConfig(resume=str(out), provider="anthropic", progress=False)).run()
    assert (out / "manifest.json").exists() and (out / "cases.jsonl").exists()
