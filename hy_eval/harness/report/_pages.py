"""The HTML pages (E7): ``report.html`` of a run and the comparison page of two.

Each page is rendered from a Jinja template in ``templates/`` with autoescaping on, so a
value from a dataset, a model or the command line is text wherever the template puts it.
The cases are embedded once, as JSON in a ``<script type="application/json">`` block, and
shown by the page's own script (``templates/workbench.js`` with the page's own part,
``report.js`` or ``compare.js``), which builds every element
with ``textContent``: no dataset or model text is ever parsed as HTML. The page needs no
server and no network.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from hy_eval.harness.report._notes import MEANINGS, reading_notes
from hy_eval.harness.runlog import CaseRecord, MetricEntry, RunManifest, RunSummary, ScoreCheck
from hy_eval.harness.scoring import ACCURACY_METRICS, METRICS, corrected_text, quality_text

#: Distinct system prompts kept once per page and referenced by index from each stage;
#: past this many, a stage carries its own system prompt.
MAX_SYSTEM_PROMPTS = 50

#: Columns of the breakdown tables, after the label and the number of cases.
BREAKDOWN_METRICS = (
    "case_pass",
    "fact_recall",
    "attribution_accuracy",
    "owner_accuracy",
    "misattribution_rate",
)


@cache
def _environment() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("hy_eval.harness.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def _static(name: str) -> str:
    """A file of ``templates/`` as text (the page's script and style sheet)."""
    return (resources.files("hy_eval.harness.report") / "templates" / name).read_text("utf-8")


def script_json(value: Any) -> Any:
    """``value`` as JSON that is safe inside a ``<script>`` element: ``<``, ``>`` and ``&``
    written as ``\\u003c`` and so on (so ``</script>`` or ``<!--`` in a value cannot end or
    change the element), U+2028 and U+2029 as escapes too. JSON outside strings holds none
    of these characters, so the text parses to the same value."""
    from markupsafe import Markup

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        if char in text:
            text = text.replace(char, escape)
    return Markup(text)


@cache
def _script(names: tuple[str, ...]) -> tuple[str, str]:
    """The page's script (the files ``names`` of ``templates/`` one after the other) and
    its CSP source: only that script may run, so markup that slipped into a page could
    still not run any (defence in depth)."""
    text = "\n".join(_static(name) for name in names)
    digest = hashlib.sha256(text.encode()).digest()
    return text, f"'sha256-{base64.b64encode(digest).decode()}'"


def render_page(
    template: str, data: Any, scripts: tuple[str, ...] = ("workbench.js",), **context: Any
) -> str:
    """Render ``template`` with ``context``, the shared style, the script made of
    ``scripts`` and ``data`` embedded as JSON for it. The page's Content-Security-Policy
    allows no request (images are data: URLs) and no script but its own."""
    from markupsafe import Markup

    script, script_hash = _script(scripts)
    return str(
        _environment()
        .get_template(template)
        .render(
            style=Markup(_static("workbench.css")),
            script=Markup(script),
            script_hash=script_hash,
            data=script_json(data),
            **context,
        )
    )


#: A failing check's problem, as the pages' "problem" filter names it; a failing fact
#: check is named by what went wrong (``problems``).
PROBLEMS = {"profile_name": "profile", "profile_absent": "profile"}


def problems(checks: list[ScoreCheck]) -> list[str]:
    """What the failing ``checks`` say went wrong, sorted, each once: for a gold fact
    ``recall`` (no prediction matched it), ``attribution`` (matched, wrong subject) or
    ``owner`` (matched, wrong owner); else the check's kind (``profile`` for both profile
    checks). Attribution errors can so be told from missing facts."""
    out = set()
    for check in checks:
        if check.ok:
            continue
        match = check.fact_match()
        if match is None:
            out.add(PROBLEMS.get(check.check, check.check))
            continue
        if match.matched is None:
            out.add("recall")
        if match.subject_ok is False:
            out.add("attribution")
        if match.owner_ok is False:
            out.add("owner")
    return sorted(out)


def metric_row(name: str, entry: MetricEntry | None, missing: str = "n/a") -> dict[str, Any]:
    """One metric as the templates show it (a metric without a value shows ``missing``:
    n/a, or n/m when the system under test cannot expose it)."""
    value = entry.value if entry else None
    lo, hi = entry.ci if entry else (None, None)
    bar = None
    if value is not None and lo is not None and hi is not None:
        bar = {
            "lo": round(100 * max(0.0, min(1.0, lo)), 2),
            "width": round(100 * max(0.0, min(1.0, hi) - max(0.0, lo)), 2),
            "value": round(100 * max(0.0, min(1.0, value)), 2),
        }
    # ``small_n`` marks an interval on a handful of cases; the page says so as report.md does.
    few = f"n={entry.n}, few cases" if entry and entry.small_n and value is not None else ""
    return {
        "name": name,
        "value": "" if value is None else f"{value:.6f}",
        "text": missing if value is None else f"{value:.3f}",
        "ci": "" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]",
        "few": few,
        "n": entry.n if entry else "",
        "better": "higher" if name in ACCURACY_METRICS else "lower",
        "bar": bar,
    }


def case_entry(rec: CaseRecord, systems: dict[str, int]) -> dict[str, Any]:
    """What the page shows of one case record: labels for the table and filters, and
    conversation, prompts, raw answers, facts and verdicts for its view. A system prompt is
    shared by every case of a stage and language: it is kept once in ``systems`` (text ->
    index, up to ``MAX_SYSTEM_PROMPTS``) and named by index."""
    stages = {}
    for name, data in rec.stages.items():
        stage = {k: data.get(k) for k in ("template", "user", "raw", "parse_error", "cached")}
        system = data.get("system", "")
        index = systems.get(system)
        if index is None and len(systems) < MAX_SYSTEM_PROMPTS:
            index = systems[system] = len(systems)
        stage["system"] = index if index is not None else system
        stages[name] = stage
    return {
        "id": rec.id,
        "repeat": rec.repeat,
        "lang": rec.lang,
        "rules": rec.rules,
        "tags": rec.tags,
        "passed": rec.passed,
        "status": rec.status,
        "error": rec.error,
        "failing": rec.score.failing(),
        "problems": problems(rec.score.checks),
        "expect": rec.expect or None,
        "input": rec.input,
        "rendered": rec.rendered or "",
        "stages": stages,
        "facts": [f.to_data() for f in rec.score.facts],
        "checks": [c.to_data() for c in rec.score.checks],
        "basic_info": rec.basic_info,
        "operations": rec.operations or None,
        "guard_events": rec.guard_events,
        "fallback": rec.fallback,
        "store_after": rec.store_after,
    }


def report_page(
    summary: RunSummary,
    manifest: RunManifest,
    plots: dict[str, bytes],
    cases: dict[str, Any],
    truncation: str = "",
    partial: str | None = None,
    run_name: str = "",
) -> str:
    """``report.html``: headline metrics with CIs, sortable breakdowns, plots, and the case
        table and case view drawn by the script from ``cases`` (``{"cases": [...], "systems":
        [...], "shown": n}``). ``run_name`` (the run folder's name) tells two runs of one model
    and variant apart in the title."""
    metrics = summary.metrics
    breakdowns = {}
    for key in ("lang", "rule", "tag"):
        rows = []
        for value, group in sorted(summary.breakdown.get(key, {}).items()):
            cells = [metric_row(m, group.metric(m), summary.missing(m)) for m in BREAKDOWN_METRICS]
            rows.append({"label": value, "cases": group.cases, "cells": cells})
        breakdowns[key] = rows
    git = manifest.git
    return render_page(
        "report.html.j2",
        {"kind": "report", **cases},
        scripts=("workbench.js", "report.js"),
        summary=summary,
        commit=str(git.get("commit"))[:12],
        dirty=bool(git.get("dirty")),
        metrics=[
            metric_row(m, metrics.get(m), summary.missing(m)) for m in METRICS if m in metrics
        ],
        breakdowns=breakdowns,
        breakdown_metrics=BREAKDOWN_METRICS,
        confusion=summary.confusion,
        plots=[(name, base64.b64encode(data).decode()) for name, data in plots.items()],
        truncation=truncation,
        partial=partial,
        notes=reading_notes(summary),
        meanings=MEANINGS,
        run_name=run_name,
        matcher_quality=quality_text(summary.matcher, summary.matcher_quality)
        + corrected_text(summary),
    )
