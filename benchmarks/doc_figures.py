"""Figures the docs cite that committed files decide, computed from those files, and a
check that the docs still cite them (tests/test_doc_figures.py runs the check, so a doc
that keeps a stale figure fails the tests).

    python benchmarks/doc_figures.py   # print the figures, then any stale citation (exit 1)

Sources: the shipped suite (datasets/multi_speaker/), the committed baseline
(reports/baselines/multi_speaker.json: the embedded model's scores per case) and the
committed cassette (tests/cassettes/multi_speaker.default.local.jsonl: every model answer
of that run with its recorded latency). Figures measured by running something (test
times, benchmark rates) are not here: no committed file decides them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hy_eval.harness import load_suite  # noqa: E402
from hy_eval.harness.runlog import read_baseline  # noqa: E402

SUITE = "multi_speaker"
BASELINE = ROOT / "reports" / "baselines" / f"{SUITE}.json"
CASSETTE = ROOT / "tests" / "cassettes" / f"{SUITE}.default.local.jsonl"


def _pct(part: int, whole: int) -> int:
    return round(100 * part / whole)


def figures() -> dict[str, Any]:
    """Every figure by name: case counts (per file and language), gold facts, the
    baseline's passed cases and each metric's value and n (the cases it counts over),
    and the cassette's mean recorded model seconds per case."""
    suite = load_suite(SUITE)
    cases = len(suite.cases)
    zh = sum(c.lang == "zh" for c in suite.cases)
    files = {
        p.name: sum(1 for line in p.read_text("utf-8").splitlines() if line.strip())
        for p in sorted((ROOT / "datasets" / SUITE).glob("*.jsonl"))
    }
    zh_native = sum(n for name, n in files.items() if name.startswith("zh_native"))
    baseline = read_baseline(BASELINE)
    per_case = baseline.cases.values()
    metrics = {
        m: {"value": value, "n": sum(1 for c in per_case if c.counts[m][1] > 0)}
        for m, value in baseline.metrics.items()
    }
    calls = [json.loads(line) for line in CASSETTE.read_text("utf-8").splitlines() if line]
    sees = _gate_sees()
    seconds = sum(c["completion"]["latency_s"] for c in calls)
    return {
        "cases": cases,
        "files": files,
        "file_count": len(files),
        "zh": zh,
        "zh_pct": _pct(zh, cases),
        "zh_native": zh_native,
        "zh_native_pct": _pct(zh_native, cases),
        "facts": f"{sum(len(c.expect.facts) for c in suite.cases):,}",
        "baseline_cases": len(baseline.cases),
        "passed": sum(1 for c in per_case if c.passed),
        "metrics": metrics,
        "attribution_n": metrics["attribution_accuracy"]["n"],
        "cassette_calls": len(calls),
        "seconds_per_case": f"{seconds / cases:.1f}",
        "attribution_sees": sees["attribution_accuracy"],
    }


def _gate_sees() -> dict[str, str]:
    """What each CI gate can see (80% power), as the replay gate prints it: the committed
    gates on the baseline against itself, which is what the replay of its cassette is."""
    from hy_eval.harness.gate import load_gates
    from hy_eval.harness.gate._gate import evaluate_outcomes, load_baseline

    base = load_baseline(BASELINE)
    result = evaluate_outcomes(load_gates(ROOT / ".ci" / "gates.toml"), {}, base, base)
    out = {}
    for note in result.notes:
        found = re.match(r"(\w+): .* sees a (?:drop|rise) of ([0-9.]+) or more", note)
        if found:
            out[found.group(1)] = found.group(2)
    return out


#: Doc -> the phrases it must hold, with ``{name}`` for a figure (whitespace between
#: words may be a line break in the doc).
CITATIONS: dict[str, list[str]] = {
    "README.md": [
        "The full `multi_speaker` suite ({cases} cases",
        "{baseline_cases} cases, {passed} passed; report:",
        "`multi_speaker` ({cases} cases, {facts} gold facts, {zh_pct}% Chinese",
    ],
    "docs/prompts.md": [
        "averages {seconds_per_case} s of recorded latency per case",
    ],
    "docs/ci.md": [
        "whole v2 suite ({cases} cases)",
        "`floor(i * {cases} / 60)`",
        "the baseline now holds {baseline_cases} and the rates",
        "({attribution_n} now: the n of `attribution_accuracy`",
        "each holding gate prints the drop it can see ({attribution_sees} for attribution",
    ],
    "docs/metrics.md": [
        "The committed cassette (embedded model, {cases} cases)",
        "the baseline's 157 cases of that time ({baseline_cases} now)",
    ],
    "docs/datasets.md": [
        "`multi_speaker` (v2): {cases} cases in eight files",
        "{zh_native} of the {cases} cases ({zh_native_pct}%) are natively Chinese, {zh}"
        " ({zh_pct}%) Chinese in all",
        "The suite holds {facts} gold facts.",
    ]
    + [f"`{name}` ({{files[{name}]}}" for name in ("en.jsonl", "zh.jsonl")],
}


def _output_block_lines(figs: dict[str, Any]) -> list[str]:
    """The README's output block: each metric's line starts with its value and ends with
    its n (the CI, a bootstrap, is left to the run that printed it)."""
    return [
        rf"^{m}\s+{e['value']:.3f}\s+\[[0-9., ]+\]\s+{e['n']}$" for m, e in figs["metrics"].items()
    ]


def _table_rows(text: str, first: str) -> dict[str, list[str]]:
    """The rows of the markdown table whose header starts with ``first``: metric -> the
    leading number (or ``n/m``) of each cell, thousands separators dropped."""
    rows: dict[str, list[str]] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith(first):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if inside and cells and not cells[0].startswith("---"):
            rows[cells[0]] = [c.split(" ")[0].replace(",", "") for c in cells[1:]]
    return rows


def systems_stale(docs_text: str, matrix_text: str) -> list[str]:
    """docs/systems.md's side-by-side table against reports/systems/matrix.md (which the
    replay makes): each metric's value per system, and the tokens per case."""
    doc = _table_rows(docs_text, "| metric (95% CI, n) |")
    made = _table_rows(matrix_text, "| metric | hy_eval |")
    out = []
    for metric, values in doc.items():
        if made.get(metric) != values:
            out.append(f"docs/systems.md: {metric} {values} where matrix.md has {made.get(metric)}")
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def stale(figs: dict[str, Any], docs: dict[str, str] | None = None) -> list[str]:
    """What the docs cite that ``figs`` no longer say, one line each ("README.md: ...").
    ``docs`` (path -> text) stands in for the files, for tests."""
    docs = docs or {p: (ROOT / p).read_text("utf-8") for p in CITATIONS}
    out = []
    for path, phrases in CITATIONS.items():
        text = _squash(docs[path])
        for phrase in phrases:
            wanted = _squash(phrase.format(**figs))
            if wanted not in text:
                out.append(f"{path}: no {wanted!r}")
    for pattern in _output_block_lines(figs):
        if not re.search(pattern, docs["README.md"], flags=re.M):
            out.append(f"README.md: no output line matching {pattern!r}")
    systems = docs.get("docs/systems.md") or (ROOT / "docs" / "systems.md").read_text("utf-8")
    matrix = (ROOT / "reports" / "systems" / "matrix.md").read_text("utf-8")
    out += systems_stale(systems, matrix)
    return out


def main() -> int:
    figs = figures()
    print(json.dumps(figs, indent=1))
    problems = stale(figs)
    for line in problems:
        print("stale:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
