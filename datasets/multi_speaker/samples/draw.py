"""Draw a committed, seeded sample of the multi_speaker suite and write its case ids.

    python datasets/multi_speaker/samples/draw.py capable96 --n 96 --seed 2026

The sample is stratified as the capable-model study needs it (docs/capable.md):
- half English, half Chinese;
- at least ``--ops`` cases that check reconcile operations (expect.operations) and at
  least ``--merges`` cases that measure a cross-subject merge (expect.untouched with
  measures_merge), drawn first, each half per language;
- every rule of the suite cited by at least one case (a missing rule swaps in a case
  that cites it for a filler case of the same language);
- the rest drawn at random from what is left, per language.
The ids file is read by ``--filter id=@datasets/multi_speaker/samples/<name>.txt``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE.parent


def load() -> list[dict]:
    cases = []
    for path in sorted(SUITE.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cases.append(json.loads(line))
    return cases


def has_ops(case: dict) -> bool:
    return bool(case["expect"].get("operations"))


def has_merge(case: dict) -> bool:
    e = case["expect"]
    return bool(e.get("untouched")) and e.get("measures_merge", True)


def draw(cases: list[dict], n: int, ops: int, merges: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    chosen: dict[str, list[dict]] = {"en": [], "zh": []}
    fillers: dict[str, list[dict]] = {"en": [], "zh": []}
    per_lang = n // 2
    for lang in ("en", "zh"):
        pool = [c for c in cases if c["lang"] == lang]
        rng.shuffle(pool)
        for want, test in ((ops // 2, has_ops), (merges // 2, has_merge)):
            have = sum(1 for c in chosen[lang] if test(c))
            for c in pool:
                if have >= want:
                    break
                if test(c) and c not in chosen[lang]:
                    chosen[lang].append(c)
                    have += 1
        for c in pool:
            if len(chosen[lang]) >= per_lang:
                break
            if c not in chosen[lang]:
                chosen[lang].append(c)
                fillers[lang].append(c)
    # Every rule cited: swap a filler for a case citing the missing rule.
    all_rules = sorted({r for c in cases for r in c["rules"]})
    for rule in all_rules:
        picked = chosen["en"] + chosen["zh"]
        if any(rule in c["rules"] for c in picked):
            continue
        options = [c for c in cases if rule in c["rules"] and c not in picked]
        rng.shuffle(options)
        for c in options:
            if fillers[c["lang"]]:
                out = fillers[c["lang"]].pop()
                chosen[c["lang"]].remove(out)
                chosen[c["lang"]].append(c)
                break
    return sorted(c["id"] for c in chosen["en"] + chosen["zh"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--n", type=int, default=96)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--merges", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    cases = load()
    ids = draw(cases, args.n, args.ops, args.merges, args.seed)
    by_id = {c["id"]: c for c in cases}
    picked = [by_id[i] for i in ids]
    head = (
        f"# {args.name}: {len(ids)} multi_speaker cases drawn by "
        f"datasets/multi_speaker/samples/draw.py {args.name} --n {args.n} --ops {args.ops} "
        f"--merges {args.merges} --seed {args.seed}\n"
        f"# en {sum(c['lang'] == 'en' for c in picked)}, zh "
        f"{sum(c['lang'] == 'zh' for c in picked)}; operations {sum(map(has_ops, picked))}, "
        f"merge-measurable {sum(map(has_merge, picked))}; rules "
        f"{len({r for c in picked for r in c['rules']})} of "
        f"{len({r for c in cases for r in c['rules']})}\n"
    )
    (HERE / f"{args.name}.txt").write_text(head + "\n".join(ids) + "\n", encoding="utf-8")
    print(head, end="")


if __name__ == "__main__":
    main()
