"""How long a hanging worker of an external system may hold a case is a
flag, ``--case-timeout SECONDS`` (docs/systems.md, docs/reliability.md). It was
``max(600, 10 x --timeout)`` with no way to change it: at least ten minutes a case."""

import json
import time
from pathlib import Path

import pytest

from hy_eval._exitcodes import ExitCode
from hy_eval.cli import main
from hy_eval.harness import RunConfig, Runner
from tests.harness.systems.test_external import fake_system  # noqa: F401 (a fixture)
from tests.loopback import LoopbackServer, Reply, openai_completion


def hanging_suite(folder: Path) -> str:
    """One case the fake worker hangs on (its label says ``hang``), one it answers."""
    lines = []
    for i, label in enumerate(["t-00-hang", "t-01"]):
        case = {
            "id": label,
            "lang": "en",
            "rules": ["A1"],
            "messages": [{"role": "user", "name": "Tim", "content": f"I like tea number {i}."}],
            "expect": {"facts": [{"subject": "user", "owner": "user", "keywords": ["tea"]}]},
        }
        lines.append(json.dumps(case))
    folder.mkdir()
    (folder / "hang.jsonl").write_text("\n".join(lines) + "\n")
    return str(folder)


def reply(req):
    return Reply(body=openai_completion(json.dumps({"facts": [{"text": "Tim likes tea."}]})))


def test_a_hanging_worker_costs_the_case_timeout_given_not_ten_minutes(
    tmp_path,
    fake_system,  # noqa: F811 (the fixture)
):
    with LoopbackServer(reply) as server:
        config = RunConfig(
            suite=hanging_suite(tmp_path / "suite"),
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
            case_timeout=1.5,
        )
        started = time.monotonic()
        Runner(config).run()
        took = time.monotonic() - started
    records = {
        r["id"]: r
        for r in map(json.loads, (tmp_path / "run" / "cases.jsonl").read_text().splitlines())
    }
    assert records["t-00-hang"]["status"] == "error"
    assert "no answer to the case within 1.5 s" in records["t-00-hang"]["error"]
    assert records["t-01"]["status"] != "error"  # a new worker took the next case
    assert took < 30


def test_the_default_is_the_old_rule_and_a_resume_keeps_the_flag():
    assert RunConfig().worker_case_timeout() == 1200.0  # max(600, 10 x 120)
    assert RunConfig(timeout=5.0).worker_case_timeout() == 600.0
    assert RunConfig(case_timeout=90.0).worker_case_timeout() == 90.0
    saved = RunConfig(case_timeout=90.0).params()
    assert saved["case_timeout"] == 90.0
    assert RunConfig().resumed(saved).case_timeout == 90.0
    assert RunConfig(case_timeout=30.0).resumed(saved).case_timeout == 30.0  # a flag given


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_a_meaningless_case_timeout_is_one_line_exit_2(value, tmp_path, capsys):
    code = main(
        [
            "--suite",
            "multi_speaker",
            "--case-timeout",
            value,
            "--system",
            "mem0",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert code == ExitCode.USAGE
    err = capsys.readouterr().err.strip()
    assert "--case-timeout must be" in err and "\n" not in err
    assert not (tmp_path / "r").exists()


def test_a_resume_refuses_a_manifest_case_timeout_that_is_no_number():
    with pytest.raises(ValueError, match="case_timeout"):
        RunConfig().resumed({"case_timeout": "5"})
