"""The openai provider against a real OpenAI-compatible server that nobody here wrote:
llama-cpp-python's own server (the ``server`` extra, a dev dependency) on the embedded
SmolLM2 GGUF, started as a user starts it, through ``tests/llm/llama_server.py`` (models
load without llama.cpp's extra buffer types, whose AMX repack segfaults on some Xeons).

Each mode the server takes answers cases of the suite, the one it refuses
(``json_schema``) fails fast and stops the run with the fix, and ``auto`` finds
``json_object_schema``. One server for the module; few cases and small answers keep it
to about a minute of CPU.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (dev extra)")

from hy_eval.cli import main
from hy_eval.llm import LLMClient, ProviderError, Request, build_client, make_provider
from hy_eval.llm.local._local import embedded_model_path
from hy_eval.llm.providers._structured import ModeMemory
from hy_eval.memory import PromptLibrary
from hy_eval.memory._extract import EXTRACTION_SCHEMA

pytestmark = pytest.mark.slow

WRAPPER = Path(__file__).with_name("llama_server.py")
#: Seconds the server may take to load the model and listen.
READY_WITHIN = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Poll ``GET /models`` until it answers, the process ends, or time runs out."""
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-cpp-python's server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"llama-cpp-python's server not ready in {READY_WITHIN:g} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The base URL of a llama-cpp-python server with model alias ``smollm2``."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    cmd = [
        sys.executable,
        str(WRAPPER),
        "--model",
        str(embedded_model_path()),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        # One llama.cpp thread, as the harness's model processes: the server's default batch
        # team is every core, which spins while a second test worker holds one.
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_ready(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def run_args(url, tmp_path, name, *more):
    return [
        "--suite", "multi_speaker", "--provider", "openai", "--model", "smollm2",
        "--base-url", url, "--cache", str(tmp_path / "cache.sqlite"),
        "--out", str(tmp_path / name), "--concurrency", "1", "--retry-delay", "0.01",
        "--quiet", *more,
    ]  # fmt: skip


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]


def test_auto_finds_json_object_schema_and_two_cases_parse(server, tmp_path, capsys):
    """ms-en-0001 and ms-en-0002 (extraction only) with the default mode for --base-url."""
    code = main(run_args(server, tmp_path, "auto", "--limit", "2"))
    err = capsys.readouterr().err
    assert code == 0, err
    assert "structured output json_object_schema (probe)" in err
    manifest = json.loads((tmp_path / "auto" / "manifest.json").read_text())
    choice = manifest["structured_output"]
    assert (choice["mode"], choice["chosen_by"]) == ("json_object_schema", "probe")
    assert "Input should be 'text' or 'json_object'" in choice["passed_over"]["json_schema"]
    remembered = json.loads((tmp_path / ModeMemory.FILE_NAME).read_text())
    assert remembered[f"{server} smollm2"]["mode"] == "json_object_schema"
    rows = records(tmp_path / "auto")
    assert [r["status"] for r in rows] == ["ok", "ok"]
    # Constrained by the server: every answer follows the schema.
    assert all(r["stages"]["extract"]["parse_error"] is None for r in rows)


def test_tools_mode_answers_a_case_through_the_forced_call(server, tmp_path, capsys):
    code = main(run_args(server, tmp_path, "tools", "--limit", "1", "--structured", "tools"))
    assert code == 0, capsys.readouterr().err
    [row] = records(tmp_path / "tools")
    assert row["status"] == "ok" and row["stages"]["extract"]["parse_error"] is None
    assert row["stages"]["extract"]["finish_reason"] == "tool_calls"


def test_json_schema_is_refused_fast_and_the_run_stops_with_the_fix(server, tmp_path, capsys):
    started = time.perf_counter()
    code = main(
        run_args(server, tmp_path, "refused", "--limit", "12", "--structured", "json_schema")
    )
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    assert code == 3
    [line] = [e for e in err.splitlines() if e.startswith("hy-eval: error:")]
    assert "3 calls in a row failed with the same error: openai: HTTP 500" in line
    assert "rejects response_format json_schema; try --structured json_object_schema" in line
    assert len(records(tmp_path / "refused")) == 2
    assert elapsed < 30  # no retries with backoff: three refusals, then the stop


@pytest.mark.parametrize("mode", ["json_object", "text"])
def test_prompt_modes_are_taken(server, mode):
    """Unconstrained modes: the server answers the extraction prompt with the schema in it
    (64 tokens: whether a tiny model follows a schema it only reads is not the point)."""
    prompt = PromptLibrary("default").render(
        "extract",
        "en",
        {
            "conversation": "[user]: I work at Stripe.",
            "history": "",
            "user_name": None,
            "named_speakers": [],
            "lang": "en",
        },
    )

    request = Request.of(
        prompt.messages(),
        max_tokens=64,
        json_schema=EXTRACTION_SCHEMA,
        schema_name="memory_extraction",
    )
    provider = make_provider("openai", "smollm2", base_url=server, options={"structured": mode})
    client = LLMClient(provider, cache_mode="off")

    async def go():
        try:
            return await client.complete(request)
        finally:
            await client.aclose()

    completion = asyncio.run(go())
    assert completion.usage.output_tokens > 0
    assert client.stats.requests == 1 and client.stats.errors == 0


def test_the_refusal_is_one_request_not_five(server, tmp_path):
    client = build_client(
        "openai", "smollm2", base_url=server, options={"structured": "json_schema"},
        cache_mode="off",
    )  # fmt: skip

    request = Request.of(
        [{"role": "user", "content": "hi"}], max_tokens=8, json_schema={"type": "object"}
    )

    async def go():
        try:
            return await client.complete(request)
        finally:
            await client.aclose()

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert (info.value.kind, info.value.status) == ("bad_request", 500)
    assert client.stats.requests == 1 and client.stats.retries == 0


def test_the_wrapper_loads_models_without_extra_buffer_types():
    """tests/llm/llama_server.py turns off use_extra_bufts in every model's parameters,
    as the harness's own model process does."""
    import types

    from tests.llm.llama_server import without_extra_bufts

    low = types.SimpleNamespace(
        llama_model_default_params=lambda: types.SimpleNamespace(use_extra_bufts=True, n=1)
    )
    without_extra_bufts(low)
    params = low.llama_model_default_params()
    assert params.use_extra_bufts is False and params.n == 1
