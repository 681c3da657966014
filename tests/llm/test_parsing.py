"""Pure parts of the LLM layer: answer repair, vendor request bodies, prices, backoff."""

import random

import pytest

from hy_eval.llm import ModelSpec, PriceTable, Request, RetryPolicy, Usage, parse_json_answer
from hy_eval.llm.core._base import retry_after_seconds
from hy_eval.llm.providers._anthropic import to_anthropic_request
from hy_eval.llm.providers._openai import to_openai_request


@pytest.mark.parametrize(
    "text, parsed",
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('<think>who is who?</think>\n{"a": 1}', {"a": 1}),
        ('{"a": 1}\nI hope this helps!', {"a": 1}),
        ('Here you go:\n```json\n{"a": 1}\n```', {"a": 1}),
    ],
)
def test_safe_repairs(text, parsed):
    assert parse_json_answer(text) == (parsed, None)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty answer"),
        ("   ", "empty answer"),
        ('{"a": [1, 2', "invalid JSON"),
        ("[1, 2]", "no JSON object"),
        ('Sure! {"a": 1}', "text before the JSON object"),
        ("no json here", "no JSON object"),
    ],
)
def test_failures_are_reported(text, reason):
    parsed, error = parse_json_answer(text)
    assert parsed is None and error.startswith(reason)


def test_openai_body_is_a_pure_function():
    req = Request.of([{"role": "user", "content": "x"}], seed=None, json_schema={"type": "object"})
    body = to_openai_request(req, "m", "json_schema")
    assert "seed" not in body
    assert body["response_format"]["json_schema"]["name"] == "answer"
    assert "response_format" not in to_openai_request(req, "m", "text")


def test_anthropic_body_puts_system_apart():
    req = Request.of(
        [
            {"role": "system", "content": "a"},
            {"role": "system", "content": "b"},
            {"role": "user", "content": "x"},
        ],
        temperature=0.5,
        extra_body={"top_k": 3},
    )
    body = to_anthropic_request(req, "claude")
    assert body["system"] == "a\n\nb"
    assert body["messages"] == [{"role": "user", "content": "x"}]
    assert body["extra_body"] == {"temperature": 0.5, "top_k": 3}
    assert "tools" not in body


def test_retry_after_forms():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_grows_with_jitter_and_honours_retry_after():
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0, jitter=0.25)
    rng = random.Random(1)
    delays = [policy.delay(n, None, rng) for n in (1, 2, 3, 4, 5)]
    for n, d in zip((1, 2, 3, 4), delays, strict=False):
        assert 2 ** (n - 1) <= d <= 2 ** (n - 1) * 1.25
    assert delays[4] <= 12.5
    assert policy.delay(1, 3.0, rng) == 3.0
    assert policy.delay(1, 99.0, rng) == 10.0


def test_prices_unknown_is_none_and_toml_extends(tmp_path):
    table = PriceTable()
    assert table.cost("gpt-4o-mini", Usage(1_000_000, 1_000_000)) == pytest.approx(0.75)
    assert table.cost("my-model", Usage(10, 10)) is None
    f = tmp_path / "prices.toml"
    f.write_text('[models."my-model"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n')
    assert PriceTable.load(f).cost("my-model", Usage(1_000_000, 500_000)) == pytest.approx(2.0)
    f.write_text('[models."x"]\ninput_per_mtok = "a"\n')
    from hy_eval.llm import ConfigError

    with pytest.raises(ConfigError, match="needs numeric"):
        PriceTable.load(f)


def test_model_spec():
    assert ModelSpec.parse("openai:gpt-4o-mini") == ModelSpec("openai", "gpt-4o-mini")
    assert str(ModelSpec.parse("local")) == "local"
    from hy_eval.llm import ConfigError

    with pytest.raises(ConfigError):
        ModelSpec.parse("gemini:pro")
