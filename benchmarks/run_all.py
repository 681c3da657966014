"""Run every benchmark in turn and print their outputs (figures are ratios measured in one
run each). ``python benchmarks/run_all.py [--quick]``: --quick uses 200 cases and 2,000
for the memory benchmark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    quick = "--quick" in sys.argv
    runs = [
        ["bench_llm.py"],
        ["bench_harness.py", "throughput", *(["--cases", "200"] if quick else [])],
        ["bench_harness.py", "memory", *(["--small", "200", "--large", "2000"] if quick else [])],
        ["bench_harness.py", "startup"],
        ["bench_local.py"],
    ]
    for args in runs:
        print(f"\n$ python benchmarks/{' '.join(args)}", flush=True)
        subprocess.run([sys.executable, str(HERE / args[0]), *args[1:]], check=True)


if __name__ == "__main__":
    main()
