"""The words of a metamorphic run: its report.md sections, its terminal lines and
compare's lines on consistency, and the step that adds the perturbations' sections to
the base run's summary.json and report.md."""

from __future__ import annotations

import json
from pathlib import Path

from hy_eval._files import replace_file
from hy_eval.harness.runlog import (
    ConsistencyResult,
    ConsistencyValue,
    FragilityEntry,
    PerturbationSection,
    RunSummary,
    write_summary,
)


def _pct(entry: ConsistencyValue) -> str:
    if entry.value is None:
        return "n/a"
    lo, hi = entry.ci
    return f"{entry.value:.3f} [{lo:.3f}, {hi:.3f}]"


def markdown_section(name: str, s: PerturbationSection) -> str:
    """The report.md section of one perturbation (also compare's text, in part)."""
    lines = [
        f"\n## Perturbation `{name}`\n",
        f"{s.cases} cases paired ({s.skipped} skipped as not perturbable soundly); "
        f"consistency {_pct(s.consistency)}: {s.checks - s.checks_changed} of "
        f"{s.checks} (case, check) verdicts unchanged. Run folder `{s.run_dir}`.\n",
        "| metric | base | perturbed |",
        "|---|---|---|",
    ]
    for m, e in s.metrics.items():
        if e.base is None and e.perturbed is None:
            continue
        cells = ["n/a" if v is None else f"{v:.3f}" for v in (e.base, e.perturbed)]
        lines.append(f"| {m} | {cells[0]} | {cells[1]} |")
    lines += fragility_lines(s)
    lines += ["", "| changed case | checks changed | facts diff |", "|---|---|---|"]
    for f in s.changed_cases:
        diff = json.dumps(f.facts_diff, ensure_ascii=False).replace("|", "\\|")
        lines.append(f"| {f.id} | {', '.join(f.changed)} | {diff[:300]} |")
    changed = s.changed_cases_count or 0
    if changed > len(s.changed_cases):
        lines.append(f"| ... and {changed - len(s.changed_cases)} more | | |")
    return "\n".join(lines) + "\n"


def _fragility(c: ConsistencyResult) -> list[tuple[str, FragilityEntry]]:
    """Each rule's and tag's entry, labelled ``rule A1``, ``tag toy``."""
    tables = (("rule", c.fragility.rule), ("tag", c.fragility.tag))
    return [(f"{kind} {label}", e) for kind, table in tables for label, e in table.items()]


def fragility_lines(s: ConsistencyResult) -> list[str]:
    """Rules and tags by consistency, least consistent first."""
    lines = ["", "| fragility | consistency (95% CI) | cases | changed |", "|---|---|---|---|"]
    rows = [(e.value if e.value is not None else 1.0, label, e) for label, e in _fragility(s)]
    for _, label, e in sorted(rows, key=lambda r: (r[0], r[1])):
        lines.append(f"| {label} | {_pct(e)} | {e.n} | {e.changed} |")
    return lines


def terminal_lines(summary: RunSummary) -> list[str]:
    """One line per perturbation for the terminal summary."""
    return [
        f"perturbation {name}: consistency {_pct(s.consistency)} over {s.cases} cases "
        f"({s.changed_cases_count} changed, {s.skipped} skipped)"
        for name, s in summary.perturbations.items()
    ]


def consistency_text(c: ConsistencyResult, perturbation: str | None = None) -> list[str]:
    """compare's lines on consistency: the value, the least consistent rules and tags,
    and the changed cases with the checks that changed."""
    what = f" under perturbation {perturbation}" if perturbation else ""
    lines = [
        f"consistency{what}: {_pct(c.consistency)}, {c.checks - c.checks_changed} of "
        f"{c.checks} (case, check) verdicts unchanged on {c.cases} cases"
    ]
    rows = sorted(
        ((e.value, label, e) for label, e in _fragility(c) if e.value is not None and e.changed),
        key=lambda r: (r[0], r[1]),
    )
    if rows:
        lines.append(
            "  most fragile: "
            + ", ".join(f"{label} {v:.3f} ({e.changed} changed)" for v, label, e in rows[:6])
        )
    for f in c.changed_cases[:20]:
        lines.append(f"  changed {f.id}: {', '.join(f.changed)}")
    changed = c.changed_cases_count or 0
    if changed > 20:
        lines.append(f"  ... and {changed - 20} more")
    return lines


def add_perturbations(
    run_dir: Path, summary: RunSummary, sections: dict[str, PerturbationSection]
) -> None:
    """Write the perturbations' sections into the base run's summary.json and append one
    section per perturbation to its report.md."""
    summary.perturbations = sections
    write_summary(run_dir, summary)
    report = run_dir / "report.md"
    if report.is_file():
        text = report.read_text(encoding="utf-8")
        text += "".join(markdown_section(n, s) for n, s in sections.items())
        replace_file(report, text)
