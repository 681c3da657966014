"""cProfile of the harness on generated cases against the benchmark server (no delay), the
run that found the hot spots listed in benchmarks/README.md.

    python benchmarks/profile_harness.py uncached [--cases 1000] [--top 40]
    python benchmarks/profile_harness.py cached       # a second run on the same cache
    python benchmarks/profile_harness.py recompute    # answers cached, records recomputed
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_harness import generate_suite, run_harness, warm_imports  # noqa: E402
from server_process import ServerProcess  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("uncached", "cached", "recompute"))
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    warm_imports()
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(0.0) as server:
        suite = generate_suite(Path(tmp) / "bench", args.cases)
        cache = Path(tmp) / "cache.sqlite"
        if args.what != "uncached":
            wall, _ = run_harness(
                suite, server.openai_url, cache, Path(tmp) / "warm", 32, "refresh"
            )
            print(f"first run: {wall:.2f} s")
        if args.what == "recompute":  # answers stay, finished records go
            import sqlite3

            with sqlite3.connect(cache) as db:
                db.execute("DELETE FROM case_records")
        mode = "refresh" if args.what == "uncached" else "read-write"
        profile = cProfile.Profile()
        profile.enable()
        wall, _ = run_harness(suite, server.openai_url, cache, Path(tmp) / "run", 32, mode)
        profile.disable()
        print(f"profiled run ({args.what}): {wall:.2f} s")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
