"""Run every benchmark in turn and print their outputs (figures are ratios measured in one
run each), then a table of every figure against its target.
``python benchmarks/run_all.py [--quick]``: --quick uses 200 cases and 2,000 for the
memory benchmark and leaves out the full suite on the embedded model (about 10 minutes)."""

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
        ["bench_local.py", *([] if quick else ["suite"])],
    ]
    table: list[tuple[str, str]] = []
    for args in runs:
        command = f"python benchmarks/{' '.join(args)}"
        print(f"\n$ {command}", flush=True)
        proc = subprocess.run(
            [sys.executable, str(HERE / args[0]), *args[1:]],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        print(proc.stdout, end="", flush=True)
        table += [(command, line) for line in proc.stdout.splitlines() if "target" in line]
    print("\n## Figures against their targets (each measured within one run)\n")
    width = max(len(c) for c, _ in table)
    for command, line in table:
        print(f"{command:<{width}}  {line.removeprefix('RATIO ')}")


if __name__ == "__main__":
    main()
