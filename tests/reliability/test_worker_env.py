"""An external system's worker gets an allow-listed environment (docs/systems.md, "Environment the harness gives the worker"; docs/reliability.md, "The
model server"). A planted worker stores every variable it was given as a memory,
base64-encoded, past the redaction of a literal key: the provider's keys, a proxy's
password and a cloud secret set in the run's environment must reach no file of the run,
in any form, and the worker's key is the model server's token."""

import base64
import json
import sys
from pathlib import Path

from hy_eval.harness import RunConfig, Runner
from hy_eval.harness.systems._external import PASSED_PREFIXES, PASSED_VARIABLES
from tests.loopback import LoopbackServer, Reply, openai_completion

PLANTED = Path(__file__).with_name("planted_worker.py")
CANARIES = {
    "OPENAI_API_KEY": "sk-canary-openai-item4-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-canary-item4-0123456789",
    "HTTPS_PROXY": "http://user:canary-proxy-pass-item4@proxy.example:3128",
    "AWS_SECRET_ACCESS_KEY": "canary-aws-secret-item4-0123456789",
    "PYTHONPATH": "/canary/pythonpath/item4",
}
#: What the harness sets for a worker on top of the allow-list.
SET_FOR_WORKER = {
    "HOME",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "HY_EVAL_API_KEY",
    "HY_EVAL_BASE_URL",
    "HY_EVAL_MODEL",
    "HY_EVAL_EMBED_MODEL",
    "HY_EVAL_EMBED_DIMS",
    "HY_EVAL_WORKDIR",
    "HY_EVAL_MEMORY_AT",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
}


def write_suite(folder: Path) -> str:
    case = {
        "id": "leak-00",
        "lang": "en",
        "rules": ["A1"],
        "messages": [{"role": "user", "name": "Tim", "content": "I like tea."}],
        "expect": {"facts": [{"subject": "user", "owner": "user", "keywords": ["tea"]}]},
    }
    folder.mkdir()
    (folder / "leak.jsonl").write_text(json.dumps(case) + "\n")
    return str(folder)


def test_a_planted_worker_sees_no_key_of_ours(tmp_path, monkeypatch):
    monkeypatch.setattr(
        "hy_eval.harness.systems._launch.ensure_venv", lambda name: Path(sys.executable)
    )
    monkeypatch.setattr("hy_eval.harness.systems._external.worker_script", lambda name: PLANTED)
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    with LoopbackServer(lambda req: Reply(body=openai_completion("{}"))) as upstream:
        config = RunConfig(
            suite=write_suite(tmp_path / "suite"),
            system="mem0",
            provider="openai",
            model="scripted",
            base_url=upstream.openai_url,  # the key behind the server: OPENAI_API_KEY's
            cache_mode="off",
            out=str(tmp_path / "run"),
            progress=False,
            retries=0,
            max_error_rate=1.0,
            concurrency=1,
        )
        run_dir, _summary, _code = Runner(config).run()
    [record] = [json.loads(line) for line in (run_dir / "cases.jsonl").open()]
    memories = record["store_after"]["memories"]
    env = dict(base64.b64decode(m["text"]).decode().split("=", 1) for m in memories)
    # Nothing but the allow-list and what the harness sets.
    for name in env:
        assert (
            name in SET_FOR_WORKER or name in PASSED_VARIABLES or name.startswith(PASSED_PREFIXES)
        ), name
    assert env["LC_ALL"] == "C.UTF-8"
    # The SDKs' keys are the server's token, their base URLs the server.
    token = env["HY_EVAL_API_KEY"]
    assert len(token) >= 43
    assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == token
    assert env["OPENAI_BASE_URL"] == env["HY_EVAL_BASE_URL"]
    assert env["ANTHROPIC_BASE_URL"] + "/v1" == env["HY_EVAL_BASE_URL"]
    assert env["HOME"] == env["HY_EVAL_WORKDIR"]
    # No canary in any file of the run, plain or as the base64 the worker wrote.
    for path in run_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for name, value in CANARIES.items():
                encoded = base64.b64encode(f"{name}={value}".encode())
                assert value.encode() not in data and encoded not in data, (path, name)
