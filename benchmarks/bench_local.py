"""The embedded model on this machine: prompt and generation tokens per second, the effect
of llama.cpp's prefix reuse, the JSON-grammar cost of the library's sampler chain against
ours (grammar checked on the argmax first), and the full suite's wall time.

    python benchmarks/bench_local.py            # tokens per second (about a minute)
    python benchmarks/bench_local.py suite      # + the full multi_speaker suite, uncached
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _real_extraction_messages() -> list[dict[str, str]]:
    import json

    path = ROOT / "tests" / "cassettes" / "multi_speaker.default.local.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    english = [
        r
        for r in rows
        if r["request"]["schema_name"] == "memory_extraction"
        and r["request"]["messages"][-1]["content"].isascii()
    ]
    best = min(english, key=lambda r: abs(r["completion"]["usage"]["output_tokens"] - 250))
    return [dict(m) for m in best["request"]["messages"]]


def tokens_per_second() -> None:
    import llama_cpp

    from hy_eval.llm._local import LocalProvider, _fast_grammar_class
    from hy_eval.memory import PromptLibrary
    from hy_eval.memory._extract import EXTRACTION_SCHEMA

    path = str(LocalProvider().path)
    prompts = PromptLibrary()
    variables = {
        "conversation": "[user]: I like coffee.",
        "history": "",
        "user_name": None,
        "named_speakers": [],
        "lang": "en",
    }
    system = prompts.render("extract", "en", variables).system
    fast = _fast_grammar_class(llama_cpp)(model_path=path, n_ctx=8192, verbose=False)
    plain = llama_cpp.Llama(model_path=path, n_ctx=8192, verbose=False)
    fast.create_chat_completion(messages=[{"role": "user", "content": "hi"}], max_tokens=1)
    rows = []
    for label, content in (
        ("cold prompt A", "[user]: I like coffee."),
        ("cold prompt B", "[user]: I like tea."),
    ):
        fast.reset()
        t = time.perf_counter()
        r = fast.create_chat_completion(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": content}],
            max_tokens=1,
            temperature=0.0,
        )
        rows.append((label, r["usage"]["prompt_tokens"], time.perf_counter() - t))
    # Same system prompt, new user text: the shared prefix stays in the KV cache.
    t = time.perf_counter()
    r = fast.create_chat_completion(
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": "[user]: I like juice."},
        ],
        max_tokens=1,
        temperature=0.0,
    )
    rows.append(("warm prefix", r["usage"]["prompt_tokens"], time.perf_counter() - t))
    print(f"{'what':<40}{'tokens':>8}{'seconds':>9}{'tok/s':>9}")
    for label, n, secs in rows:
        print(f"{label:<40}{n:>8}{secs:>9.2f}{n / secs:>9.0f}")
    # Generation: a real extraction request of the suite (from the committed cassette, the
    # English one whose answer is closest to 250 tokens), free, then under the extraction
    # schema's grammar through both samplers. Each prompt is evaluated before timing.
    messages = _real_extraction_messages()
    gen = {}
    for label, llm, schema in (
        ("generation, no grammar", fast, None),
        ("generation, JSON grammar, library chain", plain, EXTRACTION_SCHEMA),
        ("generation, JSON grammar, argmax first", fast, EXTRACTION_SCHEMA),
    ):
        kwargs = {}
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        llm.create_chat_completion(messages=messages, max_tokens=1)
        t = time.perf_counter()
        r = llm.create_chat_completion(messages=messages, max_tokens=300, temperature=0.0, **kwargs)
        secs = time.perf_counter() - t
        n = r["usage"]["completion_tokens"]
        gen[label] = n / secs
        print(f"{label:<40}{n:>8}{secs:>9.2f}{n / secs:>9.1f}")
    fast.close()
    plain.close()
    print(f"RATIO warm/cold prompt time = {rows[2][2] / rows[0][2]:.3f}")
    speedup = (
        gen["generation, JSON grammar, argmax first"]
        / gen["generation, JSON grammar, library chain"]
    )
    print(f"RATIO JSON generation speed, argmax first / library chain = {speedup:.2f}")


def full_suite() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "run_eval.py"),
                "--suite",
                "multi_speaker",
                "--cache-mode",
                "off",
                "--out",
                str(Path(tmp) / "run"),
            ],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - started
    print(
        f"full multi_speaker suite on the embedded model, uncached: {wall:.0f} s "
        f"({wall / 60:.1f} min; target <= 10 min)"
    )


if __name__ == "__main__":
    tokens_per_second()
    if sys.argv[1:] == ["suite"]:
        full_suite()
