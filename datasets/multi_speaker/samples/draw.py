"""Draw a committed, seeded sample of a memory suite and write its case ids.

    python datasets/multi_speaker/samples/draw.py capable96 --n 96 --seed 2026
    python datasets/multi_speaker/samples/draw.py hard96 --suite multi_speaker_hard \
        --n 96 --ops 16 --merges 16 --by-family --seed 2026

The sample is stratified as the capable-model study needs it (docs/capable.md):
- half English, half Chinese;
- at least ``--ops`` cases that check reconcile operations (expect.operations) and at
  least ``--merges`` cases that measure a cross-subject merge (expect.untouched with
  measures_merge), drawn first, each half per language;
- every rule of the suite cited by at least one case (a missing rule swaps in a case
  that cites it for a filler case of the same language);
- the rest drawn at random from what is left, per language; with ``--by-family`` in turn
  over the case families (a case's first tag after ``hard``), so each family of the hard
  tier is drawn about equally.
The ids file, ``datasets/<suite>/samples/<name>.txt``, is read by
``--filter id=@datasets/<suite>/samples/<name>.txt``.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

DATASETS = Path(__file__).resolve().parents[2]


def load(suite: str) -> list[dict]:
    cases = []
    for path in sorted((DATASETS / suite).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cases.append(json.loads(line))
    return cases


def has_ops(case: dict) -> bool:
    return bool(case["expect"].get("operations"))


def has_merge(case: dict) -> bool:
    e = case["expect"]
    return bool(e.get("untouched")) and e.get("measures_merge", True)


def family(case: dict) -> str:
    return next((t for t in case["tags"] if t != "hard"), "")


def in_turn(pool: list[dict]) -> list[dict]:
    """The pool reordered to take one case of each family in turn (families in order of
    first appearance in the shuffled pool, so the seed decides)."""
    groups: dict[str, list[dict]] = {}
    for c in pool:
        groups.setdefault(family(c), []).append(c)
    out: list[dict] = []
    while any(groups.values()):
        for g in groups.values():
            if g:
                out.append(g.pop(0))
    return out


def draw(
    cases: list[dict], n: int, ops: int, merges: int, seed: int, by_family: bool = False
) -> list[str]:
    rng = random.Random(seed)
    chosen: dict[str, list[dict]] = {"en": [], "zh": []}
    fillers: dict[str, list[dict]] = {"en": [], "zh": []}
    per_lang = n // 2
    for lang in ("en", "zh"):
        pool = [c for c in cases if c["lang"] == lang]
        rng.shuffle(pool)
        if by_family:
            pool = in_turn(pool)
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
    ap.add_argument("--suite", default="multi_speaker")
    ap.add_argument("--by-family", action="store_true")
    ap.add_argument(
        "--eligible", metavar="FILE", help="draw only among these ids (one per line, # comments)"
    )
    ap.add_argument("--n", type=int, default=96)
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--merges", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    cases = load(args.suite)
    eligible_flag = ""
    if args.eligible:
        text = Path(args.eligible).read_text(encoding="utf-8")
        keep = {x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#")}
        cases = [c for c in cases if c["id"] in keep]
        eligible_flag = f" --eligible {args.eligible}"
    ids = draw(cases, args.n, args.ops, args.merges, args.seed, args.by_family)
    by_id = {c["id"]: c for c in cases}
    picked = [by_id[i] for i in ids]
    suite_flag = "" if args.suite == "multi_speaker" else f" --suite {args.suite}"
    family_flag = " --by-family" if args.by_family else ""
    head = (
        f"# {args.name}: {len(ids)} {args.suite} cases drawn by "
        f"datasets/multi_speaker/samples/draw.py {args.name}{suite_flag} --n {args.n} "
        f"--ops {args.ops} --merges {args.merges}{family_flag}{eligible_flag} --seed {args.seed}\n"
        f"# en {sum(c['lang'] == 'en' for c in picked)}, zh "
        f"{sum(c['lang'] == 'zh' for c in picked)}; operations {sum(map(has_ops, picked))}, "
        f"merge-measurable {sum(map(has_merge, picked))}; rules "
        f"{len({r for c in picked for r in c['rules']})} of "
        f"{len({r for c in cases for r in c['rules']})}\n"
    )
    if args.by_family:
        head += f"# families: {dict(sorted(Counter(map(family, picked)).items()))}\n"
    out = DATASETS / args.suite / "samples"
    out.mkdir(exist_ok=True)
    (out / f"{args.name}.txt").write_text(head + "\n".join(ids) + "\n", encoding="utf-8")
    print(head, end="")


if __name__ == "__main__":
    main()
