"""Build bench.jsonl, the matcher benchmark: the 400 judged pairs of a real run
(pairs.jsonl) and the written pairs (written.jsonl, judged blind as README.md says), each
with its gold fact's keywords as the suite has them now, and a split.

The split is by gold fact, fixed by a hash of (case, gold text): every pair of one gold
fact falls in the same part, so a rule tuned on dev has never seen a test pair's gold.
Run from the repository's root:

    python datasets/matcher_pairs/build_bench.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).parent
SUITE = HERE.parent / "multi_speaker"
FIELDS = ("pair", "case", "lang", "gold", "predicted", "names", "same", "kind", "keywords")


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


def main() -> None:
    facts = suite_facts()
    rows = [json.loads(x) for x in (HERE / "pairs.jsonl").read_text("utf-8").splitlines()]
    written = HERE / "written.jsonl"
    if written.exists():
        rows += [json.loads(x) for x in written.read_text("utf-8").splitlines()]
    out = []
    for row in rows:
        entry = {k: row[k] for k in FIELDS if k in row}
        entry["keywords"] = keywords_now(facts, row)
        entry["split"] = split_of(row["case"], row["gold"])
        entry["source"] = "written" if row["pair"].startswith("w") else "run"
        out.append(entry)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out)
    (HERE / "bench.jsonl").write_text(text, encoding="utf-8")
    dev = sum(r["split"] == "dev" for r in out)
    print(f"bench.jsonl: {len(out)} pairs, {dev} dev, {len(out) - dev} test")


if __name__ == "__main__":
    main()
