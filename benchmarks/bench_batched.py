"""Batched decoding with the embedded model: is it worth it on this machine?

One run prints three measurements, all through llama-cpp-python's low-level bindings
(``llama_batch_init``, ``llama_decode``, ``llama_get_logits_ith``, ``llama_memory_*``),
with the model loaded without extra buffer types, as the local provider loads it:

1. decode throughput of the same 8 chat prompts (the model's chat template, 64 greedy
   tokens each) one at a time against 2, 4 and 8 sequences in one ``llama_batch`` (one
   sequence id per request), and whether the batched tokens equal the one-at-a-time ones;
2. a shared prefix: a ~1,000-token system prompt evaluated once and copied to the other
   sequences (``llama_memory_seq_cp``), then only each request's suffix, against each
   full prompt evaluated on its own;
3. the machine's memory bandwidth (numpy copies), the model file's size and the decode
   floor they give (the weights are read once per step), against the measured steps.

    PYTHONPATH=$PWD python benchmarks/bench_batched.py [--rounds 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NEW_TOKENS = 64
BATCH_SIZES = (1, 2, 4, 8)
N_SEQ = 8

QUESTIONS = [
    "What is the capital of France?",
    "Give me three tips for sleeping better.",
    "Explain what a prime number is.",
    "Write a haiku about autumn leaves.",
    "How do I boil an egg?",
    "Why is the sky blue?",
    "Name two benefits of regular exercise.",
    "What does a compiler do?",
]


def _shared_system_prompt(model: Model, target: int = 1000) -> str:
    """About ``target`` tokens of fixed instructions, the same for every request."""
    topics = [
        "names",
        "places",
        "dates",
        "preferences",
        "relationships",
        "jobs",
        "hobbies",
        "plans",
        "health",
        "travel",
        "food",
        "pets",
    ]
    lines = ["You are a careful assistant that extracts facts from conversations."]
    for i, topic in enumerate(topics * 4, 1):
        if len(model.holder.tokenize("\n".join(lines).encode(), add_bos=False)) >= target:
            break
        lines.append(
            f"Rule {i}: when the user mentions {topic}, record each one as a short, "
            f"self-contained sentence in the third person, keep the original spelling, "
            f"never guess what was not said, and merge it with earlier facts about {topic}."
        )
    return "\n".join(lines)


class Model:
    """One model file (loaded once) and one context at a time for :data:`N_SEQ` sequences."""

    def __init__(self, llama_cpp: Any, path: str, threads: int) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from hy_eval.llm.local._llama_worker import plain_class

        self.lc = llama_cpp
        self.threads = threads
        # The holder loads the weights without extra buffer types (AMX repack) and gives
        # the tokenizer and chat template; the measured contexts are made here.
        self.holder = plain_class(llama_cpp)(model_path=path, n_ctx=256, verbose=False)
        self.ctx: Any = None
        self.n_vocab = int(self.holder._n_vocab)
        self.batch = llama_cpp.llama_batch_init(2048, 0, N_SEQ)
        meta = self.holder.metadata
        self.formatter = Jinja2ChatFormatter(
            template=meta["tokenizer.chat_template"],
            eos_token=self.holder.detokenize([self.holder.token_eos()]).decode(),
            bos_token=self.holder.detokenize([self.holder.token_bos()]).decode(),
        )
        self.eos = self.holder.token_eos()

    def new_context(self, unified: bool) -> None:
        """A fresh context for :data:`N_SEQ` sequences: with ``unified``, one KV cache for
        all (``seq_cp`` then shares the prefix's cells); without, a cache stream per
        sequence (4096 / 8 = 512 cells each; about 5-10% faster batched steps here)."""
        if self.ctx is not None:
            self.lc.llama_free(self.ctx)
        params = self.lc.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = 4096, 2048, 512
        params.n_seq_max = N_SEQ
        params.kv_unified = unified
        params.n_threads = params.n_threads_batch = self.threads
        self.ctx = self.lc.llama_init_from_model(self.holder._model.model, params)
        if not self.ctx:
            raise RuntimeError("llama_init_from_model failed")
        self.memory = self.lc.llama_get_memory(self.ctx)

    def chat_tokens(self, system: str | None, user: str) -> list[int]:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user})
        prompt = self.formatter(messages=messages).prompt
        return list(self.holder.tokenize(prompt.encode(), add_bos=False, special=True))

    def clear(self) -> None:
        self.lc.llama_memory_clear(self.memory, True)

    def decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of (token, position, sequence, wants logits) items."""
        b = self.batch
        b.n_tokens = len(items)
        for i, (token, pos, seq, out) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i] = token, pos, 1
            b.seq_id[i][0], b.logits[i] = seq, out
        if self.lc.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed")

    def eval_prompt(self, tokens: list[int], seq: int, start: int = 0) -> None:
        """Evaluate ``tokens`` at positions ``start``.. of ``seq``, logits for the last."""
        for at in range(0, len(tokens), 2048):
            chunk = tokens[at : at + 2048]
            last = at + len(chunk) == len(tokens)
            self.decode(
                [
                    (t, start + at + i, seq, last and i == len(chunk) - 1)
                    for i, t in enumerate(chunk)
                ]
            )

    def argmax(self, i: int) -> int:
        ptr = self.lc.llama_get_logits_ith(self.ctx, i)
        return int(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).argmax())

    def close(self) -> None:
        self.lc.llama_batch_free(self.batch)
        if self.ctx is not None:
            self.lc.llama_free(self.ctx)
        self.holder.close()


def generate(model: Model, prompts: list[list[int]], size: int) -> tuple[list[list[int]], float]:
    """Greedy :data:`NEW_TOKENS` tokens for each prompt, ``size`` sequences decoded together
    (each group's prompts evaluated first, one by one, not timed). Returns the tokens and the
    seconds spent in decode steps. End-of-turn does not stop a sequence: every step does
    the same work."""
    outputs: list[list[int]] = []
    decoding = 0.0
    for g in range(0, len(prompts), size):
        group = prompts[g : g + size]
        model.clear()
        nxt = []
        for seq, tokens in enumerate(group):
            model.eval_prompt(tokens, seq)
            nxt.append(model.argmax(-1))
        outs = [[t] for t in nxt]
        started = time.perf_counter()
        for k in range(NEW_TOKENS - 1):
            model.decode([(outs[s][-1], len(group[s]) + k, s, True) for s in range(len(group))])
            for s in range(len(group)):
                outs[s].append(model.argmax(s))
        decoding += time.perf_counter() - started
        outputs.extend(outs)
    return outputs, decoding


def _until_end(tokens: list[int], eos: int) -> list[int]:
    return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens


def batched_throughput(model: Model, rounds: int) -> dict[int, float]:
    model.new_context(unified=False)
    prompts = [model.chat_tokens(None, q) for q in QUESTIONS]
    generate(model, prompts[:1], 1)  # warm-up
    best: dict[int, float] = {}
    outputs: dict[int, list[list[int]]] = {}
    for _ in range(rounds):
        for size in BATCH_SIZES:
            outs, seconds = generate(model, prompts, size)
            best[size] = min(best.get(size, seconds), seconds)
            outputs.setdefault(size, outs)
            if outs != outputs[size]:
                print(f"  (batch size {size}: two rounds gave different tokens)")
    steps_one = len(prompts) * (NEW_TOKENS - 1)
    lens = sorted(len(p) for p in prompts)
    print(
        f"1. Decode throughput: {len(prompts)} chat prompts ({lens[0]}-{lens[-1]} tokens), "
        f"{NEW_TOKENS} greedy tokens each, best of {rounds} rounds"
    )
    print(
        f"{'sequences/batch':>16}{'ms/step':>10}{'tokens/s':>10}{'x one-at-a-time':>17}"
        f"{'differ (64 tok)':>17}{'differ (to EOS)':>17}"
    )
    base = steps_one / best[1]
    for size in BATCH_SIZES:
        tps = steps_one / best[size]
        ms_step = best[size] / (steps_one / size) * 1000
        ref, got = outputs[1], outputs[size]
        full = sum(a != b for a, b in zip(ref, got, strict=True))
        to_eos = sum(
            _until_end(a, model.eos) != _until_end(b, model.eos)
            for a, b in zip(ref, got, strict=True)
        )
        print(
            f"{size:>16}{ms_step:>10.2f}{tps:>10.1f}{tps / base:>17.2f}"
            f"{f'{full}/{len(ref)}':>17}{f'{to_eos}/{len(ref)}':>17}"
        )
        if full:
            firsts = [
                next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
                for a, b in zip(ref, got, strict=True)
                if a != b
            ]
            print(f"{'':>16}first differing token index per differing sequence: {firsts}")
    return {size: best[size] / (steps_one / size) for size in BATCH_SIZES}


def shared_prefix(model: Model, rounds: int) -> None:
    system = _shared_system_prompt(model)
    prompts = [model.chat_tokens(system, q) for q in QUESTIONS]
    model.new_context(unified=True)
    common = min(map(len, prompts))
    while any(p[:common] != prompts[0][:common] for p in prompts):
        common -= 1
    model.clear()
    model.eval_prompt(prompts[0], 0)  # warm-up
    full_best = shared_best = float("inf")
    full_first: list[int] = []
    shared_first: list[int] = []
    for _ in range(rounds):
        started = time.perf_counter()
        full_first = []
        for tokens in prompts:
            model.clear()
            model.eval_prompt(tokens, 0)
            full_first.append(model.argmax(-1))
        full_best = min(full_best, time.perf_counter() - started)

        started = time.perf_counter()
        model.clear()
        model.eval_prompt(prompts[0][:common], 0)
        for seq in range(1, len(prompts)):
            model.lc.llama_memory_seq_cp(model.memory, 0, seq, -1, -1)
        shared_first = []
        for seq, tokens in enumerate(prompts):
            model.eval_prompt(tokens[common:], seq, start=common)
            shared_first.append(model.argmax(-1))
        shared_best = min(shared_best, time.perf_counter() - started)
    total = sum(len(p) for p in prompts)
    evaluated = common + sum(len(p) - common for p in prompts)
    same = sum(a == b for a, b in zip(full_first, shared_first, strict=True))
    print()
    print(
        f"2. Shared prefix: {len(prompts)} prompts of {min(map(len, prompts))}-"
        f"{max(map(len, prompts))} tokens, {common} of them shared, best of {rounds} rounds"
    )
    print(f"   each full prompt on its own: {total:>6} tokens evaluated {full_best:8.3f} s")
    print(
        f"   prefix once + seq_cp + suffixes: {evaluated:>2} tokens evaluated {shared_best:8.3f} s"
    )
    print(
        f"   saved {full_best - shared_best:.3f} s ({1 - shared_best / full_best:.0%}), "
        f"{full_best / shared_best:.2f} x faster; first greedy token equal in "
        f"{same}/{len(prompts)} requests"
    )


def memory_bandwidth(mib: int = 512, repeats: int = 5) -> tuple[float, float]:
    """GB/s of a numpy copy (bytes read + bytes written), one thread and two threads."""
    src = np.ones(mib * 2**20, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)

    def one() -> float:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            np.copyto(dst, src)
            best = min(best, time.perf_counter() - started)
        return 2 * src.nbytes / best / 1e9

    def two() -> float:
        half = src.nbytes // 2
        parts = [(dst[:half], src[:half]), (dst[half:], src[half:])]
        best = float("inf")
        for _ in range(repeats):
            workers = [threading.Thread(target=np.copyto, args=p) for p in parts]
            started = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            best = min(best, time.perf_counter() - started)
        return 2 * src.nbytes / best / 1e9

    return one(), two()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import llama_cpp

    from hy_eval.llm.local._local import embedded_model_path

    path = embedded_model_path()
    print(
        f"llama-cpp-python {llama_cpp.__version__}, {path.name}, {args.threads} threads, "
        f"{os.cpu_count()} cores"
    )
    model = Model(llama_cpp, str(path), args.threads)
    try:
        step = batched_throughput(model, args.rounds)
        shared_prefix(model, args.rounds)
    finally:
        model.close()

    one, two = memory_bandwidth()
    size = path.stat().st_size
    bw = max(one, two)
    floor = size / (bw * 1e9)
    best_size = min(step, key=lambda s: step[s] / s)
    print()
    print("3. Memory bandwidth and the decode floor")
    print(f"   numpy copy, read + written: {one:.1f} GB/s one thread, {two:.1f} GB/s two")
    print(
        f"   model file: {size / 1e6:.1f} MB -> floor {floor * 1000:.2f} ms per step "
        f"(file size / {bw:.1f} GB/s)"
    )
    print(f"   one at a time: {step[1] * 1000:.2f} ms per step = {step[1] / floor:.1f} x the floor")
    print(
        f"   best batched ({best_size} sequences): {step[best_size] * 1000:.2f} ms per step "
        f"= {step[best_size] / floor:.1f} x the floor, "
        f"{step[best_size] / best_size * 1000:.2f} ms per token"
    )


if __name__ == "__main__":
    main()
