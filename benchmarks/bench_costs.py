"""Per-add cost from finished run folders: sequential model round trips per add (target
<= 2), input and output tokens per stage per case (median and p95) per variant and
language, the share of cases that needed a reconcile call, and wall time.

    python benchmarks/bench_costs.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: bench_costs.py RUN_DIR [RUN_DIR ...]")
    print(
        f"{'run':<40}{'lang':>5}{'stage':>10}{'cases':>6}{'in p50':>8}{'in p95':>8}"
        f"{'out p50':>8}{'out p95':>8}"
    )
    for run in sys.argv[1:]:
        run_dir = Path(run)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        summary = json.loads((run_dir / "summary.json").read_text())
        label = f"{manifest['model']}/{manifest['params']['variant']}"
        tokens: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        trips = []
        for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec["status"] != "ok":
                continue
            trips.append(rec["round_trips"])
            for stage, data in rec["stages"].items():
                tokens[(rec["lang"], stage)].append((data["input_tokens"], data["output_tokens"]))
        for (lang, stage), rows in sorted(tokens.items()):
            arr = np.array(rows)
            print(
                f"{label[:39]:<40}{lang:>5}{stage:>10}{len(rows):>6}"
                f"{np.median(arr[:, 0]):>8.0f}{np.percentile(arr[:, 0], 95):>8.0f}"
                f"{np.median(arr[:, 1]):>8.0f}{np.percentile(arr[:, 1], 95):>8.0f}"
            )
        print(
            f"{label}: round trips per add max {max(trips)}, mean {np.mean(trips):.2f} "
            f"(target <= 2); wall {summary['wall_s']:.0f} s for {summary['cases']} cases "
            f"({summary['wall_s'] / summary['cases']:.1f} s per case)"
        )


if __name__ == "__main__":
    main()
