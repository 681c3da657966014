"""Both models on both tiers, per language and per rule, from finished runs' summaries
(docs/datasets.md, "Both models on both tiers").

    python reports/capable/tiers.py "capable, existing=OUT/runs/default" \\
        "capable, hard=OUT/hard/runs/default" "embedded, hard=DIR" ... [--json FILE]

Each argument is ``LABEL=RUN_DIR`` (a run folder with ``summary.json``). Prints three
markdown tables: the headline metrics per run, then per language and per rule (cited by
the case's ``rules``) the case_pass, fact_recall and attribution_accuracy of each run with
their units (num/den). Figures are read, never recomputed: what the runs' reports say.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HEADLINE = (
    "case_pass",
    "fact_recall",
    "attribution_accuracy",
    "owner_accuracy",
    "misattribution_rate",
    "untouched_violation_rate",
    "operation_accuracy",
)
PER_GROUP = ("case_pass", "fact_recall", "attribution_accuracy")


def _cell(entry: dict | None) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    num, den = entry.get("num"), entry.get("den")
    units = f" ({num:.0f}/{den:.0f})" if num is not None and den else ""
    return f"{entry['value']:.3f}{units}"


def load(arg: str) -> tuple[str, dict]:
    label, sep, folder = arg.partition("=")
    if not sep:
        sys.exit(f"tiers: {arg!r} is not LABEL=RUN_DIR")
    path = Path(folder) / "summary.json"
    try:
        return label, json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        sys.exit(f"tiers: cannot read {path}: {exc}")


def tables(runs: list[tuple[str, dict]]) -> str:
    out = [
        "| run | model | cases | " + " | ".join(HEADLINE) + " |",
        "|---|---|---|" + "---|" * len(HEADLINE),
    ]
    for label, s in runs:
        cells = [_cell(s["metrics"].get(m)) for m in HEADLINE]
        out.append(f"| {label} | {s['model']} | {s['cases']} | " + " | ".join(cells) + " |")
    for dim in ("lang", "rule"):
        keys = sorted({k for _, s in runs for k in s["breakdown"].get(dim, {})})
        out += [
            "",
            f"| {dim} | metric | " + " | ".join(label for label, _ in runs) + " |",
            "|---|---|" + "---|" * len(runs),
        ]
        for key in keys:
            for metric in PER_GROUP:
                cells = [
                    _cell((s["breakdown"].get(dim, {}).get(key) or {}).get(metric)) for _, s in runs
                ]
                out.append(f"| {key} | {metric} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    runs = [load(a) for a in args.runs]
    sys.stdout.write(tables(runs))
    if args.json:
        slim = {
            label: {
                "model": s["model"],
                "suite": s["suite"],
                "cases": s["cases"],
                "metrics": {m: s["metrics"].get(m) for m in HEADLINE},
                "breakdown": {
                    d: {
                        k: {m: v.get(m) for m in PER_GROUP}
                        for k, v in s["breakdown"].get(d, {}).items()
                    }
                    for d in ("lang", "rule")
                },
            }
            for label, s in runs
        }
        Path(args.json).write_text(
            json.dumps(slim, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
