"""A JSON schema that llama.cpp cannot compile into a grammar gets one
behaviour on every path of the embedded model: the request is refused with one line (a
400 from ``hy-eval serve``), the model process goes on, and llama.cpp's dump of the
grammar (100 to 200 KB) does not reach stderr.

Before: ``maxItems: 5000`` (over llama.cpp's repetition limit) was answered with prose
on the one-call path at temperature 0, crashed the process (SIGSEGV) at temperature 0.5,
and printed the whole grammar; a schema the converter refuses fell back to any JSON on
the one-call path while the batch path refused it."""

import json
import subprocess
import sys

import openai
import pytest

from hy_eval.llm import ModelOptions, serve_in_thread
from hy_eval.llm.local._local import WORKER_SCRIPT, embedded_model_path

pytestmark = pytest.mark.slow

TOO_MANY = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}, "maxItems": 5000}},
    "required": ["facts"],
}
UNCONVERTIBLE = {"type": "object", "properties": {"a": {"type": "frobnicate"}}}
GOOD = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
    "required": ["facts"],
}


def request(i, schema, temperature=0.0):
    return {
        "id": i,
        "messages": [{"role": "user", "content": "I like tea."}],
        "temperature": temperature,
        "max_tokens": 12,
        "seed": 0,
        "schema": schema,
    }


@pytest.mark.parametrize("slots", [1, 2], ids=["one-call", "batch"])
def test_an_uncompilable_schema_is_refused_in_one_line_on_every_path(slots):
    lines = [
        request(1, TOO_MANY),
        request(2, TOO_MANY, temperature=0.5),
        request(3, UNCONVERTIBLE),
        request(4, UNCONVERTIBLE, temperature=0.5),
        request(5, GOOD),
    ]
    done = subprocess.run(
        [sys.executable, str(WORKER_SCRIPT), str(embedded_model_path()), "1024", "1", str(slots)],
        input="".join(json.dumps(r) + "\n" for r in lines),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    for i in (1, 2, 3, 4):
        assert replies[i]["error"] == "bad_request", replies[i]
        message = replies[i]["message"]
        assert "JSON schema" in message and "\n" not in message and len(message) < 400
    assert "repetitions" in replies[1]["message"]
    assert "frobnicate" in replies[3]["message"]
    # The same process answers a good schema, under its grammar (cut at 12 tokens).
    assert replies[5]["text"].replace(" ", "").startswith('{"facts":[')
    assert len(done.stderr) < 2000, done.stderr[:300]  # the grammar was 100-200 KB


def test_serve_answers_an_uncompilable_schema_with_a_400_and_goes_on(tmp_path):
    url, token, stop = serve_in_thread(
        ModelOptions(provider="local", cache_path=str(tmp_path / "cache.sqlite"), retries=0)
    )
    try:
        client = openai.OpenAI(base_url=url, api_key=token, max_retries=0)
        messages = [{"role": "user", "content": "I like tea."}]
        for schema in (TOO_MANY, UNCONVERTIBLE):
            fmt = {"type": "json_schema", "json_schema": {"name": "facts", "schema": schema}}
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(
                    model="SmolLM2-135M-Instruct",
                    messages=messages,
                    max_tokens=12,
                    response_format=fmt,
                )
            message = caught.value.body["message"]
            assert "JSON schema" in message and "\n" not in message
        fmt = {"type": "json_schema", "json_schema": {"name": "facts", "schema": GOOD}}
        answer = client.chat.completions.create(
            model="SmolLM2-135M-Instruct", messages=messages, max_tokens=12, response_format=fmt
        )
    finally:
        stop()
    assert answer.choices[0].message.content
