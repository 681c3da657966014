"""Provider-layer overhead against a bare AsyncOpenAI loop, and cached re-run speed.

    python benchmarks/bench_llm.py [--calls 400] [--concurrency 20] [--delay 0.1]

Both loops make the same calls against the same loopback server (fixed delay per
answer, in a process of its own: ``server_process.py``) in one run; the figures to read
are the ratios (target: provider layer at most 1.10 x the bare loop). Nothing is asserted:
this machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_process import ServerProcess

from hy_eval.llm import AnswerCache, LLMClient, Request, make_provider


async def bare_loop(url: str, calls: int, concurrency: int) -> float:
    import openai

    client = openai.AsyncOpenAI(api_key="bench", base_url=url, max_retries=0)
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await client.chat.completions.create(
                model="bench",
                messages=[{"role": "user", "content": f"bare {i}"}],
                temperature=0.0,
                max_tokens=100,
            )

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def layer_loop(client: LLMClient, calls: int, tag: str) -> float:
    requests = [
        Request.of([{"role": "user", "content": f"{tag} {i}"}], max_tokens=100)
        for i in range(calls)
    ]
    started = time.perf_counter()
    await asyncio.gather(*(client.complete(r) for r in requests))
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.1)
    args = ap.parse_args()
    ideal = args.calls * args.delay / args.concurrency
    with ServerProcess(args.delay) as server, tempfile.TemporaryDirectory() as tmp:
        cache = AnswerCache(Path(tmp) / "bench.sqlite")

        async def run_all() -> tuple[float, float, float, int]:
            bare = await bare_loop(server.openai_url, args.calls, args.concurrency)
            provider = make_provider("openai", "bench", base_url=server.openai_url, api_key="b")
            client = LLMClient(provider, cache=cache, concurrency=args.concurrency)
            layer = await layer_loop(client, args.calls, "layer")
            before = server.count
            cached = await layer_loop(client, args.calls, "layer")
            await client.aclose()
            return bare, layer, cached, server.count - before

        bare, layer, cached, cached_requests = asyncio.run(run_all())
    rows = [
        ("ideal (calls*delay/conc)", ideal),
        ("bare AsyncOpenAI loop", bare),
        ("provider layer (uncached)", layer),
        ("provider layer (cached)", cached),
    ]
    print(f"calls {args.calls}, concurrency {args.concurrency}, delay {args.delay * 1000:.0f} ms")
    print(f"{'what':<28}{'seconds':>10}{'x ideal':>10}{'x bare':>10}")
    for name, seconds in rows:
        print(f"{name:<28}{seconds:>10.3f}{seconds / ideal:>10.3f}{seconds / bare:>10.3f}")
    print(
        f"cached: {args.calls / cached:,.0f} calls/s, {cached / layer:.3%} of the uncached "
        f"wall time, {cached_requests} requests reached the server"
    )
    print(f"RATIO provider_layer/bare = {layer / bare:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
