"""The sampling values ``hy-eval serve`` takes are checked and
normalised before they reach a provider or the cache key (docs/reliability.md, "The model
server"). A value out of range is a 400 with one line naming the field; a value that
means the same as another gets the same cache key."""

import http.client
import json
from urllib.parse import urlsplit

import pytest

from hy_eval.llm import LLMServer, ModelOptions
from hy_eval.llm.serve._wire import WireError, read_chat
from tests.loopback import LoopbackServer, Reply, openai_completion

USER = [{"role": "user", "content": "I like tea."}]


def read(provider="openai", **fields):
    return read_chat(
        {"model": "m", "messages": USER, **fields}, provider=provider, default_temperature=0.0
    )


@pytest.mark.parametrize(
    "fields, param",
    [
        ({"max_tokens": 10**30}, "max_tokens"),
        ({"max_tokens": 1_000_001}, "max_tokens"),
        ({"max_completion_tokens": 10**30}, "max_completion_tokens"),
        ({"max_tokens": 5.0}, "max_tokens"),
        ({"seed": 2**63}, "seed"),
        ({"seed": -(2**63) - 1}, "seed"),
        ({"seed": 10**40}, "seed"),
        ({"top_p": -7}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_p": "0.5"}, "top_p"),
        ({"top_p": True}, "top_p"),
        ({"stop": {"a": 1}}, "stop"),
        ({"stop": 5}, "stop"),
        ({"stop": ["a", 5]}, "stop"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"temperature": -0.5}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"n": 1.0}, "n"),
        ({"n": True}, "n"),
        ({"n": 2}, "n"),
        ({"presence_penalty": 3}, "presence_penalty"),
        ({"frequency_penalty": -2.5}, "frequency_penalty"),
        ({"logit_bias": ["x"]}, "logit_bias"),
        ({"logit_bias": {"50256": 101}}, "logit_bias"),
        ({"logit_bias": {"tea": 1}}, "logit_bias"),
    ],
)
@pytest.mark.parametrize("provider", ["openai", "local"])
def test_a_value_out_of_range_is_a_400_naming_its_field(fields, param, provider):
    with pytest.raises(WireError) as caught:
        read(provider, **fields)
    assert caught.value.status == 400
    assert caught.value.param == param
    assert "\n" not in str(caught.value) and param in str(caught.value)


def test_values_in_range_pass_and_are_normalised():
    call = read(
        temperature=-0.0,
        top_p=1,
        max_tokens=1_000_000,
        seed=2**63 - 1,
        stop="\n",
        presence_penalty=-2,
        frequency_penalty=0,
        logit_bias={"50256": -100},
        n=1,
    )
    request = call.request
    assert request.temperature == 0.0 and str(request.temperature) == "0.0"
    assert request.max_tokens == 1_000_000 and request.seed == 2**63 - 1
    assert request.extra_body == {
        "top_p": 1.0,
        "stop": "\n",
        "presence_penalty": -2.0,
        "frequency_penalty": 0.0,
        "logit_bias": {"50256": -100.0},
    }
    assert read(seed=-(2**63), stop=["a", "b", "c", "d"]).request.seed == -(2**63)


def test_stop_null_and_n_null_mean_their_defaults():
    assert read(stop=None, n=None).request.extra_body == {"stop": None}


def _post(url, body, token):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request(
        "POST",
        "/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    resp = conn.getresponse()
    out = resp.status, dict(resp.getheaders()), resp.read()
    conn.close()
    return out


def test_through_the_server_a_bad_value_is_one_line_and_minus_zero_shares_the_key(tmp_path):
    with LoopbackServer(lambda req: Reply(body=openai_completion("ok"))) as upstream:
        options = ModelOptions(
            provider="openai",
            model="gpt-up",
            base_url=upstream.openai_url,
            api_key="sk-x",
            cache_path=str(tmp_path / "cache.sqlite"),
            retries=0,
        )
        server = LLMServer(options).start()
        try:
            base = {"model": "gpt-up", "messages": USER}
            for bad in ({"max_tokens": 10**30}, {"top_p": -7}, {"stop": {"x": 1}}):
                status, _headers, raw = _post(server.url, base | bad, server.token)
                assert status == 400
                assert raw.count(b"\n") <= 1  # one JSON line
                assert json.loads(raw)["error"]["param"] == next(iter(bad))
            assert upstream.count == 0
            first = _post(server.url, base | {"temperature": 0.0}, server.token)
            second = _post(server.url, base | {"temperature": -0.0}, server.token)
        finally:
            server.stop()
    assert first[0] == second[0] == 200
    assert first[1]["x-hy-eval-cache-key"] == second[1]["x-hy-eval-cache-key"]
    assert second[1]["x-hy-eval-cached"] == "true"
    assert upstream.count == 1
