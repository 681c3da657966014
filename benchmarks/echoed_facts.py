"""The echoed facts of a run, per language (docs/metrics.md, "Facts echoed from the
prompt's examples"): the rate as summary.json has it, the cases with at least one echoed
fact, the people the echoed facts name and how many are an example answer's sentence
word for word.

    python benchmarks/echoed_facts.py RUN_DIR

Reads RUN_DIR/cases.jsonl (each fact's ``echoed`` in ``score.facts``) and the run's
variant from its manifest; the example answers are that variant's extraction prompt's.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from hy_eval.memory import PromptLibrary

LANGS = ("en", "zh")


def example_sentences(variant: str, lang: str) -> set[str]:
    """The facts of the example answers (the one-line JSON objects of the examples block)."""
    text = PromptLibrary(variant).block_text("extract", lang, "examples") or ""
    out: set[str] = set()
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out |= {f["text"] for f in json.loads(line).get("facts", [])}
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
    return out


def main(run: Path) -> int:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    variant = (manifest.get("params") or {}).get("variant", "default")
    examples = {lang: example_sentences(variant, lang) for lang in LANGS}
    num: Counter[str] = Counter()
    den: Counter[str] = Counter()
    cases: Counter[str] = Counter()
    with_facts: Counter[str] = Counter()
    with_echo: Counter[str] = Counter()
    verbatim: Counter[str] = Counter()
    people: dict[str, Counter[str]] = defaultdict(Counter)
    with (run / "cases.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            rec = json.loads(line)
            lang = rec["lang"]
            n, d = (rec.get("score") or {}).get("counts", {}).get("echoed_subject_rate", (0, 0))
            cases[lang] += 1
            num[lang] += n
            den[lang] += d
            with_facts[lang] += d > 0
            with_echo[lang] += n > 0
            for fact in rec["score"].get("facts") or []:
                if fact.get("echoed"):
                    people[lang][fact["echoed"]] += 1
                    verbatim[lang] += fact["text"] in examples.get(lang, set())
    print(f"variant {variant}")
    print("lang  cases  with facts  echoed/facts  rate   cases with an echo  word for word")
    for lang in [*LANGS, "all"]:
        keys = LANGS if lang == "all" else (lang,)
        n, d = sum(num[k] for k in keys), sum(den[k] for k in keys)
        rate = f"{n / d:.3f}" if d else "n/a"
        print(
            f"{lang:<5} {sum(cases[k] for k in keys):>5}  {sum(with_facts[k] for k in keys):>10}"
            f"  {n:>5}/{d:<6}  {rate:<6} {sum(with_echo[k] for k in keys):>18}"
            f"  {sum(verbatim[k] for k in keys):>13}"
        )
    for lang in LANGS:
        named = ", ".join(f"{p} {c}" for p, c in people[lang].most_common())
        print(f"{lang} echoed people: {named or 'none'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python benchmarks/echoed_facts.py RUN_DIR", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(Path(sys.argv[1])))
