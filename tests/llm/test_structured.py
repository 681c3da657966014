"""Structured-output modes, the auto probe and the early stop on a refusal,
through the real openai SDK against the loopback server playing each server's answers."""

import asyncio
import json
import os

import pytest

from hy_eval.cli import main
from hy_eval.llm import (
    LLMClient,
    ProviderError,
    RepeatedRefusal,
    Request,
    RetryPolicy,
    build_client,
    cache_key,
    make_provider,
)
from hy_eval.llm.providers._openai import to_openai_request
from hy_eval.llm.providers._structured import SCHEMA_INSTRUCTION, ModeMemory, key_options
from tests.loopback import LoopbackServer, Reply, error_body, openai_completion

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}
JSON_REQ = Request.of(
    [{"role": "system", "content": "sys"}, {"role": "user", "content": "extract"}],
    json_schema=SCHEMA,
    schema_name="memory_extraction",
)
#: What llama-cpp-python's server (0.3.36) answers a response_format of type json_schema:
#: HTTP 500 with pydantic's validation message (measured in tests/llm/test_real_server.py).
LLAMA_CPP_PYTHON_REFUSAL = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)
FAST = RetryPolicy(max_retries=4, base_delay=0.01)


def run(client, *requests):
    async def go():
        try:
            return [await client.complete(r) for r in requests]
        finally:
            await client.aclose()

    return asyncio.run(go())


def like_llama_cpp_python(answer='{"facts": ["a"]}'):
    """A script that plays llama-cpp-python's server: json_schema refused with a 500
    validation message, a schema inside json_object honoured, anything else answered."""

    def script(req):
        rf = req.body.get("response_format") or {}
        if rf.get("type") == "json_schema":
            return Reply(500, error_body(500, LLAMA_CPP_PYTHON_REFUSAL))
        schema = json.dumps(rf.get("schema") or req.body.get("tools") or "")
        if "hy_eval_ok" in schema:
            return Reply(body=openai_completion('{"probe": "hy_eval_ok"}'))
        return Reply(body=openai_completion(answer))

    return script


# ---- the request of each mode (pure) ----------------------------------------------------


def test_json_schema_body_and_cache_key_are_unchanged_by_the_other_modes():
    body = to_openai_request(JSON_REQ, "m", "json_schema")
    assert body["messages"] == [dict(m) for m in JSON_REQ.messages]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "memory_extraction", "schema": SCHEMA, "strict": False},
    }
    assert key_options("json_schema") == {"structured": "json_schema"}
    # The key of a plain --provider openai call, as computed before the other modes
    # existed (on d16353c).
    saved = os.environ.pop("OPENAI_BASE_URL", None)
    try:
        client = LLMClient(make_provider("openai", None, api_key="sk-test-key-123"))
    finally:
        if saved is not None:
            os.environ["OPENAI_BASE_URL"] = saved
    req = Request.of(
        [{"role": "user", "content": "extract"}],
        json_schema={"type": "object"},
        schema_name="memory_extraction",
    )
    key = cache_key(client.key_fields(req))
    assert key == "5d81e8e396ce6c458e0e6be6c96cea76e175a3897e7b62575d908e5762ed9771"


def test_schema_inside_json_object_and_forced_tool():
    body = to_openai_request(JSON_REQ, "m", "json_object_schema")
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "tools" not in body
    body = to_openai_request(JSON_REQ, "m", "tools")
    assert "response_format" not in body
    [tool] = body["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "memory_extraction"
    assert tool["function"]["parameters"] == SCHEMA
    assert body["tool_choice"] == {"type": "function", "function": {"name": "memory_extraction"}}


@pytest.mark.parametrize(
    "mode, response_format", [("json_object", {"type": "json_object"}), ("text", None)]
)
def test_prompt_modes_describe_the_schema_in_the_last_user_message(mode, response_format):
    body = to_openai_request(JSON_REQ, "m", mode)
    assert body.get("response_format") == response_format
    system, user = body["messages"]
    assert system == {"role": "system", "content": "sys"}  # the cached prefix is kept
    assert user["content"] == "extract\n\n" + SCHEMA_INSTRUCTION + json.dumps(SCHEMA)
    # Their answers differ from a bare request's, so the key says so.
    assert key_options(mode) == {"structured": mode, "schema_in_prompt": True}


def test_a_request_without_schema_is_plain_in_every_mode():
    plain = Request.of([{"role": "user", "content": "hi"}])
    for mode in ("json_schema", "json_object_schema", "tools", "json_object", "text"):
        body = to_openai_request(plain, "m", mode)
        assert not {"response_format", "tools", "tool_choice"} & set(body)
        assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_tools_mode_reads_the_forced_calls_arguments():
    answer = openai_completion("")
    answer["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "memory_extraction", "arguments": '{"facts": ["b"]}'},
            }
        ],
    }
    answer["choices"][0]["finish_reason"] = "tool_calls"
    with LoopbackServer(lambda req: Reply(body=answer)) as s:
        provider = make_provider(
            "openai", "m", base_url=s.openai_url, options={"structured": "tools"}
        )
        [c] = run(LLMClient(provider, cache_mode="off"), JSON_REQ)
    assert c.parsed == {"facts": ["b"]} and c.finish_reason == "tool_calls"
    assert s.requests[0].body["tool_choice"]["function"]["name"] == "memory_extraction"


# ---- errors no retry cures ---------------------------------------------------------------


def test_a_500_validation_message_is_not_retried_and_names_the_fix():
    with LoopbackServer(lambda req: Reply(500, error_body(500, LLAMA_CPP_PYTHON_REFUSAL))) as s:
        provider = make_provider(
            "openai", "m", base_url=s.openai_url, options={"structured": "json_schema"}
        )
        with pytest.raises(ProviderError) as info:
            run(LLMClient(provider, cache_mode="off", retry=FAST), JSON_REQ)
    assert s.count == 1  # not 5: the server would refuse every retry the same way
    assert info.value.kind == "bad_request" and info.value.status == 500
    assert "rejects response_format json_schema" in info.value.hint
    assert "try --structured json_object_schema" in info.value.hint


def test_a_plain_500_is_still_retried():
    with LoopbackServer(lambda req: Reply(500, error_body(500, "internal error"))) as s:
        provider = make_provider(
            "openai", "m", base_url=s.openai_url, options={"structured": "json_schema"}
        )
        with pytest.raises(ProviderError):
            run(LLMClient(provider, cache_mode="off", retry=FAST), JSON_REQ)
    assert s.count == 5


def test_the_same_refusal_three_times_in_a_row_stops():
    with LoopbackServer(lambda req: Reply(400, error_body(400, "Unknown model 'x'"))) as s:
        provider = make_provider(
            "openai", "m", base_url=s.openai_url, options={"structured": "json_schema"}
        )
        client = LLMClient(provider, cache_mode="off", retry=FAST)

        async def go():
            seen = []
            for _ in range(5):
                try:
                    await client.complete(JSON_REQ)
                except RepeatedRefusal as exc:
                    seen.append(exc)
                    break
                except ProviderError as exc:
                    seen.append(exc)
            await client.aclose()
            return seen

        seen = asyncio.run(go())
    assert [type(e) for e in seen] == [ProviderError, ProviderError, RepeatedRefusal]
    assert s.count == 3
    assert seen[-1].describe().startswith("3 calls in a row failed with the same error")


def test_an_answer_between_refusals_starts_the_count_again():
    replies = iter([400, 400, 200, 400, 400, 200])

    def script(req):
        status = next(replies)
        if status == 400:
            return Reply(400, error_body(400, "context too long"))
        return Reply(body=openai_completion('{"facts": []}'))

    with LoopbackServer(script) as s:
        provider = make_provider(
            "openai", "m", base_url=s.openai_url, options={"structured": "json_schema"}
        )
        client = LLMClient(provider, cache_mode="off", retry=FAST)

        async def go():
            kinds = []
            for _ in range(6):
                try:
                    await client.complete(JSON_REQ)
                    kinds.append("ok")
                except ProviderError as exc:
                    kinds.append(type(exc).__name__)
            await client.aclose()
            return kinds

        kinds = asyncio.run(go())
    assert kinds == ["ProviderError", "ProviderError", "ok"] * 2


# ---- auto --------------------------------------------------------------------------------


def test_auto_probes_once_and_remembers_the_mode_beside_the_cache(tmp_path):
    cache = tmp_path / "c" / "cache.sqlite"
    with LoopbackServer(like_llama_cpp_python(), answer_probes=False) as s:
        client = build_client("openai", "smollm2", base_url=s.openai_url, cache_path=cache)
        probes = s.count
        [c] = run(client, JSON_REQ)
        assert c.parsed == {"facts": ["a"]}
        assert client.provider.structured_choice["mode"] == "json_object_schema"
        assert client.provider.structured_choice["chosen_by"] == "probe"
        # json_schema refused (500), then the schema inside json_object taken.
        assert probes == 2
        assert s.requests[-1].body["response_format"] == {"type": "json_object", "schema": SCHEMA}
        remembered = json.loads((tmp_path / "c" / ModeMemory.FILE_NAME).read_text())
        [entry] = remembered.values()
        assert entry["mode"] == "json_object_schema"
        assert "Input should be" in entry["passed_over"]["json_schema"]
        # The mode is in the key: the same request in another mode is another answer.
        assert client.options == {"structured": "json_object_schema"}

        again = build_client("openai", "smollm2", base_url=s.openai_url, cache_path=cache)
        assert s.count == probes + 1  # no second probe
        assert again.provider.structured_choice["chosen_by"] == "remembered"
        asyncio.run(again.aclose())
        refreshed = build_client(
            "openai", "smollm2", base_url=s.openai_url, cache_path=cache, cache_mode="refresh"
        )
        assert s.count == probes + 3  # refresh probes again
        asyncio.run(refreshed.aclose())


def test_auto_passes_over_a_server_that_ignores_the_schema(tmp_path):
    # Takes every request and ignores every schema: the prompt must carry it.
    with LoopbackServer(
        lambda req: Reply(body=openai_completion("Hello!")), answer_probes=False
    ) as s:
        client = build_client("openai", "m", base_url=s.openai_url, cache_mode="off")
        asyncio.run(client.aclose())
    assert client.provider.structured_choice["mode"] == "json_object"
    passed = client.provider.structured_choice["passed_over"]
    assert list(passed) == ["json_schema", "json_object_schema", "tools"]
    assert all("not in the schema" in why for why in passed.values())
    assert client.options == {"structured": "json_object", "schema_in_prompt": True}


def test_auto_with_a_server_down_is_one_line_not_a_traceback(tmp_path, capsys):
    with LoopbackServer(lambda req: Reply()) as s:
        url = s.openai_url
    code = main(
        [
            "--suite",
            "multi_speaker",
            "--limit",
            "1",
            "--provider",
            "openai",
            "--base-url",
            url,
            "--cache",
            str(tmp_path / "c.sqlite"),
            "--out",
            str(tmp_path / "r"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "cannot find how the server at" in err and "give --structured MODE" in err


def test_auto_without_a_probe_in_replay_only_mode(tmp_path):
    with LoopbackServer(like_llama_cpp_python(), answer_probes=False) as s:
        client = build_client(
            "openai",
            "m",
            base_url=s.openai_url,
            cache_path=tmp_path / "c.sqlite",
            cache_mode="replay-only",
        )
        asyncio.run(client.aclose())
        assert s.count == 0
    assert client.provider.structured_choice == {
        "mode": "json_schema",
        "chosen_by": "replay-only default",
        "remembered_in": str(tmp_path / ModeMemory.FILE_NAME),
    }


def test_openai_itself_keeps_json_schema_without_a_probe():
    saved = os.environ.pop("OPENAI_BASE_URL", None)
    try:
        provider = make_provider("openai", None, api_key="sk-test-key-123")
    finally:
        if saved is not None:
            os.environ["OPENAI_BASE_URL"] = saved
    assert provider.structured_choice == {"mode": "json_schema", "chosen_by": "default"}


# ---- a whole run ---------------------------------------------------------------------------


def run_args(url, tmp_path, *more):
    return [
        "--suite", "multi_speaker", "--limit", "12", "--provider", "openai", "--model", "smollm2",
        "--base-url", url, "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "r"),
        "--concurrency", "1", "--retry-delay", "0.01", "--quiet", *more,
    ]  # fmt: skip


def test_a_run_the_server_refuses_stops_after_three_cases_with_the_fix(tmp_path, capsys):
    with LoopbackServer(like_llama_cpp_python(), answer_probes=False) as s:
        code = main(run_args(s.openai_url, tmp_path, "--structured", "json_schema"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3
    assert s.count == 3  # not 12 cases x 5 attempts
    [line] = [e for e in err if e.startswith("hy-eval: error:")]
    assert "3 calls in a row failed with the same error: openai: HTTP 500" in line
    assert f"the server at {s.openai_url} rejects response_format json_schema" in line
    assert "try --structured json_object_schema" in line
    assert "cases kept in" in line and "--resume" not in line
    records = (tmp_path / "r" / "cases.jsonl").read_text().splitlines()
    assert len(records) == 2  # the cases done before the stop are kept
    assert all(json.loads(r)["status"] == "error" for r in records)


def test_a_run_with_auto_records_the_mode_in_the_manifest(tmp_path, capsys):
    with LoopbackServer(like_llama_cpp_python(), answer_probes=False) as s:
        code = main(run_args(s.openai_url, tmp_path, "--limit", "2"))
    err = capsys.readouterr().err
    assert code == 0
    assert "structured output json_object_schema (probe)" in err
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["structured_output"]["mode"] == "json_object_schema"
    assert manifest["structured_output"]["chosen_by"] == "probe"
    rows = [json.loads(r) for r in (tmp_path / "r" / "cases.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["ok", "ok"]


def test_a_client_built_by_hand_settles_auto_at_its_first_call():
    with LoopbackServer(like_llama_cpp_python(), answer_probes=False) as s:
        provider = make_provider("openai", "m", base_url=s.openai_url)
        assert provider.structured == "auto"
        client = LLMClient(provider, cache_mode="off")
        [c1, c2] = run(client, JSON_REQ, JSON_REQ)
    assert c1.parsed == c2.parsed == {"facts": ["a"]}
    assert s.count == 2 + 2  # one probe (two requests), then the two calls
    assert client.options == {"structured": "json_object_schema"}
    assert provider.structured_choice["chosen_by"] == "probe"
