"""The embedded model on this machine: prompt and generation tokens per second, and the
effect of llama.cpp's prefix reuse (a repeated prompt prefix is not evaluated again).

    python benchmarks/bench_local.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from hy_eval.llm._local import LocalProvider, _load
    from hy_eval.memory import PromptLibrary

    provider = LocalProvider()
    llm, _lock = _load(provider.path, provider.n_ctx)
    prompts = PromptLibrary()
    variables = {
        "conversation": "[user]: I like coffee.",
        "history": "",
        "user_name": None,
        "named_speakers": [],
        "lang": "en",
    }
    system = prompts.render("extract", "en", variables).system
    llm.create_chat_completion(messages=[{"role": "user", "content": "hi"}], max_tokens=1)  # warm
    llm.reset()
    llm.set_cache(None)  # cold: no prefix reuse
    rows = []
    for label, content in (
        ("cold prompt A", "[user]: I like coffee."),
        ("cold prompt B", "[user]: I like tea."),
    ):
        llm.reset()
        t = time.perf_counter()
        r = llm.create_chat_completion(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": content}],
            max_tokens=1,
            temperature=0.0,
        )
        rows.append((label, r["usage"]["prompt_tokens"], time.perf_counter() - t))
    # Same system prompt, new user text: the shared prefix stays in the KV cache.
    t = time.perf_counter()
    r = llm.create_chat_completion(
        messages=[
            {"role": "system", "content": system},
            {"role": "user", "content": "[user]: I like juice."},
        ],
        max_tokens=1,
        temperature=0.0,
    )
    rows.append(("warm prefix", r["usage"]["prompt_tokens"], time.perf_counter() - t))
    t = time.perf_counter()
    r = llm.create_chat_completion(
        messages=[{"role": "user", "content": "Write a long story about a dog."}],
        max_tokens=128,
        temperature=0.0,
    )
    gen = r["usage"]["completion_tokens"]
    gen_s = time.perf_counter() - t
    print(f"{'what':<16}{'tokens':>8}{'seconds':>9}{'tok/s':>9}")
    for label, n, secs in rows:
        print(f"{label:<16}{n:>8}{secs:>9.2f}{n / secs:>9.0f}")
    print(f"{'generation':<16}{gen:>8}{gen_s:>9.2f}{gen / gen_s:>9.1f}")
    print(f"RATIO warm/cold prompt time = {rows[2][2] / rows[0][2]:.3f}")


if __name__ == "__main__":
    main()
