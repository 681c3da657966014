"""The comparison page of two runs (E4, E7): ``hy-eval compare RUN_A RUN_B --html OUT``
and one page per comparison of a matrix run.

The numbers are those of :func:`hy_eval.harness.analysis._compare.compare` (paired differences with
their bootstrap CIs and p-values, McNemar's test on the flipped cases), and the sentences
about them are the terminal's (``_compare_text.py``); this module only reads the flipped
cases' records from both run folders and renders ``templates/compare.html.j2`` (see
``_pages.py`` for escaping and the embedded data).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hy_eval.harness.report._compare_text import SHARED_NOTE, own_value_lines, verdict_lines
from hy_eval.harness.report._pages import case_entry, render_page
from hy_eval.harness.runlog import (
    RECORDS_NAME,
    CaseRecord,
    ComparedMetric,
    Comparison,
    read_records,
)

#: Flipped cases shown on the page; past this many the page says how many were left out.
FLIP_LIMIT = 1000


def _records(run_dir: Path, ids: set[str]) -> dict[str, CaseRecord]:
    """The first repeat's record of each case in ``ids``."""
    out: dict[str, CaseRecord] = {}
    for rec in read_records(run_dir / RECORDS_NAME):
        if rec.id in ids and rec.repeat == 0:
            out[rec.id] = rec
    return out


def fact_diff(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Facts (text and owner) only in A, only in B, and in both, each in its run's order."""
    keys_a = {(f.get("text"), f.get("owner")) for f in a}
    keys_b = {(f.get("text"), f.get("owner")) for f in b}
    return {
        "removed": [f for f in a if (f.get("text"), f.get("owner")) not in keys_b],
        "added": [f for f in b if (f.get("text"), f.get("owner")) not in keys_a],
        "kept": [f for f in b if (f.get("text"), f.get("owner")) in keys_a],
    }


def _metric_rows(metrics: Mapping[str, ComparedMetric]) -> list[dict[str, Any]]:
    """The paired differences as the template shows them (a metric no shared case has
    shows n/a)."""

    def num(value: float | None, form: str) -> str:
        return "n/a" if value is None else format(value, form)

    rows = []
    for name, e in metrics.items():
        better = e.diff is not None and (e.diff > 0) == e.higher_is_better
        lo, hi = e.ci
        rows.append(
            {
                "name": name,
                "a": num(e.a, ".3f"),
                "b": num(e.b, ".3f"),
                "diff": num(e.diff, "+.3f"),
                "diff_value": "" if e.diff is None else f"{e.diff:.6f}",
                "ci": "" if lo is None or hi is None else f"[{lo:+.3f}, {hi:+.3f}]",
                "p": num(e.p_value, ".4f"),
                "p_value": "" if e.p_value is None else f"{e.p_value:.6f}",
                # Holm-adjusted p and the minimum detectable effect, where compare gives them.
                "p_adjusted": num(e.p_adjusted, ".4f"),
                "mde": num(e.mde, ".3f"),
                "n": e.n,
                "significant": e.significant,
                # Green when B is significantly better, red when significantly worse.
                "tone": ("ok" if better else "bad") if e.significant else "",
                "better": "higher" if e.higher_is_better else "lower",
            }
        )
    return rows


def compare_page(result: Comparison, run_a: str | Path, run_b: str | Path) -> str:
    """The comparison page of ``result`` (from ``compare``) of the runs in ``run_a`` and
    ``run_b``: metrics, McNemar's test, and the flipped cases side by side."""
    flipped = result.flipped
    shown = flipped[:FLIP_LIMIT]
    ids = {f.id for f in shown}
    recs_a, recs_b = _records(Path(run_a), ids), _records(Path(run_b), ids)
    systems: dict[str, int] = {}
    flips = []
    for flip in shown:
        a = recs_a.get(flip.id)
        b = recs_b.get(flip.id)
        entry_a = case_entry(a, systems) if a else None
        entry_b = case_entry(b, systems) if b else None
        flips.append(
            {
                "id": flip.id,
                "change": flip.change,
                "a": entry_a,
                "b": entry_b,
                "facts": fact_diff(
                    (entry_a or {}).get("facts", []), (entry_b or {}).get("facts", [])
                ),
                "diff": flip.diff,
            }
        )
    data = {
        "kind": "compare",
        "a": result.a,
        "b": result.b,
        "flipped": flips,
        "systems": list(systems),
        "flips_total": len(flipped),
    }
    metrics = _metric_rows(result.metrics)
    alpha = result.alpha
    if result.adjustment == "holm":
        legend = (
            f"* = Holm-adjusted p < {alpha:g} across the {result.metrics_tested} metrics tested."
        )
    else:
        legend = "* = the CI of the difference excludes 0."
    return render_page(
        "compare.html.j2",
        data,
        result=result,
        metrics=metrics,
        ci_level=round(100 * result.ci_level),
        legend=legend,
        has_adjusted=any(row["p_adjusted"] != "n/a" for row in metrics),
        has_mde=any(row["mde"] != "n/a" for row in metrics),
        shared_note=SHARED_NOTE,
        own_lines=own_value_lines(result),
        verdicts=verdict_lines(result),
        mde=result.mde_case_pass,
        left_out=len(flipped) - len(shown),
        run_a=str(run_a),
        run_b=str(run_b),
    )


def write_compare_page(
    out: str | Path, result: Comparison, run_a: str | Path, run_b: str | Path
) -> Path:
    """Write the comparison page to ``out`` and return its path."""
    path = Path(out)
    path.write_text(compare_page(result, run_a, run_b), encoding="utf-8")
    return path
