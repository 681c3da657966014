"""Another system says what it is and what went wrong: mem0 on the
embedded model gets the context it needs without a flag, the start line and the run
folder name the system, a run whose every case failed still reads n/m for what the system
cannot measure, and a run over the error tolerance names its commonest error."""

from pathlib import Path

from hy_eval.cli import main
from hy_eval.harness import RunConfig, Runner
from hy_eval.harness.run._plan import plan_run
from hy_eval.harness.systems import LOCAL_CONTEXT
from tests.harness.systems.test_external import config, fake_system, script, suite_folder
from tests.loopback import LoopbackServer

__all__ = ["fake_system"]  # the fixture, imported for the tests below


def test_mem0_on_the_embedded_model_gets_its_context_and_the_folder_names_it(tmp_path):
    suite = suite_folder(tmp_path)
    plan = plan_run(RunConfig(suite=suite, system="mem0", progress=False))
    assert plan.config.context == LOCAL_CONTEXT["mem0"] == 16384
    assert "-toy-mem0-local-default" in plan.run_dir.name
    given = plan_run(RunConfig(suite=suite, system="mem0", context=12288, progress=False))
    assert given.config.context == 12288  # a given --context is kept
    ours = plan_run(RunConfig(suite=suite, progress=False))
    assert ours.config.context is None and "-toy-local-default" in ours.run_dir.name
    other = plan_run(
        RunConfig(suite=suite, system="mem0", provider="openai", model="m", progress=False)
    )
    assert other.config.context is None  # only the embedded model's context is chosen


def test_a_run_whose_every_case_failed_reads_not_measured(tmp_path, fake_system, capsys):
    """The fake worker refuses t-04-refuse: the only case fails, and what mem0 cannot
    measure reads n/m in the summary and the report, not n/a."""
    with LoopbackServer(script) as server:
        run_dir, summary, code = Runner(
            config(server, tmp_path, filter="id=t-04-refuse", max_error_rate=0.0)
        ).run()
    assert code == 3 and summary.metrics["error_rate"].value == 1.0
    assert summary.not_measured is not None
    assert "profile_name_accuracy" in summary.not_measured
    assert "| profile_name_accuracy | n/m |" in (run_dir / "report.md").read_text()
    assert "system mem0" in capsys.readouterr().err  # the start line names the system


def test_over_the_tolerance_the_terminal_names_the_commonest_error(tmp_path, fake_system, capsys):
    with LoopbackServer(script) as server:
        code = main(
            [
                "run",
                "--suite",
                suite_folder(tmp_path),
                "--filter",
                "id=t-04-refuse",
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
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3
    assert err.startswith("hy-eval: error: 100.0% of cases failed with provider errors")
    assert "most often (1 of 1): mem0: the fake refused" in err
    assert str(Path(tmp_path / "r" / "cases.jsonl")) in err
