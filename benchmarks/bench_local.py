"""The embedded model on this machine: prompt and generation tokens per second, the effect
of llama.cpp's prefix reuse, the JSON-grammar cost of the library's sampler chain against
ours (grammar checked on the argmax first), and the full suite's wall time.

    python benchmarks/bench_local.py            # tokens per second (about a minute)
    python benchmarks/bench_local.py suite      # + the full multi_speaker suite, uncached
    python benchmarks/bench_local.py batch      # batched decoding: cost and determinism
    python benchmarks/bench_local.py bufts      # extra buffer types on vs off
    python benchmarks/bench_local.py omp        # OpenMP wait policy, alone and beside a busy core
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

    from hy_eval.llm.local._llama_worker import fast_grammar_class, plain_class
    from hy_eval.llm.local._local import LocalProvider
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
    fast = fast_grammar_class(llama_cpp)(model_path=path, n_ctx=8192, verbose=False)
    plain = plain_class(llama_cpp)(model_path=path, n_ctx=8192, verbose=False)
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


def batched_decoding() -> None:
    """Why the local provider decodes one sequence at a time: llama.cpp can decode several
    sequences in one batch, cheaper per token, but the logits of a sequence then depend on
    what it is batched with, so greedy answers would depend on which cases happen to run
    together (E6)."""
    import llama_cpp
    import numpy as np

    from hy_eval.llm.local._llama_worker import plain_class
    from hy_eval.llm.local._local import LocalProvider

    path = str(LocalProvider().path)
    holder = plain_class(llama_cpp)(model_path=path, n_ctx=256, verbose=False)
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = 4 * 2048, 512, 512, 4
    params.n_threads = params.n_threads_batch = 2
    ctx = llama_cpp.llama_init_from_model(holder._model.model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    n_vocab = holder._n_vocab
    batch = llama_cpp.llama_batch_init(512, 0, 4)

    def decode(items: list[tuple[int, int, int]]) -> None:  # (token, position, sequence)
        batch.n_tokens = len(items)
        for i, (token, pos, seq) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, True
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    def logits(i: int) -> np.ndarray:
        ptr = llama_cpp.llama_get_logits_ith(ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()

    messages = _real_extraction_messages()
    prompt = holder.tokenize(messages[0]["content"].encode(), add_bos=True)[:500]
    for start in range(0, len(prompt), 500):
        decode([(t, start + i, 0) for i, t in enumerate(prompt[start : start + 500])])
    for seq in (1, 2, 3):
        llama_cpp.llama_memory_seq_cp(memory, 0, seq, -1, -1)
    steps, feed = 30, prompt[100:130]
    last: dict[int, list[np.ndarray]] = {}  # batch size -> sequence 0's last logits
    print(f"{'sequences per batch':<24}{'ms per step':>12}{'ms per token':>14}")
    for n in (1, 2, 4, 1):
        started = time.perf_counter()
        for k in range(steps):
            decode([(feed[k], len(prompt) + k, seq) for seq in range(n)])
        ms = (time.perf_counter() - started) / steps * 1000
        last.setdefault(n, []).append(logits(0))
        print(f"{n:<24}{ms:>12.1f}{ms / n:>14.1f}")
        for seq in range(4):
            llama_cpp.llama_memory_seq_rm(memory, seq, len(prompt), -1)

    def verdict(a: np.ndarray, b: np.ndarray) -> str:
        if (a == b).all():
            return "identical"
        return f"different (max difference {float(np.abs(a - b).max()):.3g})"

    # The same 30 tokens fed to sequence 0: alone twice, then beside 3 copies of itself.
    print(f"sequence 0's logits after {steps} tokens, alone twice: {verdict(*last[1])}")
    print(f"alone vs batched with 3 others: {verdict(last[1][0], last[4][0])}")
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    holder.close()


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


def extra_bufts() -> None:
    """What loading without llama.cpp's extra buffer types (the AMX repack
    segfaults on some Xeons) costs on this CPU: one real extraction request of the suite,
    answered greedily under the extraction schema, with the weights repacked (the
    library's default) and without (what the local provider does). Each prompt is
    evaluated once before timing; the answers are compared too."""
    import llama_cpp

    from hy_eval.llm.local._llama_worker import fast_grammar_class
    from hy_eval.llm.local._local import LocalProvider
    from hy_eval.memory._extract import EXTRACTION_SCHEMA

    path = str(LocalProvider().path)
    fast = fast_grammar_class(llama_cpp)
    library = llama_cpp.Llama

    class Repacked(fast):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            library.__init__(self, *args, **kwargs)  # the library's default parameters

    messages = _real_extraction_messages()
    kwargs = {
        "messages": messages,
        "max_tokens": 300,
        "temperature": 0.0,
        "response_format": {"type": "json_object", "schema": EXTRACTION_SCHEMA},
    }
    rates, texts, prompt_rates = {}, {}, {}
    for label, cls in (("extra buffer types on", Repacked), ("extra buffer types off", fast)):
        llm = cls(model_path=path, n_ctx=8192, n_threads=2, verbose=False)
        started = time.perf_counter()
        r = llm.create_chat_completion(messages=messages, max_tokens=1)  # the cold prompt
        secs = time.perf_counter() - started
        n = r["usage"]["prompt_tokens"]
        prompt_rates[label] = n / secs
        print(f"{label + ', prompt':<36}{n:>6} tokens{secs:>8.2f} s{n / secs:>8.1f} tok/s")
        started = time.perf_counter()
        r = llm.create_chat_completion(**kwargs)
        secs = time.perf_counter() - started
        n = r["usage"]["completion_tokens"]
        rates[label], texts[label] = n / secs, r["choices"][0]["message"]["content"]
        print(f"{label + ', generation':<36}{n:>6} tokens{secs:>8.2f} s{n / secs:>8.1f} tok/s")
        llm.close()
    same = texts["extra buffer types on"] == texts["extra buffer types off"]
    print(f"same answer: {same}")
    ratio = rates["extra buffer types off"] / rates["extra buffer types on"]
    print(f"RATIO generation speed, extra buffer types off / on = {ratio:.2f}")
    ratio = prompt_rates["extra buffer types off"] / prompt_rates["extra buffer types on"]
    print(f"RATIO prompt speed, extra buffer types off / on = {ratio:.2f}")


def _timed_run(out: Path, env: dict[str, str], cases: int) -> tuple[float, list[str]]:
    """Wall time of ``cases`` English cases run uncached, and each case's facts."""
    import json

    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "run_eval.py"),
            "--suite",
            "multi_speaker",
            "--filter",
            "lang=en",
            "--limit",
            str(cases),
            "--cache-mode",
            "off",
            "--out",
            str(out),
        ],
        check=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    lines = (out / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return wall, sorted(json.dumps(json.loads(x)["facts"], sort_keys=True) for x in lines)


def omp_wait_policy(cases: int = 6) -> None:
    """llama.cpp's OpenMP threads spin while they wait for each other. With another
    process busy on one of the two cores, a spinning thread that is descheduled holds the
    others up. This times the same cases uncached with the default policy and with
    OMP_WAIT_POLICY=PASSIVE (waiting threads sleep), alone and beside a busy loop on one
    core, and checks the answers are the same."""
    import os

    hog_code = "while True: pass"
    results: dict[str, tuple[float, list[str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for busy in (False, True):
            hog = subprocess.Popen([sys.executable, "-c", hog_code]) if busy else None
            try:
                for policy in ("", "PASSIVE"):
                    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
                    if policy:
                        env["OMP_WAIT_POLICY"] = policy
                    label = f"{policy or 'default':<8} {'beside a busy core' if busy else 'alone'}"
                    results[label] = _timed_run(Path(tmp) / label.replace(" ", "_"), env, cases)
                    print(f"{label:<30} {results[label][0]:7.1f} s for {cases} cases")
            finally:
                if hog is not None:
                    hog.kill()
    walls = {k: v[0] for k, v in results.items()}
    answers = {tuple(v[1]) for v in results.values()}
    print(f"same facts in all four runs: {len(answers) == 1}")
    for where in ("alone", "beside a busy core"):
        ratio = walls[f"PASSIVE  {where}"] / walls[f"default  {where}"]
        print(f"RATIO wall time, PASSIVE / default, {where} = {ratio:.2f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["omp"]:
        omp_wait_policy()
        sys.exit()
    if sys.argv[1:] == ["bufts"]:
        extra_bufts()
        sys.exit()
    if sys.argv[1:] == ["batch"]:
        batched_decoding()
        sys.exit()
    tokens_per_second()
    if sys.argv[1:] == ["suite"]:
        full_suite()
