"""``hy-eval serve`` in front of the embedded llama.cpp model: a JSON-schema request
through the openai SDK is answered by constrained decoding, then from the cache."""

import json

import openai
import pytest

from hy_eval.llm import ModelOptions, serve_in_thread

pytestmark = pytest.mark.slow

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
    "required": ["facts"],
}


def test_the_local_model_answers_a_json_schema_request_then_the_cache_does(tmp_path):
    url, token, stop = serve_in_thread(
        ModelOptions(provider="local", cache_path=str(tmp_path / "cache.sqlite"))
    )
    try:
        client = openai.OpenAI(base_url=url, api_key=token, max_retries=0)
        [model] = [m.id for m in client.models.list().data if "stand-in" not in m.id]
        assert model == "SmolLM2-135M-Instruct"
        fmt = {"type": "json_schema", "json_schema": {"name": "facts", "schema": SCHEMA}}
        messages = [{"role": "user", "content": "I work at Stripe."}]
        answers = [
            client.chat.completions.with_raw_response.create(
                model=model, messages=messages, max_tokens=60, response_format=fmt
            )
            for _ in range(2)
        ]
    finally:
        summary = stop()
    first, second = (a.parse() for a in answers)
    assert isinstance(json.loads(first.choices[0].message.content)["facts"], list)
    assert first.choices[0].message.content == second.choices[0].message.content
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
    assert [a.headers["x-hy-eval-cached"] for a in answers] == ["false", "true"]
    assert (summary.upstream_requests, summary.cache_hits) == (1, 1)
