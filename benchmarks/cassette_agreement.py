"""How many answers of a live run's cache equal the committed cassette's, key for key:
a changed decoder (processes, threads, batching) must leave the embedded model's answers
as recorded, or the cassette needs recording again.

    python run_eval.py --suite multi_speaker --sample 60 --cache /tmp/live.sqlite --out /tmp/live
    python benchmarks/cassette_agreement.py /tmp/live.sqlite [CASSETTE.jsonl]
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = ROOT / "tests" / "cassettes" / "multi_speaker.default.local.jsonl"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    cassette = Path(argv[1]) if len(argv) > 1 else CASSETTE
    recorded = {}
    with cassette.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            recorded[row["key"]] = row["completion"]["text"]
    with sqlite3.connect(argv[0]) as db:
        rows = db.execute("SELECT key, completion FROM answers").fetchall()
    known = [(key, json.loads(text)["text"]) for key, text in rows if key in recorded]
    equal = sum(text == recorded[key] for key, text in known)
    print(
        f"{len(rows)} answers in the cache, {len(known)} of them asked in the cassette, "
        f"{equal} equal to the cassette's text"
    )
    return 0 if equal == len(known) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
