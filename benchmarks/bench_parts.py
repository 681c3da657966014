"""The small measurements behind benchmarks/README.md's "Second round" and the
threshold figures of datasets/matcher_pairs/README.md, one sub-command each:

    python benchmarks/bench_parts.py redact RUN_DIR        # redaction per record line
    python benchmarks/bench_parts.py case-validation       # Case validation, best of 15
    python benchmarks/bench_parts.py report-parts RUN_DIR  # the report's steps, best of 4
    python benchmarks/bench_parts.py thresholds            # fuzzy thresholds on the judged pairs
    python benchmarks/bench_parts.py strict-thresholds     # the strict matcher's on the dev part
    python benchmarks/bench_parts.py matcher-cost RUN_DIR  # each matcher's time per case

RUN_DIR is a run folder; ``report-parts`` wants a large one, e.g. the 1,000 generated
cases of ``bench_harness.py`` (its run folder is kept under a temporary directory; any run
of a few hundred cases shows the split).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def best_of(step: Callable[[], Any], rounds: int) -> float:
    """The shortest wall time of ``rounds`` calls of ``step`` after one warm-up call."""
    step()
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - started)
    return best


def redact_lines(run_dir: Path) -> None:
    from hy_eval._redact import redact

    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:300]
    size = sum(len(x) for x in lines) / len(lines)
    secs = best_of(lambda: [redact(x) for x in lines], 3)
    print(
        f"redact: {secs / len(lines) * 1000:.3f} ms per line ({len(lines)} lines, {size:.0f} chars)"
    )


def case_validation() -> None:
    from hy_eval.harness.datasets import Case

    path = ROOT / "datasets" / "multi_speaker" / "en_v2.jsonl"
    data = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    secs = best_of(lambda: [Case.model_validate(d) for d in data], 15)
    print(f"Case.model_validate: {secs / len(data) * 1000:.3f} ms per case ({path.name})")


def report_parts(run_dir: Path) -> None:
    from hy_eval.harness.analysis import breakdown_by, case_table, metrics_of
    from hy_eval.harness.report import draw
    from hy_eval.harness.report._write import _confusion, _Scan

    records = run_dir / "cases.jsonl"
    scan = _Scan(records, None)
    df = case_table(scan.rows, None)
    metrics = metrics_of(df)
    confusion = _confusion(scan.confusion)
    rules = {r: {"case_pass": e["case_pass"]} for r, e in breakdown_by(df, "rule").items()}
    steps: dict[str, Callable[[], Any]] = {
        "read the records": lambda: _Scan(records, None),
        "overall metrics": lambda: metrics_of(df),
        "breakdowns (lang, rule, tag)": lambda: [
            breakdown_by(df, k) for k in ("lang", "rule", "tag")
        ],
        "plots (3)": lambda: [
            draw("metrics.png", metrics),
            draw("confusion.png", confusion),
            draw("rules.png", rules),
        ],
    }
    print(f"report steps for {len(df)} cases, best of 4:")
    for name, step in steps.items():
        print(f"  {name:<30}{best_of(step, 4):7.3f} s")


def thresholds() -> None:
    from hy_eval.harness.analysis import keyword_decides, read_pairs, scores
    from hy_eval.harness.scoring import similarity

    pairs = read_pairs(ROOT / "datasets" / "matcher_pairs" / "pairs.jsonl")
    sims = [similarity(p.predicted, p.gold, p.names) for p in pairs]
    hits = [bool(keyword_decides(p)) for p in pairs]
    print("threshold  fuzzy (keyword hit or similarity)   similarity alone")
    for th in (0.4, 0.5, 0.6, 0.7, 0.8):
        with_kw = scores(pairs, [h or s >= th for h, s in zip(hits, sims, strict=True)])
        alone = scores(pairs, [s >= th for s in sims])
        cells = [
            f"P {r['precision']['value']:.3f} R {r['recall']['value']:.3f}"
            for r in (with_kw, alone)
        ]
        print(f"{th:9.1f}  {cells[0]:<35}{cells[1]}")


def strict_thresholds() -> None:
    """The strict matcher's precision and recall per language on the DEV part of the
    matcher benchmark at each content-agreement threshold (the test part is not read:
    the threshold is chosen here)."""
    from hy_eval.harness.analysis import read_pairs, scores
    from hy_eval.harness.scoring import decide
    from hy_eval.harness.scoring._strict import AGREEMENT_THRESHOLD, CROSS_THRESHOLD

    pairs = [
        p
        for p in read_pairs(ROOT / "datasets" / "matcher_pairs" / "bench.jsonl")
        if p.split == "dev"
    ]

    def row(th: float, cross: float) -> str:
        cells = []
        for lang in ("en", "zh"):
            part = [p for p in pairs if p.lang == lang]
            got = [
                decide(p.gold, p.keywords or [], p.predicted, p.names, th, cross).accepted
                for p in part
            ]
            r = scores(part, got)
            prec, rec = r["precision"]["value"], r["recall"]["value"]
            f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
            cells.append(f"{lang} P {prec:.3f} R {rec:.3f} F1 {f1:.3f}")
        return "   ".join(cells)

    grid = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.34, 0.4, 0.5, 0.6)
    print(f"{len(pairs)} dev pairs; content-agreement threshold, then P / R / F1 per language")
    for th in grid:
        print(f"{th:9.2f}  " + row(th, CROSS_THRESHOLD))
    print(f"other-language threshold (content agreement at {AGREEMENT_THRESHOLD})")
    for cross in grid:
        print(f"{cross:9.2f}  " + row(AGREEMENT_THRESHOLD, cross))


def matcher_cost(run_dir: Path) -> None:
    """Each static matcher's time to assign one case's facts, over a run's records, in
    one process (ratios, not seconds, compare between runs)."""
    from hy_eval.harness.datasets import load_suite
    from hy_eval.harness.runlog import read_run
    from hy_eval.harness.scoring import _strict, static_matcher

    records = [r for r in read_run(run_dir).records() if r.facts]
    cases = {c.id: c for c in load_suite("multi_speaker").cases}
    work = [(cases[r.id], [f["text"] for f in r.facts]) for r in records if r.id in cases]
    print(f"{len(work)} cases with predictions")
    from hy_eval.harness.scoring._bilingual import dictionary_forms
    from hy_eval.harness.scoring._values import _pos_tokenizer
    from hy_eval.harness.text import jieba_tokenizer

    t = time.perf_counter()
    jieba_tokenizer(), _pos_tokenizer()
    print(f"jieba's dictionary, once per process: {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    dictionary_forms("tea")
    print(
        f"CC-CEDICT, once per process (other-language pairs only): {time.perf_counter() - t:.2f} s"
    )
    from hy_eval.harness.scoring._bilingual import pinyin
    from hy_eval.harness.text import inflections

    t = time.perf_counter()
    inflections("sold"), pinyin("张江")
    print(f"lemminflect's and pypinyin's tables, once per process: {time.perf_counter() - t:.2f} s")
    for name in ("keyword", "strict"):

        def run_all(name: str = name) -> None:
            for case, texts in work:
                m = static_matcher(name, case.speakers)
                m.assign(case.expect.facts, texts, lambda g, p: 2)

        _strict.bounded.cache_clear()
        _strict.content.cache_clear()
        t = time.perf_counter()
        run_all()
        cold = time.perf_counter() - t
        print(f"{name:<8} {1000 * cold / len(work):.2f} ms a case (first pass, caches empty)")


def main() -> None:
    what = sys.argv[1:2]
    if what == ["redact"] and len(sys.argv) == 3:
        redact_lines(Path(sys.argv[2]))
    elif what == ["case-validation"]:
        case_validation()
    elif what == ["report-parts"] and len(sys.argv) == 3:
        report_parts(Path(sys.argv[2]))
    elif what == ["thresholds"]:
        thresholds()
    elif what == ["strict-thresholds"]:
        strict_thresholds()
    elif what == ["matcher-cost"] and len(sys.argv) == 3:
        matcher_cost(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
