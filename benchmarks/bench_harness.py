"""Harness benchmarks: throughput against the floor, cached re-run, memory, start-up.

    python benchmarks/bench_harness.py throughput [--cases 1000] [--concurrency 32] [--delay 0.1]
    python benchmarks/bench_harness.py memory [--small 1000] [--large 10000]
    python benchmarks/bench_harness.py startup
    python benchmarks/bench_harness.py tricks [--cases 1000] [--stores 500]

Cases are generated from the real suites by renaming speakers. The loopback server, in a
process of its own (``server_process.py``), answers every call after a fixed delay with one
valid scripted answer per stage, so the model costs nothing but the delay. Every figure is
measured in one run and printed with its ratio; nothing is asserted (these machines are
shared and noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_llm import bare_loop  # noqa: E402  (the same floor as the provider benchmark)
from server_process import ServerProcess  # noqa: E402


def generate_suite(folder: Path, n: int) -> Path:
    """``n`` cases from the shipped suite, speakers renamed per copy (ids made unique)."""
    from hy_eval.harness import load_suite

    source = load_suite("multi_speaker").cases  # parsed once: ``cases`` parses each time
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "generated.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for k in range(n):
            case = source[k % len(source)]
            text = case.model_dump_json(exclude_none=True)
            copy = k // len(source)
            if copy:
                for name in sorted(case.named_speakers, key=len, reverse=True):
                    text = re.sub(rf"(?<![\w]){re.escape(name)}(?![\w])", f"{name}{copy}", text)
            data = json.loads(text)
            data["id"] = f"{case.id}-{k}"
            fh.write(json.dumps(data, ensure_ascii=False) + "\n")
    return folder


def run_harness(suite: Path, url: str, cache: Path, out: Path, concurrency: int, mode: str):  # type: ignore[no-untyped-def]
    from hy_eval.harness import RunConfig, Runner

    cfg = RunConfig(
        suite=str(suite),
        provider="openai",
        model="bench",
        base_url=url,
        api_key="bench",
        cache_mode=mode,
        cache_path=str(cache),
        out=str(out),
        progress=False,
        concurrency=concurrency,
    )
    started = time.perf_counter()
    _, summary, _ = Runner(cfg).run()
    return time.perf_counter() - started, summary


class ReportTimer:
    """Times ``write_reports`` inside the runner (the run's report phase)."""

    def __enter__(self) -> ReportTimer:
        from hy_eval.harness.run import _runner

        self.seconds = 0.0
        self._module, self._original = _runner, _runner.write_reports

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return self._original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        _runner.write_reports = timed
        return self

    def __exit__(self, *exc: object) -> None:
        self._module.write_reports = self._original


def warm_imports() -> float:
    """Import what either loop imports on first use, before timing either: module loading
    is a once-per-process cost (the start-up benchmark's), not a per-call one."""
    started = time.perf_counter()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import openai  # noqa: F401
    import pandas  # noqa: F401

    return time.perf_counter() - started


def throughput(args: argparse.Namespace) -> None:
    imports = warm_imports()
    with tempfile.TemporaryDirectory() as tmp:
        suite = generate_suite(Path(tmp) / "bench", args.cases)
        with ServerProcess(args.delay) as server:
            cache = Path(tmp) / "cache.sqlite"
            # refresh: every case asks the model (generated copies can repeat a request)
            # and the answers are written for the cached run below.
            cpu = time.process_time()
            with ReportTimer() as report:
                wall, summary = run_harness(
                    suite, server.openai_url, cache, Path(tmp) / "run1", args.concurrency, "refresh"
                )
            harness_cpu = time.process_time() - cpu
            calls = server.count
            cpu = time.process_time()
            floor = asyncio.run(bare_loop(server.openai_url, calls, args.concurrency))
            floor_cpu = time.process_time() - cpu
            before = server.count
            cached_wall, _ = run_harness(
                suite, server.openai_url, cache, Path(tmp) / "run2", args.concurrency, "read-write"
            )
            cached_requests = server.count - before
    ideal = calls * args.delay / args.concurrency
    print(
        f"{args.cases} cases, {calls} calls, concurrency {args.concurrency}, "
        f"server delay {args.delay * 1000:.0f} ms"
    )
    print(f"{'what':<34}{'seconds':>9}{'x ideal':>9}{'x floor':>9}")
    for name, secs in (
        ("ideal (calls*delay/concurrency)", ideal),
        ("floor: bare AsyncOpenAI loop", floor),
        ("whole harness, uncached", wall),
        ("whole harness, all cached", cached_wall),
    ):
        print(f"{name:<34}{secs:>9.2f}{secs / ideal:>9.2f}{secs / floor:>9.2f}")
    print(f"(imports before timing either loop: {imports:.2f} s)")
    print(f"RATIO harness/floor = {wall / floor:.3f} (target <= 1.25)")
    print(
        f"RATIO cached/uncached = {cached_wall / wall:.3%} (target <= 5%); "
        f"requests during the cached run: {cached_requests} (target 0)"
    )
    # CPU seconds of this process (the server's are its own): steadier than the wall on a
    # shared machine, and what the harness adds once the loop is busy.
    print(
        f"CPU of this process: floor {floor_cpu:.2f} s, harness {harness_cpu:.2f} s "
        f"({harness_cpu / floor_cpu:.2f} x; {(harness_cpu - floor_cpu) / calls * 1000:.1f} ms "
        "a call more)"
    )
    start = wall - summary.wall_s - report.seconds
    print(
        f"uncached run by phase: start {start:.2f} s, cases {summary.wall_s:.2f} s "
        f"(floor {floor:.2f} s: {summary.wall_s / floor:.3f} x), report {report.seconds:.2f} s"
    )


def _rss_child(suite: str, url: str, out: str) -> None:
    from hy_eval.harness import RunConfig, Runner

    cfg = RunConfig(
        suite=suite,
        provider="openai",
        model="bench",
        base_url=url,
        api_key="b",
        cache_mode="off",
        out=out,
        progress=False,
        concurrency=32,
    )
    Runner(cfg).run()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def memory(args: argparse.Namespace) -> None:
    peaks = {}
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(0.0) as server:
        for n in (args.small, args.large):
            suite = generate_suite(Path(tmp) / f"s{n}", n)
            started = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "_rss",
                    str(suite),
                    server.openai_url,
                    str(Path(tmp) / f"run{n}"),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            peaks[n] = int(proc.stdout.strip().splitlines()[-1]) / 1024
            print(
                f"{n:>6} cases: peak RSS {peaks[n]:.0f} MiB, {time.perf_counter() - started:.0f} s"
            )
    print(
        f"RATIO peak RSS {args.large}/{args.small} = {peaks[args.large] / peaks[args.small]:.2f} "
        "(target <= 1.5)"
    )


def startup(_args: argparse.Namespace) -> None:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "run_eval.py"), "--help"], capture_output=True, check=True
        )
        times.append(time.perf_counter() - started)
    print(
        f"python run_eval.py --help: best {min(times):.3f} s, median "
        f"{sorted(times)[2]:.3f} s of 5 (target < 1 s)"
    )


# -- speed tricks against the simple version ----------------------------------------------


def _store_case(store, k: int) -> None:  # type: ignore[no-untyped-def]
    """A case's store work: seed a memory, add two, search, read the user back."""
    with store.transaction():
        store.add_l1_raw("tim", f"[user]: hello {k}")
        store.insert("tim", f"The user likes tea {k}.", "user", "seed")
    with store.transaction():
        store.insert("tim", f"John is a nurse in Berlin {k}.", "user")
        store.insert("tim", f"The user works at Stripe {k}.", "user")
        store.write_profile("tim", {"name": "Tim"})
    store.search("nurse Berlin", "tim")
    store.snapshot("tim")


def store_tricks(n: int) -> dict[str, float]:
    """Milliseconds per case of store set-up plus a case's store work: a new in-memory
    store per case (each migrates and prepares its statements), or one store per worker
    emptied by ``MemoryStore.clear`` after each case (what the runner does)."""
    from hy_eval.memory import MemoryStore

    out: dict[str, float] = {}
    for name in ("new store per case", "one store, clear()"):
        reused = MemoryStore()
        started = time.perf_counter()
        for k in range(n):
            if name == "one store, clear()":
                _store_case(reused, k)
                reused.clear()
                continue
            store = MemoryStore()
            _store_case(store, k)
            store.close()
        out[name] = (time.perf_counter() - started) / n * 1000
    return out


def _report_child(run_dir: str) -> None:
    """In a fresh process (pandas and matplotlib not yet imported): time the report of
    ``run_dir`` as a run's end does it, then warm: the best of three more (the machine's
    speed drifts by a third between runs)."""
    from hy_eval.harness.report import _write as _report
    from hy_eval.harness.runlog import CallCounts, read_run

    manifest = read_run(run_dir).manifest
    times = []
    for _ in range(4):
        started = time.perf_counter()
        _report.write_reports(Path(run_dir), manifest, CallCounts(), 0.0)
        times.append(time.perf_counter() - started)
    print(times[0])
    print(min(times[1:]))


def report_tricks(run_dir: Path) -> dict[str, float]:
    """Seconds of the report of ``run_dir`` in a fresh process, cold and warm."""
    proc = subprocess.run(
        [sys.executable, __file__, "_report", str(run_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    cold, warm = (float(x) for x in proc.stdout.split()[-2:])
    return {"report, cold process": cold, "report, warm": warm}


def row_tricks(records: Path, copies: int) -> dict[str, tuple[float, float]]:
    """Peak MiB and seconds of holding ``copies`` x the records' counts and labels: one
    dict per record (the simple version) vs ``RecordRows`` (tuples and one float array)."""
    import tracemalloc

    from hy_eval.harness.analysis import RecordRows
    from hy_eval.harness.runlog import read_records
    from hy_eval.harness.scoring import METRICS

    recs = list(read_records(records))
    out: dict[str, tuple[float, float]] = {}
    for name in ("dict per record", "RecordRows"):
        tracemalloc.start()
        started = time.perf_counter()
        held: Any = RecordRows() if name == "RecordRows" else []
        for k in range(copies):
            for rec in recs:
                if name == "RecordRows":
                    held.add(rec)
                    continue
                counts = rec.score.get("counts", {})
                row = {"id": f"{rec.id}-{k}", "repeat": rec.repeat, "lang": rec.lang}
                row.update(rules=list(rec.rules), tags=list(rec.tags), passed=rec.passed)
                for m in METRICS:
                    row[f"{m}_num"], row[f"{m}_den"] = counts.get(m, (0, 0))
                held.append(row)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        out[name] = (peak, seconds)
        del held
    return out


def line_costs(records: Path) -> dict[str, float]:
    """Milliseconds per record of writing one ``cases.jsonl`` line, by step: the JSON
    text alone, with the secret redaction every line goes through, and the whole
    ``CaseRecord`` (validation and ``to_line``) as the runner writes it."""
    import json

    from hy_eval._redact import redact
    from hy_eval.harness.runlog import CaseRecord

    data = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    steps = {
        "json.dumps": lambda d: json.dumps(d, ensure_ascii=False),
        "redact(json.dumps)": lambda d: redact(json.dumps(d, ensure_ascii=False)),
        "CaseRecord(**d).to_line()": lambda d: CaseRecord(**d).to_line(),
    }
    out = {}
    for name, step in steps.items():
        started = time.perf_counter()
        for d in data:
            step(d)
        out[name] = (time.perf_counter() - started) / len(data) * 1000
    return out


def tricks(args: argparse.Namespace) -> None:
    warm_imports()
    stores = store_tricks(args.stores)
    floor_per_case = None
    with tempfile.TemporaryDirectory() as tmp:
        suite = generate_suite(Path(tmp) / "bench", args.cases)
        with ServerProcess(args.delay) as server:
            run_dir = Path(tmp) / "run"
            wall, summary = run_harness(
                suite, server.openai_url, Path(tmp) / "c.sqlite", run_dir, 32, "off"
            )
            calls = server.count
            floor = asyncio.run(bare_loop(server.openai_url, calls, 32))
            floor_per_case = floor / args.cases * 1000
        reports = report_tricks(run_dir)
        rows = row_tricks(run_dir / "cases.jsonl", 10_000 // args.cases or 1)
        lines = line_costs(run_dir / "cases.jsonl")
    print(
        f"store, per case ({args.stores} cases; floor per case at concurrency 32: "
        f"{floor_per_case:.2f} ms of wall)"
    )
    for name, ms in stores.items():
        print(f"  {name:<30}{ms:>8.3f} ms")
    print(
        f"RATIO case phase/floor = {summary.wall_s / floor:.3f} (target <= 1.10); "
        f"whole run {wall:.2f} s"
    )
    print(f"report of {args.cases} cases (target < 1 s)")
    for name, secs in reports.items():
        print(f"  {name:<30}{secs:>8.3f} s")
    print(f"rows of {10_000 // args.cases * args.cases or args.cases} records")
    for name, (peak, secs) in rows.items():
        print(f"  {name:<30}{peak:>8.1f} MiB peak{secs:>8.3f} s")
    print("writing one record line, per case")
    for name, ms in lines.items():
        print(f"  {name:<30}{ms:>8.3f} ms")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_rss":
        _rss_child(*sys.argv[2:5])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_report":
        _report_child(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("throughput")
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--delay", type=float, default=0.1)
    p.set_defaults(func=throughput)
    p = sub.add_parser("memory")
    p.add_argument("--small", type=int, default=1000)
    p.add_argument("--large", type=int, default=10000)
    p.set_defaults(func=memory)
    p = sub.add_parser("startup")
    p.set_defaults(func=startup)
    p = sub.add_parser("tricks")
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--stores", type=int, default=500)
    p.add_argument("--delay", type=float, default=0.1)
    p.set_defaults(func=tricks)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
