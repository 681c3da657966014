"""``hy-eval serve`` end to end: the real ``openai`` SDK as the client of our endpoint, the
real provider code behind it, and the loopback server as the upstream model.

What reaches the upstream, what comes back, the answer cache and replay-only mode,
retries and error answers, concurrency, and the server going on after every failure."""

import http.client
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import openai
import pytest

from hy_eval.llm import (
    EMBEDDING_MODEL,
    ConfigError,
    LLMServer,
    ModelOptions,
    PriceTable,
    serve_in_thread,
)
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
FACTS = {"facts": ["Tim likes tea"]}
USER = [{"role": "user", "content": "I like tea."}]


def answer(req):
    """The upstream model: JSON in the form the request asked for, else an echo."""
    body = req.body
    if req.path.endswith("/messages"):  # Anthropic: the forced tool's input
        tool = body.get("tools", [{}])[0].get("name", "answer")
        if body.get("tools"):
            return Reply(body=anthropic_message(tool_input=FACTS, tool_name=tool))
        return Reply(body=anthropic_message(text="echo: " + req.messages[-1]["content"]))
    if body.get("tools"):
        completion = openai_completion("", model="gpt-up")
        call = {"name": body["tools"][0]["function"]["name"], "arguments": json.dumps(FACTS)}
        message = completion["choices"][0]["message"]
        message.update(
            content=None, tool_calls=[{"id": "c1", "type": "function", "function": call}]
        )
        return Reply(body=completion)
    if body.get("response_format"):
        # Fenced, as a model asked in a prompt may answer: the client gets the object.
        return Reply(body=openai_completion("```json\n" + json.dumps(FACTS) + "\n```"))
    return Reply(body=openai_completion("echo: " + req.messages[-1]["content"], model="gpt-up"))


@pytest.fixture
def upstream():
    with LoopbackServer(answer) as server:
        yield server


@pytest.fixture
def serve(tmp_path):
    """``serve(upstream, **options)`` -> (an openai client of the server, the server)."""
    servers = []

    def start(upstream, *, provider="openai", prices=None, **changes):
        settings = {
            "provider": provider,
            "model": "gpt-up" if provider == "openai" else "claude-up",
            "base_url": upstream.openai_url if provider == "openai" else upstream.anthropic_url,
            "api_key": "sk-upstream-key-1",
            "structured": "json_schema" if provider == "openai" else None,
            "cache_path": str(tmp_path / "cache.sqlite"),
            "retries": 2,
            "retry_base_delay": 0.01,
            **changes,
        }
        server = LLMServer(ModelOptions(**settings), prices=prices).start()
        servers.append(server)
        client = openai.OpenAI(base_url=server.url, api_key=server.token, max_retries=0)
        return client, server

    yield start
    for server in servers:
        server.stop()


def chat(client, model="gpt-up", messages=USER, **kw):
    return client.chat.completions.create(model=model, messages=messages, **kw)


# ---- chat completions -------------------------------------------------------------------


def test_a_chat_completion_goes_through_our_provider_and_comes_back_with_usage(upstream, serve):
    client, server = serve(upstream)
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}],
        },
    ]
    resp = chat(client, messages=messages, temperature=0.3, max_tokens=50, seed=7)
    assert resp.object == "chat.completion" and resp.id.startswith("chatcmpl-")
    assert resp.choices[0].message.content == "echo: Hi\nthere"
    assert resp.choices[0].finish_reason == "stop"
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (10, 5)
    assert resp.usage.total_tokens == 15
    [req] = upstream.requests
    assert req.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi\nthere"},
    ]
    assert (req.body["temperature"], req.body["max_tokens"], req.body["seed"]) == (0.3, 50, 7)
    assert req.body["model"] == "gpt-up"
    assert req.headers["authorization"] == "Bearer sk-upstream-key-1"  # ours, not the client's
    summary = server.stop()
    assert (summary.chat_calls, summary.upstream_requests, summary.cache_hits) == (1, 1, 0)
    assert (summary.input_tokens, summary.output_tokens) == (10, 5)


def test_a_request_without_temperature_takes_the_flag_s(upstream, serve):
    client, _server = serve(upstream, temperature=0.6)
    chat(client)
    assert upstream.requests[0].body["temperature"] == 0.6
    assert upstream.requests[0].body["max_tokens"] == 1024


@pytest.mark.parametrize(
    "mode, sent",
    [
        ("json_schema", lambda b: b["response_format"]["json_schema"]["schema"]),
        ("json_object_schema", lambda b: b["response_format"]["schema"]),
        ("tools", lambda b: b["tools"][0]["function"]["parameters"]),
        ("json_object", lambda b: json.loads(b["messages"][-1]["content"].rsplit("\n", 1)[1])),
    ],
)
def test_json_schema_is_passed_on_in_the_mode_the_provider_takes(upstream, serve, mode, sent):
    client, _server = serve(upstream, structured=mode)
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "facts", "schema": SCHEMA, "strict": True},
    }
    resp = chat(client, response_format=fmt)
    # Whatever the mode upstream, the client gets the object as the message's content.
    assert json.loads(resp.choices[0].message.content) == FACTS
    [req] = upstream.requests
    assert sent(req.body) == SCHEMA
    if mode == "json_schema":
        assert req.body["response_format"]["json_schema"]["name"] == "facts"


def test_json_schema_through_the_anthropic_provider_is_a_forced_tool(upstream, serve):
    client, _server = serve(upstream, provider="anthropic")
    fmt = {"type": "json_schema", "json_schema": {"name": "facts", "schema": SCHEMA}}
    resp = chat(client, model="claude-up", response_format=fmt)
    assert json.loads(resp.choices[0].message.content) == FACTS
    [req] = upstream.requests
    assert req.path == "/v1/messages"
    assert req.body["tools"][0]["input_schema"] == SCHEMA
    assert req.body["tool_choice"] == {"type": "tool", "name": "facts"}


def test_json_object_asks_for_any_object(upstream, serve):
    client, _server = serve(upstream)
    resp = chat(client, response_format={"type": "json_object"})
    assert json.loads(resp.choices[0].message.content) == FACTS
    sent = upstream.requests[0].body["response_format"]["json_schema"]
    assert sent["schema"] == {"type": "object"}


def test_one_tool_is_answered_as_its_call(upstream, serve):
    client, _server = serve(upstream)
    tool = {"type": "function", "function": {"name": "add_facts", "parameters": SCHEMA}}
    resp = chat(client, tools=[tool])  # tool_choice auto, one tool: called
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.function.name == "add_facts"
    assert json.loads(call.function.arguments) == FACTS
    assert upstream.requests[0].body["response_format"]["json_schema"]["name"] == "add_facts"
    # Two tools and no choice among them: refused, not guessed.
    other = {"type": "function", "function": {"name": "other", "parameters": SCHEMA}}
    with pytest.raises(openai.BadRequestError, match="one forced tool call"):
        chat(client, tools=[tool, other])
    named = {"type": "function", "function": {"name": "other"}}
    resp = chat(client, tools=[tool, other], tool_choice=named)
    assert resp.choices[0].message.tool_calls[0].function.name == "other"


def test_a_second_identical_call_is_served_from_the_cache(upstream, serve, tmp_path):
    prices = PriceTable({"gpt-up": (1.0, 2.0)})
    client, server = serve(upstream, prices=prices)
    first = client.chat.completions.with_raw_response.create(model="gpt-up", messages=USER)
    second = client.chat.completions.with_raw_response.create(model="gpt-up", messages=USER)
    assert upstream.count == 1
    assert first.headers["x-hy-eval-cached"] == "false"
    assert second.headers["x-hy-eval-cached"] == "true"
    assert first.headers["x-hy-eval-cache-key"] == second.headers["x-hy-eval-cache-key"]
    assert first.parse().choices[0].message.content == second.parse().choices[0].message.content
    assert second.parse().usage.prompt_tokens == 10
    assert float(second.headers["x-hy-eval-cost-usd"]) == pytest.approx(20e-6)
    chat(client, messages=[{"role": "user", "content": "something else"}])
    assert upstream.count == 2
    summary = server.stop()
    assert (summary.chat_calls, summary.cache_hits, summary.upstream_requests) == (3, 1, 2)
    assert (summary.input_tokens, summary.new_input_tokens) == (30, 20)
    assert summary.cost_usd == pytest.approx(60e-6)
    assert summary.new_cost_usd == pytest.approx(40e-6)


def test_replay_only_answers_from_the_cache_and_a_miss_is_a_404(upstream, serve):
    client, server = serve(upstream)
    chat(client)
    server.stop()
    client, server = serve(upstream, cache_mode="replay-only")
    assert chat(client).choices[0].message.content == "echo: I like tea."
    with pytest.raises(openai.NotFoundError) as caught:
        chat(client, messages=[{"role": "user", "content": "never asked"}])
    assert caught.value.body["code"] == "cache_miss"
    assert "replay-only" in caught.value.body["message"]
    assert upstream.count == 1  # the first server's call only
    assert chat(client).choices[0].message.content == "echo: I like tea."  # still serving
    assert server.stop().errors_by_status == {404: 1}


def test_an_upstream_429_with_retry_after_is_retried(upstream, serve):
    replies = iter([Reply(429, error_body(429, "slow down"), headers={"Retry-After": "0.4"})])
    upstream.script = lambda req: next(replies, None) or answer(req)
    client, server = serve(upstream)
    started = time.perf_counter()
    resp = chat(client)
    assert time.perf_counter() - started >= 0.4  # Retry-After, not the 10 ms backoff
    assert resp.choices[0].message.content == "echo: I like tea."
    assert upstream.count == 2
    assert server.stop().retries == 1


def test_an_upstream_500_is_an_error_answer_and_the_server_goes_on(upstream, serve):
    upstream.script = lambda req: Reply(500, error_body(500, "upstream broke"))
    client, server = serve(upstream)
    with pytest.raises(openai.APIStatusError) as caught:
        chat(client)
    assert caught.value.status_code == 502
    assert (
        "HTTP 500" in caught.value.body["message"]
        and "after 2 retries" in caught.value.body["message"]
    )
    assert upstream.count == 3  # the call and our 2 retries
    upstream.script = answer
    assert chat(client).choices[0].message.content == "echo: I like tea."
    summary = server.stop()
    assert (summary.failed, summary.errors_by_status) == (1, {502: 1})


def test_the_same_refusal_again_and_again_never_stops_the_server(upstream, serve):
    upstream.script = lambda req: Reply(400, error_body(400, "bad field"))
    client, _server = serve(upstream)
    for _ in range(4):  # a run would stop at the third (RepeatedRefusal)
        with pytest.raises(openai.BadRequestError, match="bad field"):
            chat(client)
    assert upstream.count == 4  # a refusal is not retried
    upstream.script = answer
    assert chat(client).choices[0].message.content == "echo: I like tea."


@pytest.mark.parametrize(
    "status, kind, expected",
    [(504, "timeout", 504), (401, "auth", 502), (404, "not found", 502), (429, "rate", 429)],
)
def test_upstream_failures_map_to_fitting_statuses(upstream, serve, status, kind, expected):
    if kind == "timeout":
        upstream.script = lambda req: Reply(body=openai_completion("late"), delay=1.5)
        client, _server = serve(upstream, timeout=0.3, retries=0)
    else:
        upstream.script = lambda req: Reply(status, error_body(status, kind))
        client, _server = serve(upstream, retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        chat(client)
    assert caught.value.status_code == expected
    assert caught.value.body["type"] in ("upstream_error", "rate_limit_error")


# ---- malformed requests ---------------------------------------------------------------


def raw_post(server, path, body, headers=None):
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    auth = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    conn.request("POST", path, data, {**auth, **(headers or {})})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read())
    conn.close()
    return out


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"{not json", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not UTF-8"),
        (b"[1, 2]", 400, "must be a JSON object"),
        (
            b'{"model": "gpt-up", "messages": [{"role": "user", "content": "\\ud800"}]}',
            400,
            "surrogate",
        ),
        ({"model": "gpt-up"}, 400, "messages must be"),
        ({"model": "gpt-up", "messages": []}, 400, "messages must be"),
        ({"model": "gpt-up", "messages": [{"role": "robot", "content": "x"}]}, 400, "unknown role"),
        ({"model": "gpt-up", "messages": [{"role": "user", "content": 5}]}, 400, "content must be"),
        ({"model": "gpt-up", "messages": USER, "stream": True}, 400, "streaming is not supported"),
        ({"model": "gpt-up", "messages": USER, "n": 2}, 400, "n = 1"),
        ({"model": "gpt-up", "messages": USER, "temperature": "hot"}, 400, "temperature"),
        ({"model": "gpt-up", "messages": USER, "max_tokens": 0}, 400, "max_tokens"),
        ({"model": "gpt-up", "messages": USER, "top_k": 3}, 400, "unsupported parameter 'top_k'"),
        (
            {"model": "gpt-up", "messages": USER, "response_format": {"type": "yaml"}},
            400,
            "response_format",
        ),
        (
            {"model": "gpt-up", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            400,
            "only text parts",
        ),
        (
            {
                "model": "gpt-up",
                "messages": [{"role": "tool", "content": "x", "tool_call_id": "1"}],
            },
            400,
            "tool results",
        ),
        ({"model": "gpt-4o", "messages": USER}, 404, "does not exist"),
    ],
)
def test_a_malformed_request_gets_an_openai_style_error(upstream, serve, body, status, words):
    _client, server = serve(upstream)
    got, payload = raw_post(server, "/v1/chat/completions", body)
    assert got == status
    assert set(payload["error"]) == {"message", "type", "param", "code"}
    assert words in payload["error"]["message"]
    assert upstream.count == 0
    # And the server goes on.
    assert raw_post(server, "/v1/chat/completions", {"model": "gpt-up", "messages": USER})[0] == 200


def test_streaming_through_the_sdk_is_a_clear_400(upstream, serve):
    client, _server = serve(upstream)
    with pytest.raises(openai.BadRequestError, match="streaming is not supported"):
        chat(client, stream=True)


def test_unknown_paths_methods_and_oversized_bodies(upstream, serve):
    _client, server = serve(upstream)
    assert raw_post(server, "/v1/completions", {})[0] == 404
    parts = urlsplit(server.url)
    auth = {"Authorization": f"Bearer {server.token}"}
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("GET", "/v1/chat/completions", headers=auth)
    assert conn.getresponse().status == 405
    conn.close()
    # A method http.server does not know: its refusal is JSON too.
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("PATCH", "/v1/models", headers=auth)
    resp = conn.getresponse()
    assert resp.status == 501 and "message" in json.loads(resp.read())["error"]
    conn.close()
    # A body announced far too large is refused before it is read.
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: 999999999\r\n\r\n"
            % (parts.hostname.encode(), parts.port, server.token.encode())
        )
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")
    assert raw_post(server, "/v1/chat/completions", {"model": "gpt-up", "messages": USER})[0] == 200


def test_fields_the_provider_cannot_take_are_named_not_sent(upstream, serve):
    client, _server = serve(upstream, provider="anthropic")
    raw = client.chat.completions.with_raw_response.create(
        model="claude-up", messages=USER, top_p=0.1, user="someone"
    )
    assert raw.headers["x-hy-eval-ignored"] == "top_p"
    assert "top_p" not in upstream.requests[0].body


def test_sampling_fields_go_on_to_an_openai_provider(upstream, serve):
    client, _server = serve(upstream)
    chat(client, top_p=0.1, stop=["\n"])
    body = upstream.requests[0].body
    assert (body["top_p"], body["stop"]) == (0.1, ["\n"])


# ---- concurrency, models, stopping ------------------------------------------------------


def test_sixteen_concurrent_requests_are_all_answered(upstream, serve):
    upstream.script = lambda req: Reply(body=answer(req).body, delay=0.3)
    client, server = serve(upstream, concurrency=8)
    texts = [f"message {i}" for i in range(16)]
    started = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        answers = list(
            pool.map(lambda t: chat(client, messages=[{"role": "user", "content": t}]), texts)
        )
    elapsed = time.perf_counter() - started
    assert [a.choices[0].message.content for a in answers] == [f"echo: {t}" for t in texts]
    assert upstream.count == 16
    # 8 at a time: two rounds of 0.3 s, far from the 4.8 s of one at a time.
    assert elapsed < 2.4, elapsed
    assert server.stop().chat_calls == 16


def test_a_burst_of_connections_does_not_stall(upstream, serve):
    """64 connections opened at once: with http.server's listen backlog of 5 some wait
    for the kernel's one-second SYN retry."""
    _client, server = serve(upstream)
    parts = urlsplit(server.url)
    barrier = threading.Barrier(64)

    def one(_i):
        barrier.wait()
        started = time.perf_counter()
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {server.token}"})
        status = conn.getresponse().status
        conn.close()
        return status, time.perf_counter() - started

    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(one, range(64)))
    assert {s for s, _t in results} == {200}
    assert max(t for _s, t in results) < 0.9, sorted(t for _s, t in results)[-5:]


def test_models_lists_the_served_model_and_the_stand_in(upstream, serve):
    client, _server = serve(upstream)
    assert [m.id for m in client.models.list().data] == ["gpt-up", EMBEDDING_MODEL]
    assert client.models.retrieve("gpt-up").owned_by == "hy-eval openai"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_stopping_answers_a_call_in_progress_and_returns(upstream, serve):
    upstream.script = lambda req: Reply(body=openai_completion("late"), delay=5.0)
    client, server = serve(upstream)
    outcome = {}

    def call():
        try:
            chat(client)
            outcome["status"] = 200
        except openai.APIStatusError as exc:
            outcome["status"] = exc.status_code
        except openai.APIConnectionError:
            outcome["status"] = "closed"

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.5)
    started = time.perf_counter()
    server.stop()
    assert time.perf_counter() - started < 3.0
    thread.join(timeout=5)
    assert outcome["status"] == 503


def test_serve_in_thread_gives_the_url_the_token_and_a_stop(upstream, tmp_path):
    options = ModelOptions(
        provider="openai",
        model="gpt-up",
        base_url=upstream.openai_url,
        structured="json_schema",
        cache_path=str(tmp_path / "c.sqlite"),
    )
    url, token, stop = serve_in_thread(options)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    client = openai.OpenAI(base_url=url, api_key=token, max_retries=0)
    assert chat(client).choices[0].message.content == "echo: I like tea."
    summary = stop()
    assert summary.chat_calls == 1
    assert stop() is summary  # twice is fine
    with pytest.raises(openai.APIConnectionError):
        chat(client)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "example.com", "::"])
def test_a_host_that_is_not_loopback_is_refused(upstream, tmp_path, host):
    options = ModelOptions(provider="openai", base_url=upstream.openai_url, structured="text")
    with pytest.raises(ConfigError, match="not a loopback address.*--allow-remote"):
        LLMServer(options, host=host)


@pytest.mark.parametrize("host", ["127.0.0.2", "localhost", "::1"])
def test_loopback_hosts_are_served(upstream, tmp_path, host):
    options = ModelOptions(
        provider="openai",
        model="gpt-up",
        base_url=upstream.openai_url,
        structured="json_schema",
        cache_mode="off",
        cache_path=None,
    )
    with LLMServer(options, host=host) as server:
        client = openai.OpenAI(base_url=server.url, api_key=server.token, max_retries=0)
        assert chat(client).choices[0].message.content == "echo: I like tea."


def test_a_cache_hit_is_answered_in_milliseconds(upstream, serve):
    """Headers and body leave in two writes: with Nagle's algorithm on, the body waits
    for the client's delayed ACK, 40 ms a call."""
    client, _server = serve(upstream)
    chat(client)
    times = []
    for _ in range(15):
        started = time.perf_counter()
        chat(client)
        times.append(time.perf_counter() - started)
    assert upstream.count == 1
    assert sorted(times)[len(times) // 2] < 0.025, times
