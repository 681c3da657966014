"""The comparison page of two runs (E4, E7): ``hy-eval compare RUN_A RUN_B --html OUT``
and one page per comparison of a matrix run.

The numbers are those of :func:`hy_eval.harness.analysis._compare.compare` (paired differences with
their paired score CIs and p-values, McNemar's test on the flipped cases), and the sentences
about them are the terminal's (``_compare_text.py``); this module only reads the changed
cases' records from both run folders (``_compare_cases.py``), adds the differences by
language, rule and tag (``analysis.group_differences``) and renders
``templates/compare.html.j2`` with ``workbench.js`` and ``compare.js`` (see ``_pages.py``
for escaping and the embedded data).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hy_eval._files import replace_file
from hy_eval.harness.analysis import group_differences, run_outcomes
from hy_eval.harness.report._compare_cases import changed_cases
from hy_eval.harness.report._compare_text import (
    SHARED_NOTE,
    own_value_lines,
    p_text,
    verdict_lines,
)
from hy_eval.harness.report._pages import BREAKDOWN_METRICS, render_page
from hy_eval.harness.report._perturbed import consistency_text
from hy_eval.harness.report._verdict import prompts_line, verdict_line
from hy_eval.harness.runlog import ComparedMetric, Comparison
from hy_eval.harness.scoring import ACCURACY_METRICS


def run_labels(
    result: Comparison, run_a: Path, run_b: Path, labels: tuple[str, str] | None = None
) -> tuple[str, str]:
    """The names the page gives A and B: ``labels`` when given, else the runs' labels
    (provider:model/variant), each followed by its folder's name when the two labels are
    the same (two runs of one model and variant), by its path when the names are too."""
    if labels is not None:
        return labels
    if result.a != result.b:
        return result.a, result.b
    a, b = (run_a.name, run_b.name) if run_a.name != run_b.name else (str(run_a), str(run_b))
    return f"{result.a} ({a})", f"{result.b} ({b})"


def _href(target: Path, start: Path) -> str:
    """A relative link from a page in folder ``start`` to ``target``, URL-quoted."""
    rel = os.path.relpath(target.resolve(), start.resolve())
    return quote(Path(rel).as_posix())


def _group_rows(
    groups: Mapping[str, Mapping[str, Any]], changed: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """The "where B differs" tables: per language, rule and tag, the shared and changed
    cases and each metric's B - A with its CI."""
    counts: dict[tuple[str, str], int] = {}
    for case in changed:
        for key, values in (
            ("lang", [case["lang"]]),
            ("rule", case["rules"]),
            ("tag", case["tags"]),
        ):
            for v in values:
                counts[key, v] = counts.get((key, v), 0) + 1
    tables: dict[str, list[dict[str, Any]]] = {}
    for key, rows in groups.items():
        tables[key] = []
        for label, entry in rows.items():
            cells = []
            for m in BREAKDOWN_METRICS:
                e = entry["metrics"][m]
                lo, hi = e["ci"]
                excludes = lo is not None and hi is not None and (lo > 0 or hi < 0)
                better = e["diff"] is not None and (e["diff"] > 0) == (m in ACCURACY_METRICS)
                cells.append(
                    {
                        "diff": "n/a" if e["diff"] is None else f"{e['diff']:+.3f}",
                        "value": "" if e["diff"] is None else f"{e['diff']:.6f}",
                        "ci": "" if lo is None or hi is None else f"[{lo:+.3f}, {hi:+.3f}]",
                        "n": e["n"],
                        "tone": ("ok" if better else "bad") if excludes else "",
                    }
                )
            tables[key].append(
                {
                    "label": label,
                    "cases": entry["cases"],
                    "changed": counts.get((key, label), 0),
                    "cells": cells,
                }
            )
    return tables


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
                "p": p_text(e.p_value),
                "p_value": "" if e.p_value is None else f"{e.p_value:.6f}",
                # Holm-adjusted p and the minimum detectable effect, where compare gives them.
                "p_adjusted": p_text(e.p_adjusted),
                "mde": num(e.mde, ".3f"),
                "n": e.n,
                "significant": e.significant,
                # Green when B is significantly better, red when significantly worse.
                "tone": ("ok" if better else "bad") if e.significant else "",
                "better": "higher" if e.higher_is_better else "lower",
            }
        )
    return rows


def compare_page(
    result: Comparison,
    run_a: str | Path,
    run_b: str | Path,
    out: str | Path | None = None,
    labels: tuple[str, str] | None = None,
) -> str:
    """The comparison page of ``result`` (from ``compare``) of the runs in ``run_a`` and
    ``run_b``, to be written at ``out`` (its links to the runs' reports are relative to
    it): metrics, McNemar's test, consistency, the differences by language, rule and tag,
    and every changed case side by side."""
    run_a, run_b = Path(run_a), Path(run_b)
    here = Path(out).parent if out is not None else Path.cwd()
    systems: dict[str, int] = {}
    changed, total = changed_cases(result, run_a, run_b, systems)
    label_a, label_b = run_labels(result, run_a, run_b, labels)
    page = Path(out) if out is not None else here / "compare.html"
    data = {
        "kind": "compare",
        "a": label_a,
        "b": label_b,
        "changed": changed,
        "systems": list(systems),
        "changed_total": total,
        "flips_total": len(result.flipped),
        "links": {
            "a": _href(run_a / "report.html", here),
            "b": _href(run_b / "report.html", here),
            "back_a": _href(page, run_a),
            "back_b": _href(page, run_b),
        },
    }
    groups = group_differences(run_outcomes(run_a), run_outcomes(run_b), BREAKDOWN_METRICS)
    metrics = _metric_rows(result.metrics)
    alpha = result.alpha
    if result.adjustment == "holm":
        legend = (
            f"* = Holm-adjusted p < {alpha:g} across the {result.metrics_tested} metrics tested."
        )
    else:
        legend = "* = the CI of the difference excludes 0."
    consistency = (
        consistency_text(result.consistency, result.perturbation)[:2]
        if result.consistency is not None
        else []
    )
    return render_page(
        "compare.html.j2",
        data,
        scripts=("workbench.js", "compare.js"),
        result=result,
        label_a=label_a,
        label_b=label_b,
        links=data["links"],
        metrics=metrics,
        ci_level=round(100 * result.ci_level),
        legend=legend,
        has_adjusted=any(row["p_adjusted"] != "n/a" for row in metrics),
        has_mde=any(row["mde"] != "n/a" for row in metrics),
        shared_note=SHARED_NOTE,
        own_lines=own_value_lines(result),
        verdicts=verdict_lines(result),
        verdict=verdict_line(result),
        prompts=prompts_line(result),
        consistency=[line.strip() for line in consistency],
        mde=result.mde_case_pass,
        groups=_group_rows(groups, changed),
        breakdown_metrics=BREAKDOWN_METRICS,
        left_out=total - len(changed),
        run_a=str(run_a),
        run_b=str(run_b),
    )


def write_compare_page(
    out: str | Path,
    result: Comparison,
    run_a: str | Path,
    run_b: str | Path,
    labels: tuple[str, str] | None = None,
) -> Path:
    """Write the comparison page to ``out`` and return its path. ``labels``: the names of
    A and B on the page (default: see ``run_labels``)."""
    path = Path(out)
    replace_file(path, compare_page(result, run_a, run_b, path, labels))
    return path
