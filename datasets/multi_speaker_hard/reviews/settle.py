"""Settle the hard tier from its reviews: a case stays when its last review kept it.

    python datasets/multi_speaker_hard/reviews/settle.py

Each ``hard_*.jsonl`` file was read by a second annotator (``reviews/<file>.review.jsonl``:
keep or drop, with a reason); the dropped cases were repaired by a writer
(``<file>.fixes.jsonl``) and read again by a third annotator (``<file>.review2.jsonl``).
A case's verdict is its second review's when it has one, else its first's. Kept cases
stay in their file; dropped ones move, unchanged, to ``_dropped.jsonl`` (the loader
ignores files starting with ``_``), so nothing is lost. A case no review names stops the
script: every case is read before it counts. Running it again changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TIER = Path(__file__).resolve().parents[1]
REVIEWS = TIER / "reviews"
DROPPED = TIER / "_dropped.jsonl"


def verdicts(stem: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in (f"{stem}.review.jsonl", f"{stem}.review2.jsonl"):  # the second overrides
        path = REVIEWS / name
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    out[row["id"]] = row["verdict"]
    return out


def main() -> int:
    dropped = DROPPED.read_text(encoding="utf-8").splitlines() if DROPPED.is_file() else []
    kept_total = 0
    for path in sorted(TIER.glob("hard_*.jsonl")):
        said = verdicts(path.stem)
        keep, drop = [], []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            cid = json.loads(line)["id"]
            if cid not in said:
                sys.exit(f"settle: {path.name}: {cid} has no review")
            (keep if said[cid] == "keep" else drop).append(line)
        path.write_text("".join(x + "\n" for x in keep), encoding="utf-8")
        dropped += drop
        kept_total += len(keep)
        print(f"{path.name}: {len(keep)} kept, {len(drop)} moved to {DROPPED.name}")
    DROPPED.write_text("".join(x + "\n" for x in dropped), encoding="utf-8")
    print(f"hard tier: {kept_total} cases; {len(dropped)} in {DROPPED.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
