"""``hy-eval serve`` as another program meets it: the openai SDK in this process, the
server in a process of its own (``python -m hy_eval serve``), the upstream model in a
third (``server_process.py``). Prints per-call times, what the server adds to a direct
call, cache hits, a burst of concurrent calls, and the embedding stand-in's speed.

    python benchmarks/bench_serve.py            # about a minute
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from server_process import ServerProcess  # noqa: E402

CALLS = 200
MODEL = "bench-model"


def start_serve(
    upstream_url: str, cache: str, *extra: str
) -> tuple[subprocess.Popen[str], str, str]:
    cmd = [sys.executable, "-m", "hy_eval", "serve", "--provider", "openai", "--model", MODEL]
    cmd += ["--base-url", upstream_url, "--structured", "json_schema", "--cache", cache, *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    url, _word, token = proc.stdout.readline().split()[:3]  # the URL, "token", the token
    return proc, url, token


def per_call_ms(client: Any, calls: int, distinct: bool) -> list[float]:
    times = []
    for i in range(calls):
        text = f"message {i}" if distinct else "the same message"
        started = time.perf_counter()
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}])
        times.append((time.perf_counter() - started) * 1000)
    return times


def burst_s(client: Any, n: int, tag: str) -> float:
    def one(i: int) -> None:
        msg = [{"role": "user", "content": f"{tag} {i}"}]
        client.chat.completions.create(model=MODEL, messages=msg)

    started = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - started


def main() -> None:
    import openai

    def sdk(url: str, token: str = "x") -> Any:
        return openai.OpenAI(base_url=url, api_key=token, max_retries=0)

    with tempfile.TemporaryDirectory() as tmp, ServerProcess(delay=0.0) as fast:
        proc, url, token = start_serve(fast.openai_url, f"{tmp}/cache.sqlite")
        try:
            served, direct = sdk(url, token), sdk(fast.openai_url)
            per_call_ms(served, 20, True)  # warm both paths
            per_call_ms(direct, 20, True)
            d = statistics.median(per_call_ms(direct, CALLS, True))
            s = statistics.median(per_call_ms(served, CALLS, True))
            h = statistics.median(per_call_ms(served, CALLS, False))
            print(f"median of {CALLS} sequential calls, upstream answering at once:")
            print(f"  direct to the upstream       {d:6.2f} ms")
            print(f"  through hy-eval serve        {s:6.2f} ms  (+{s - d:.2f} ms)")
            print(f"  through hy-eval serve, hit   {h:6.2f} ms  (cache hit, no upstream call)")
            texts = [f"Tim said on day {i} that he works at Stripe in Berlin." for i in range(100)]
            started = time.perf_counter()
            for _ in range(10):
                served.embeddings.create(model="hy-eval-stand-in-hashed-ngrams-v1", input=texts)
            took = time.perf_counter() - started
            print(f"embeddings: 1,000 texts of ~55 chars, 1536 dims, base64: {took:.2f} s")
        finally:
            proc.terminate()
            proc.wait()
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(delay=0.1) as slow:
        proc, url, token = start_serve(
            slow.openai_url, f"{tmp}/cache.sqlite", "--concurrency", "64"
        )
        try:
            served, direct = sdk(url, token), sdk(slow.openai_url)
            print("bursts of concurrent distinct calls, upstream answering after 100 ms:")
            for n in (16, 64):
                d, s = burst_s(direct, n, "direct"), burst_s(served, n, "served")
                print(f"  {n:3d} at once: direct {d:.2f} s, through hy-eval serve {s:.2f} s")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
