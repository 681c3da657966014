"""The openai and anthropic providers through their real SDKs against the loopback server
speaking each vendor's wire format: answers, structured output and every error path."""

import asyncio
import time

import pytest

from hy_eval.llm import LLMClient, ProviderError, Request, RetryPolicy, make_provider
from tests.loopback import (
    LoopbackServer,
    Reply,
    anthropic_message,
    error_body,
    openai_completion,
)

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}
FAST = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=2.0)


def sequence(*replies):
    """A script that plays ``replies`` in order, then repeats the last one."""
    items = list(replies)

    def script(req):
        return items[min(req.index, len(items) - 1)]

    return script


def run(client, request):
    async def go():
        try:
            return await client.complete(request)
        finally:
            await client.aclose()

    return asyncio.run(go())


def openai_client(server, **kw):
    provider = make_provider("openai", "gpt-test", base_url=server.openai_url, api_key="sk-test")
    return LLMClient(provider, cache_mode="off", retry=kw.pop("retry", FAST), **kw)


def anthropic_client(server, **kw):
    provider = make_provider(
        "anthropic", "claude-test", base_url=server.anthropic_url, api_key="sk-ant-test"
    )
    return LLMClient(provider, cache_mode="off", retry=kw.pop("retry", FAST), **kw)


REQ = Request.of([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
JSON_REQ = Request.of(
    [{"role": "user", "content": "extract"}], json_schema=SCHEMA, schema_name="memory_extraction"
)

# ---- OpenAI ----------------------------------------------------------------------------


def test_openai_normal_answer_and_wire_format():
    with LoopbackServer(sequence(Reply(body=openai_completion("hello", model="gpt-x")))) as s:
        c = run(openai_client(s), REQ)
    assert (c.text, c.finish_reason, c.model_id) == ("hello", "stop", "gpt-x")
    assert (c.usage.input_tokens, c.usage.output_tokens) == (10, 5)
    [req] = s.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
    ]
    assert req.body["model"] == "gpt-test" and req.body["temperature"] == 0.0


def test_openai_structured_output_uses_json_schema_with_name():
    answer = openai_completion('{"facts": ["a"]}')
    with LoopbackServer(sequence(Reply(body=answer))) as s:
        c = run(openai_client(s), JSON_REQ)
    assert c.parsed == {"facts": ["a"]} and c.parse_error is None
    rf = s.requests[0].body["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "memory_extraction"
    assert rf["json_schema"]["schema"] == SCHEMA


@pytest.mark.parametrize(
    "mode, expected", [("json_object", {"type": "json_object"}), ("text", None)]
)
def test_openai_structured_fallback_modes(mode, expected):
    with LoopbackServer(
        sequence(Reply(body=openai_completion('```json\n{"facts": []}\n```')))
    ) as s:
        provider = make_provider(
            "openai", "m", base_url=s.openai_url, api_key="k", options={"structured": mode}
        )
        c = run(LLMClient(provider, cache_mode="off"), JSON_REQ)
    assert s.requests[0].body.get("response_format") == expected
    assert c.parsed == {"facts": []}  # the fence is a safe repair


def test_openai_429_with_retry_after_then_success():
    replies = sequence(
        Reply(429, error_body(429, "slow down"), headers={"Retry-After": "0.3"}),
        Reply(body=openai_completion("ok")),
    )
    with LoopbackServer(replies) as s:
        client = openai_client(s)
        started = time.perf_counter()
        c = run(client, REQ)
        elapsed = time.perf_counter() - started
    assert c.text == "ok" and c.retries == 1
    assert s.count == 2
    assert elapsed >= 0.3  # Retry-After honoured, not the 10 ms backoff
    assert client.stats.retries == 1 and client.stats.errors == 0


def test_openai_500_then_success():
    replies = sequence(Reply(500, error_body(500, "boom")), Reply(body=openai_completion("ok")))
    with LoopbackServer(replies) as s:
        c = run(openai_client(s), REQ)
    assert c.text == "ok" and s.count == 2


def test_openai_slow_answer_past_timeout_is_retried_then_fails():
    with LoopbackServer(sequence(Reply(delay=1.5, body=openai_completion("late")))) as s:
        client = openai_client(s, timeout=0.3, retry=RetryPolicy(max_retries=1, base_delay=0.01))
        with pytest.raises(ProviderError) as info:
            run(client, REQ)
    assert info.value.kind == "timeout"
    assert s.count == 2
    assert client.stats.errors_by_kind == {"timeout": 1}


def test_openai_connection_reset_then_success():
    replies = sequence(Reply(reset=True), Reply(body=openai_completion("ok")))
    with LoopbackServer(replies) as s:
        c = run(openai_client(s), REQ)
    assert c.text == "ok" and s.count == 2


def test_openai_malformed_json_body_is_retried_and_reported():
    with LoopbackServer(sequence(Reply(body="{not json"))) as s:
        client = openai_client(s, retry=RetryPolicy(max_retries=2, base_delay=0.01))
        with pytest.raises(ProviderError) as info:
            run(client, REQ)
    assert info.value.kind == "server" and "malformed" in str(info.value)
    assert s.count == 3


def test_openai_exhausted_retries():
    with LoopbackServer(sequence(Reply(503, error_body(503, "down")))) as s:
        client = openai_client(s)
        with pytest.raises(ProviderError) as info:
            run(client, REQ)
    assert info.value.status == 503 and "after 3 retries" in str(info.value)
    assert s.count == 4
    assert client.stats.as_dict()["retries"] == 3 and client.stats.errors == 1


def test_openai_400_is_not_retried():
    with LoopbackServer(sequence(Reply(400, error_body(400, "bad schema")))) as s:
        with pytest.raises(ProviderError) as info:
            run(openai_client(s), REQ)
    assert info.value.kind == "bad_request" and s.count == 1


def test_openai_bad_answer_content_is_a_parse_failure_not_an_error():
    truncated = openai_completion('{"facts": ["a", "b', finish_reason="length")
    with LoopbackServer(sequence(Reply(body=truncated))) as s:
        c = run(openai_client(s), JSON_REQ)
    assert c.parsed is None and c.finish_reason == "length"
    assert c.parse_error.startswith("invalid JSON")


# ---- Anthropic -------------------------------------------------------------------------


def test_anthropic_normal_answer_system_apart():
    with LoopbackServer(sequence(Reply(body=anthropic_message(text="hello")))) as s:
        c = run(anthropic_client(s), REQ)
    assert c.text == "hello" and c.finish_reason == "end_turn"
    body = s.requests[0].body
    assert s.requests[0].path == "/v1/messages"
    assert body["system"] == "sys"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["temperature"] == 0.0


def test_anthropic_structured_output_through_forced_tool():
    reply = anthropic_message(tool_input={"facts": ["x"]}, tool_name="memory_extraction")
    with LoopbackServer(sequence(Reply(body=reply))) as s:
        c = run(anthropic_client(s), JSON_REQ)
    assert c.parsed == {"facts": ["x"]} and c.text == '{"facts": ["x"]}'
    body = s.requests[0].body
    assert body["tools"][0]["name"] == "memory_extraction"
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "memory_extraction"}


def test_anthropic_429_retry_after_then_success():
    replies = sequence(
        Reply(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            headers={"retry-after": "0.2"},
        ),
        Reply(body=anthropic_message(text="ok")),
    )
    with LoopbackServer(replies) as s:
        started = time.perf_counter()
        c = run(anthropic_client(s), REQ)
    assert c.text == "ok" and s.count == 2 and time.perf_counter() - started >= 0.2


def test_anthropic_overloaded_529_reset_and_timeout():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    replies = sequence(
        Reply(529, overloaded), Reply(reset=True), Reply(body=anthropic_message(text="ok"))
    )
    with LoopbackServer(replies) as s:
        c = run(anthropic_client(s), REQ)
    assert c.text == "ok" and s.count == 3
    with LoopbackServer(sequence(Reply(delay=1.5, body=anthropic_message(text="late")))) as s:
        client = anthropic_client(s, timeout=0.3, retry=RetryPolicy(max_retries=0))
        with pytest.raises(ProviderError) as info:
            run(client, REQ)
    assert info.value.kind == "timeout" and s.count == 1


def test_anthropic_malformed_json_and_exhausted_retries():
    with LoopbackServer(sequence(Reply(body="<html>oops"))) as s:
        with pytest.raises(ProviderError) as info:
            run(anthropic_client(s, retry=RetryPolicy(max_retries=1, base_delay=0.01)), REQ)
    assert info.value.kind == "server" and s.count == 2


def test_missing_keys_name_the_variable(monkeypatch):
    from hy_eval.llm import ConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_provider("openai")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic")
    with pytest.raises(ConfigError, match="unknown provider 'gemini'"):
        make_provider("gemini")
