"""Answers that used to end a whole run: each is now a parse failure
with a one-line reason, or a text that can be cached, never an exception."""

import asyncio
import json

import pytest

from hy_eval.llm import AnswerCache, LLMClient, Request, make_provider, parse_json_answer
from tests.loopback import LoopbackServer, Reply, openai_completion

DEEP = '{"facts": ' + "[" * 5000 + "]" * 5000 + "}"
SHALLOW_BUT_TOO_DEEP = '{"facts": ' + "[" * 70 + "]" * 70 + "}"
LONG_INT = '{"facts": [], "n": ' + "7" * 5000 + "}"
SURROGATE = '{"facts": [{"text": "The user works at Stripe \\ud800.", "owner": "user"}]}'


@pytest.mark.parametrize(
    "text, reason",
    [
        (DEEP, "JSON nested deeper than 64 levels"),
        (SHALLOW_BUT_TOO_DEEP, "nested deeper than 64 levels"),
        (LONG_INT, "a number with more than 4300 digits"),
        (SURROGATE, "facts.0.text: holds a lone surrogate '\\ud800'"),
        ('{"facts": "abc', "invalid JSON: Unterminated string starting at char 10"),
    ],
    ids=["5000-deep", "70-deep", "5000-digits", "lone-surrogate", "unterminated"],
)
def test_unusable_answers_are_parse_failures_with_a_reason(text, reason):
    parsed, error = parse_json_answer(text)
    assert parsed is None
    assert error == reason or error.startswith(reason)
    assert "at at" not in error


def test_a_surrogate_pair_escape_is_ordinary_text():
    parsed, error = parse_json_answer('{"t": "smile \\ud83d\\ude00"}')
    assert error is None and parsed == {"t": "smile \U0001f600"}


def _client(server, tmp_path, mode):
    provider = make_provider("openai", "scripted", base_url=server.openai_url, api_key="k")
    return LLMClient(provider, cache=AnswerCache(tmp_path / "c.sqlite"), cache_mode=mode)


@pytest.mark.parametrize("mode", ["read-write", "refresh", "off"])
def test_a_lone_surrogate_in_the_answer_text_is_cached_as_u_fffd(tmp_path, mode):
    # The body's JSON carries the escape, so the SDK hands over a str with a lone surrogate.
    body = json.dumps(openai_completion('{"facts": [], "note": "bad \ud800 char"}'))
    assert "\\ud800" in body

    with LoopbackServer(lambda req: Reply(body=body)) as server:
        client = _client(server, tmp_path, mode)
        request = Request.of(
            [{"role": "user", "content": "x"}], json_schema={"type": "object"}, schema_name="s"
        )
        completion = asyncio.run(client.complete(request))
    assert completion.text == '{"facts": [], "note": "bad \ufffd char"}'
    assert completion.parsed == {"facts": [], "note": "bad \ufffd char"}
    if mode != "off":
        rows = list(client.cache.rows())
        assert len(rows) == 1 and "\ufffd" in rows[0][2]
