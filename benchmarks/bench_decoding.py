"""The embedded model's ways of decoding, on the same real requests, through the real
local provider: one request at a time against batched decoding, several model processes,
and both, with the machine's memory-bandwidth floor for this model file.

The requests are the first N model calls of the committed cassette
(``tests/cassettes/multi_speaker.default.local.jsonl``: extraction and reconcile prompts
of the ``multi_speaker`` suite, English and Chinese), sent as the pipeline sends them
(the schema's properties in the pipeline's order; the cassette stores sorted keys).
Each configuration gets new model processes, each warmed (not timed) with one short call
per distinct system prompt among the requests, so that its prefixes are evaluated as in a
long run; then all N requests at once (the harness keeps ``processes x slots`` calls in
flight). Printed
per configuration: wall time, generated tokens per second, the ratio to one at a time,
and how many answers equal the one-at-a-time answers (and the cassette's).

    PYTHONPATH=$PWD python benchmarks/bench_decoding.py [--requests 16]
        [--configs 1x2x1,1x2x8,2x1x1,2x1x4]   # processes x threads x slots
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_batched import memory_bandwidth  # noqa: E402

from hy_eval.llm import Request  # noqa: E402
from hy_eval.llm.local import _local  # noqa: E402
from hy_eval.memory import EXTRACTION_SCHEMA, RECONCILE_SCHEMA  # noqa: E402

CASSETTE = ROOT / "tests" / "cassettes" / "multi_speaker.default.local.jsonl"


def _in_order(template: Any, data: Any) -> Any:
    """``data`` with its keys in ``template``'s order (then any others)."""
    if isinstance(template, dict) and isinstance(data, dict):
        keys = [k for k in template if k in data] + [k for k in data if k not in template]
        return {k: _in_order(template.get(k), data[k]) for k in keys}
    return data


def cassette_requests(n: int) -> tuple[list[Request], list[str]]:
    """The first ``n`` requests of the cassette and the answers it recorded."""
    requests, answers = [], []
    with CASSETTE.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            asked = row["request"]
            schema = asked["json_schema"]
            reconcile = "operations" in schema["properties"]
            template = RECONCILE_SCHEMA if reconcile else EXTRACTION_SCHEMA
            requests.append(
                Request.of(
                    asked["messages"],
                    temperature=asked["temperature"],
                    max_tokens=asked["max_tokens"],
                    json_schema=_in_order(template, schema),
                )
            )
            answers.append(row["completion"]["text"])
            if len(requests) == n:
                break
    return requests, answers


async def _run(provider: Any, requests: list[Request]) -> list[Any]:
    return await asyncio.gather(*(provider.complete(r, 0) for r in requests))


def measure(processes: int, threads: int, slots: int, requests: list[Request]) -> dict[str, Any]:
    provider = _local.LocalProvider(threads=threads, slots=slots, processes=processes)
    # Not timed: each process loads the model and evaluates each system prompt once (a
    # prefix it then keeps), as it does once per run in a whole suite of 457 cases.
    systems = {r.messages[0]["content"] for r in requests if r.messages[0]["role"] == "system"}
    for system in sorted(systems):
        say = [{"role": "system", "content": system}, {"role": "user", "content": "Hi."}]
        warm = [Request.of(say, temperature=0.0, max_tokens=1) for _ in range(processes)]
        asyncio.run(_run(provider, warm))
    started = time.perf_counter()
    answers = asyncio.run(_run(provider, requests))
    seconds = time.perf_counter() - started
    _local._close_processes()
    return {
        "seconds": seconds,
        "texts": [a.text for a in answers],
        "generated": sum(a.usage.output_tokens for a in answers),
        "prompt": sum(a.usage.input_tokens for a in answers),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--configs", default="1x2x1,1x2x8,2x1x1,2x1x4")
    args = parser.parse_args()
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    requests, recorded = cassette_requests(args.requests)
    path = _local.embedded_model_path()
    print(
        f"{path.name} ({path.stat().st_size / 1e6:.1f} MB), {os.cpu_count()} cores, "
        f"{len(requests)} cassette requests"
    )
    print(
        f"{'processes x threads x slots':>28}{'seconds':>9}{'gen tok/s':>11}{'x first':>9}"
        f"{'= first':>9}{'= cassette':>12}"
    )
    first: dict[str, Any] | None = None
    for processes, threads, slots in configs:
        got = measure(processes, threads, slots, requests)
        first = first or got
        rate = got["generated"] / got["seconds"]
        base = first["generated"] / first["seconds"]
        same = sum(a == b for a, b in zip(got["texts"], first["texts"], strict=True))
        cas = sum(a == b for a, b in zip(got["texts"], recorded, strict=True))
        label = f"{processes} x {threads} x {slots}"
        print(
            f"{label:>28}{got['seconds']:>9.1f}{rate:>11.1f}{rate / base:>9.2f}"
            f"{f'{same}/{len(requests)}':>9}{f'{cas}/{len(requests)}':>12}"
        )
    assert first is not None
    print(f"   ({first['generated']} tokens generated, {first['prompt']} prompt tokens)")
    one, two = memory_bandwidth()
    bw = max(one, two)
    floor = path.stat().st_size / (bw * 1e9)
    print(
        f"memory bandwidth (numpy copy, read + written): {one:.1f} GB/s one thread, "
        f"{two:.1f} GB/s two -> a decode step reads the weights once: floor {floor * 1000:.2f} "
        f"ms a step, {1 / floor:.0f} steps/s"
    )


if __name__ == "__main__":
    main()
