"""Build bench.jsonl, the matcher benchmark, from three sources, each read from its own
file and marked with its ``source``:

- ``embedded_run``: the 400 judged pairs of the embedded model's run (pairs.jsonl);
- ``written``: the written pairs (written.jsonl, judged blind as README.md says);
- ``capable_run``: pairs drawn from capable models' runs and judged the same way
  (capable_pairs.jsonl: ``matchers agree --out``'s file; absent or empty while there are
  none).

Each pair keeps its gold fact's keywords as the suite has them now and gets a split. The
split is by gold fact, fixed by a hash of (case, gold text): every pair of one gold fact
falls in the same part, whatever its source, so a rule tuned on dev has never seen a test
pair's gold. A pair id found twice, or a pair whose own ``source`` is not its file's, is
refused. Run from the repository's root:

    python datasets/matcher_pairs/build_bench.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent
SUITE = HERE.parent / "multi_speaker"
FIELDS = ("pair", "case", "lang", "gold", "predicted", "names", "same", "kind", "keywords")
#: Input file -> the source its pairs carry in the bench; in the bench's order.
SOURCES = {
    "pairs.jsonl": "embedded_run",
    "written.jsonl": "written",
    "capable_pairs.jsonl": "capable_run",
}


class BenchError(ValueError):
    """An input the bench cannot be built from (a repeated id, a mismatched source)."""


def split_of(case: str, gold: str) -> str:
    digest = hashlib.sha256(f"{case}\n{gold}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


def suite_facts() -> dict[str, list[dict]]:
    facts: dict[str, list[dict]] = {}
    for path in sorted(SUITE.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            facts[case["id"]] = case["expect"].get("facts", [])
    return facts


def keywords_now(facts: dict[str, list[dict]], row: dict) -> list:
    """The keywords of the pair's gold fact in today's suite (found by its text, or by
    its index for a written pair); the pair's own when the fact is gone."""
    case_facts = facts.get(row["case"], [])
    for fact in case_facts:
        if fact.get("text") == row["gold"]:
            return fact["keywords"]
    index = row.get("fact")
    if isinstance(index, int) and index < len(case_facts):
        return case_facts[index]["keywords"]
    return row["keywords"]


def source_rows(folder: Path) -> list[tuple[str, dict]]:
    """(source, row) of every input file in ``folder`` that exists, in ``SOURCES``'
    order; a missing or empty file gives none."""
    out = []
    for name, source in SOURCES.items():
        path = folder / name
        if not path.exists():
            continue
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                out.append((source, json.loads(line)))
    return out


def bench_rows(rows: list[tuple[str, dict]], facts: dict[str, list[dict]]) -> list[dict]:
    """The bench's rows: each input row's fields, today's keywords, its split and source
    (and ``model``, for a pair drawn with one recorded)."""
    ids = Counter(row["pair"] for _, row in rows)
    repeated = sorted(pid for pid, n in ids.items() if n > 1)
    if repeated:
        raise BenchError(f"pair ids found more than once: {', '.join(repeated[:5])}")
    out = []
    for source, row in rows:
        if row.get("source", source) != source:
            raise BenchError(
                f"pair {row['pair']}: its source {row['source']!r} is not its file's ({source})"
            )
        entry = {k: row[k] for k in FIELDS if k in row}
        entry["keywords"] = keywords_now(facts, row)
        entry["split"] = split_of(row["case"], row["gold"])
        entry["source"] = source
        if row.get("model"):
            entry["model"] = row["model"]
        out.append(entry)
    return out


def main(folder: Path = HERE) -> int:
    try:
        out = bench_rows(source_rows(folder), suite_facts())
    except BenchError as exc:
        print(f"build_bench: {exc}", file=sys.stderr)
        return 2
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out)
    (folder / "bench.jsonl").write_text(text, encoding="utf-8")
    dev = sum(r["split"] == "dev" for r in out)
    counts = Counter(r["source"] for r in out)
    by_source = ", ".join(f"{counts[s]} {s}" for s in SOURCES.values())
    print(f"bench.jsonl: {len(out)} pairs ({by_source}), {dev} dev, {len(out) - dev} test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
