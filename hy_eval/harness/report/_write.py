"""Reports of a run folder (rule E7): ``summary.json``, ``report.md``, ``report.html`` (self-
contained, plots embedded, the cases as data for the page's case table and case view: see
``_pages.py``) and PNG plots.

Records are read from ``cases.jsonl`` once, streaming, into a small table of metric counts
(pandas), the token and cost totals, the confusion counts and what the page shows of at
most ``DRILLDOWN_LIMIT`` cases, failed ones first. Nothing holds every record in memory. The counts,
breakdowns and k-of-n repeat verdicts are ``_aggregate.py``'s, shared with the comparison
of two runs.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from hy_eval._files import replace_file
from hy_eval.harness.analysis import (
    RecordRows,
    breakdown_by,
    case_table,
    fmt_ratio,
    metrics_of,
    ratio_with_ci,
    repeat_summary,
)
from hy_eval.harness.report._notes import MEANINGS, reading_notes
from hy_eval.harness.report._pages import case_entry, report_page
from hy_eval.harness.report._plots import draw
from hy_eval.harness.runlog import (
    RECORDS_NAME,
    CallCounts,
    CaseRecord,
    PartialRun,
    RunManifest,
    RunSummary,
    read_records,
    write_summary,
)
from hy_eval.harness.scoring import (
    METRICS,
    SUBJECT_KINDS,
    corrected_recall,
    corrected_text,
    matcher_info,
    quality_text,
)

#: The most cases report.html holds (failed ones first; every record is in cases.jsonl).
#: The case table draws 50 rows at a time, so the count costs only the page's size
#: (about 4 KB a case: some 21 MB at the limit, see benchmarks/README.md) and its
#: parsing. 5,000 holds every case of the suites shipped (457 in multi_speaker, the
#: largest) even at --repeats 10, and the 1,200-case runs of the browser tests whole, so
#: a link from a comparison page to a case of such runs opens that case.
DRILLDOWN_LIMIT = 5000


class _Scan:
    """Everything the reports need from ``cases.jsonl``, gathered in one streaming pass."""

    def __init__(self, records_path: Path, wanted: set[str] | None) -> None:
        #: One compact row per record (``_aggregate.RecordRows``), not the records.
        self.rows = RecordRows()
        self.tokens_in = self.tokens_out = 0
        self.costs: list[float | None] = []
        self.confusion: Counter[tuple[str, str]] = Counter()
        #: Guard events over the records: cross-subject, and undecided (R2).
        self.guard_counts = {"cross_subject": 0, "undecided": 0}
        #: What the page shows of each case (``_pages.case_entry``), by verdict, capped.
        self.entries: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
        self.shown = 0  # records that could be shown
        #: System prompts kept once for the page: text -> index (see case_entry).
        self.systems: dict[str, int] = {}
        #: What was cut from answers to the schemas' limits: counts by kind,
        #: and ``cases`` with any cut.
        self.truncated: Counter[str] = Counter()
        #: Judge answers that could not be used (``--matcher judge``).
        self.judge_unusable = 0
        #: Metrics a record says its system cannot expose.
        self.not_measured: set[str] = set()
        for rec in read_records(records_path):
            if wanted is None or rec.id in wanted:
                self._add(rec)

    def _add(self, rec: CaseRecord) -> None:
        self.rows.add(rec)
        self.tokens_in += rec.tokens.get("input", 0)
        self.tokens_out += rec.tokens.get("output", 0)
        if rec.status == "ok":
            self.costs.append(rec.cost_usd)
        self.confusion.update(rec.score.confusion)
        undecided = int(rec.guard_undecided)
        self.guard_counts["undecided"] += undecided
        self.guard_counts["cross_subject"] += len(rec.guard_events) - undecided
        self.judge_unusable += rec.score.judge_unusable()
        self.not_measured.update(rec.score.not_measured or ())
        if rec.truncated:
            self.truncated.update(rec.truncated)
            self.truncated["cases"] += 1
        self.shown += 1
        # Failed cases first: at most DRILLDOWN_LIMIT kept, passed ones giving way.
        failed, passed = self.entries[False], self.entries[True]
        if not rec.passed and len(failed) < DRILLDOWN_LIMIT:
            failed.append(case_entry(rec, self.systems))
            if len(failed) + len(passed) > DRILLDOWN_LIMIT:
                passed.pop()
        elif rec.passed and len(failed) + len(passed) < DRILLDOWN_LIMIT:
            passed.append(case_entry(rec, self.systems))

    def drilldown(self) -> dict[str, Any]:
        """The page's case data: failed cases first, at most ``DRILLDOWN_LIMIT`` in all,
        each group by case id and repeat (not in the order cases finished in), the system
        prompts they share, and how many records there were."""

        def ordered(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return sorted(entries, key=lambda e: (e["id"], e["repeat"]))

        return {
            "cases": ordered(self.entries[False]) + ordered(self.entries[True]),
            "systems": list(self.systems),
            "shown": self.shown,
        }


def _confusion(counts: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
    gold_kinds = ("user", "named", "assistant")
    return {g: {p: counts.get((g, p), 0) for p in SUBJECT_KINDS} for g in gold_kinds}


def _results(
    records: Path, wanted: set[str] | None, pass_k: int | None
) -> tuple[RunSummary, dict[str, bytes], dict[str, Any], int]:
    """What the records alone decide: the summary's results, the plots, the page's case
    data and the judge answers that could not be used."""
    scan = _Scan(records, wanted)
    df = case_table(scan.rows, pass_k)
    if df.empty:
        empty = {m: ratio_with_ci([], []) for m in METRICS}
        return RunSummary.model_validate({"cases": 0, "metrics": empty}), {}, {}, 0
    metrics = metrics_of(df)
    confusion = _confusion(scan.confusion)
    breakdown = {key: breakdown_by(df, key) for key in ("lang", "rule", "tag")}
    plots = {
        "metrics.png": draw("metrics.png", metrics),
        "confusion.png": draw("confusion.png", confusion),
        "rules.png": draw(
            "rules.png", {r: {"case_pass": e["case_pass"]} for r, e in breakdown["rule"].items()}
        ),
    }
    costs = scan.costs
    core: dict[str, Any] = {
        "cases": len(df),
        "passed": int(df["passed"].sum()),
        "metrics": metrics,
        "breakdown": breakdown,
        "confusion": confusion,
        "guard_counts": scan.guard_counts,
        "tokens": {"input": scan.tokens_in, "output": scan.tokens_out},
        "cost_usd": None if any(c is None for c in costs) else round(sum(c or 0 for c in costs), 6),
        "failed_cases": sorted(df.loc[~df["passed"], "id"].tolist()),
        "truncated": dict(sorted(scan.truncated.items())),
    }
    if scan.not_measured:
        core["not_measured"] = sorted(scan.not_measured)
    repeats = repeat_summary(df, scan.rows, pass_k)
    if repeats is not None:
        core["repeats"] = repeats
    return RunSummary.model_validate(core), plots, scan.drilldown(), scan.judge_unusable


def write_reports(
    run_dir: Path,
    manifest: RunManifest,
    calls: CallCounts,
    wall_s: float,
    wanted: set[str] | None = None,
    *,
    pass_k: int | None = None,
    partial: PartialRun | None = None,
) -> RunSummary:
    """Write ``summary.json``, the plots, ``report.md`` and ``report.html``; return the
    summary. ``calls``: the counters of the run's model calls. ``wanted`` limits the report
    to those case ids (the run's selection). ``partial`` marks the report of a run that did
    not finish (``hy-eval report``)."""
    core, plots, drilldown, unusable = _results(run_dir / RECORDS_NAME, wanted, pass_k)
    if not core.cases:
        write_summary(run_dir, core)
        return core
    summary = RunSummary.model_validate(
        {
            "suite": manifest.suite,
            **(
                {"system": system}
                if (system := manifest.params.system) not in (None, "hy_eval")
                else {}
            ),
            "provider": manifest.provider,
            "model": manifest.model,
            "variant": manifest.params.variant,
            "guard": manifest.params.guard,
            "dataset_hash": manifest.dataset_hash,
            **matcher_info(manifest, unusable),
            **core.to_data(),
            "calls": calls,
            "wall_s": round(wall_s, 3),
        }
    )
    corrected = corrected_recall(summary.breakdown.get("lang", {}), summary.matcher_quality)
    if corrected:
        summary.fact_recall_corrected = corrected
    if partial:
        summary.partial = partial
    write_summary(run_dir, summary)
    # Each by a new file and a rename: a link in the folder is replaced, never followed.
    for name, data in plots.items():
        replace_file(run_dir / name, data)
    replace_file(run_dir / "report.md", markdown_report(summary, run_dir))
    replace_file(
        run_dir / "report.html", html_report(summary, manifest, plots, drilldown, run_dir.name)
    )
    return summary


#: Characters Markdown could read as markup: links, HTML, code, emphasis, table cells.
_MD_SPECIAL_RE = re.compile(r"([\\`*\[\]<>|&])")
#: Line breaks and other control characters: a value must stay on its own table row.
_MD_BREAK_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _md(value: Any) -> str:
    """A value from a dataset, the command line or a model as literal Markdown text: each
    markup character backslash-escaped, line breaks made spaces. Ids, tags and
    model names without such characters come out unchanged."""
    return _MD_SPECIAL_RE.sub(r"\\\1", _MD_BREAK_RE.sub(" ", str(value)))


def _md_code(value: Any) -> str:
    """``value`` as a code span when it holds no backtick or line break, else as text."""
    text = str(value)
    return f"`{text}`" if not re.search(r"[`\x00-\x1f\x7f-\x9f\u2028\u2029]", text) else _md(text)


def matcher_line(summary: RunSummary, plain: bool = False) -> str:
    """Which matcher paired predicted with gold facts and how far it can be trusted, so
    every number says how it was made (docs/metrics.md, "Matchers"); Markdown, or
    ``plain`` text for the terminal."""
    name = summary.matcher
    md, code = (str, str) if plain else (_md, _md_code)
    line = f"Facts matched by the {code(name)} matcher"
    judge = summary.judge
    if judge:
        line += (
            f" (judge {md(judge.provider)}:{md(judge.model or 'default')}, prompt "
            f"variant {code(judge.variant)}; {judge.unusable} unusable judge "
            "answers, counted as no match)"
        )
    trust = quality_text(name, summary.matcher_quality) + corrected_text(summary)
    return f"{line}. How far it can be trusted: {md(trust)}."


def markdown_report(summary: RunSummary, run_dir: Path) -> str:
    m = summary.metrics
    cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    g = summary.guard_counts
    guarded = (
        f" ({g.cross_subject} cross-subject operations and {g.undecided} "
        "with a subject it could not tell added instead)"
        if summary.guard
        else ""
    )
    lines = [
        f"# {_md(summary.suite)}: "
        + (f"system {_md(summary.system)} on " if summary.system else "")
        + f"{_md(summary.provider)}:{_md(summary.model)}, "
        f"variant {_md_code(summary.variant)}",
        "",
        *(
            [f"Not measured for this system (n/m): {', '.join(summary.not_measured)}.", ""]
            if summary.not_measured
            else []
        ),
        *([f"**{partial_text(summary)}**", ""] if summary.partial else []),
        *[x for note in reading_notes(summary) for x in (f"**{note}**", "")],
        f"{summary.cases} cases, {summary.passed} passed. Guard "
        f"{'on' if summary.guard else 'off'}{guarded}. Wall time {wall_text(summary)}. "
        f"Tokens {summary.tokens.input:,} in / {summary.tokens.output:,} out. "
        f"Cost {cost}.",
        "",
        matcher_line(summary),
        "",
        "| metric | value [95% CI] | n |",
        "|---|---|---|",
    ]
    for name in METRICS:
        shown = fmt_ratio(m[name]) if m[name].value is not None else summary.missing(name)
        lines.append(f"| {name} | {shown} | {m[name].n} |")
    lines += ["", "What each metric counts (docs/metrics.md has the rules):", ""]
    lines += [f"- `{name}`: {MEANINGS[name]}" for name in METRICS]
    for key, title in (("lang", "language"), ("rule", "rule"), ("tag", "tag")):
        lines += [
            "",
            f"## By {title}",
            "",
            "| " + title + " | cases | case_pass | attribution_accuracy"
            " | owner_accuracy | misattribution_rate |",
            "|---|---|---|---|---|---|",
        ]
        for value, group in sorted(summary.breakdown[key].items()):
            lines.append(
                f"| {_md(value)} | {group.cases} | {fmt_ratio(group.metric('case_pass'))} | "
                f"{fmt_ratio(group.metric('attribution_accuracy'))} | "
                f"{fmt_ratio(group.metric('owner_accuracy'))} | "
                f"{fmt_ratio(group.metric('misattribution_rate'))} |"
            )
    lines += [
        "",
        "## Attribution confusion (gold subject x predicted subject)",
        "",
        "| gold \\ predicted | " + " | ".join(SUBJECT_KINDS) + " |",
        "|---" * (len(SUBJECT_KINDS) + 1) + "|",
    ]
    for gold, row in summary.confusion.items():
        lines.append(f"| {gold} | " + " | ".join(str(row[p]) for p in SUBJECT_KINDS) + " |")
    failed = summary.failed_cases
    shown = ", ".join(_md(f) for f in failed[:200])
    lines += ["", f"## Failed cases ({len(failed)})", "", shown or "none"]
    if len(failed) > 200:
        lines.append(f"... and {len(failed) - 200} more (see cases.jsonl)")
    cut = truncation_line(summary)
    if cut:
        lines += ["", cut]
    lines += [
        "",
        f"Details per case: {_md(run_dir / 'report.html')} and {_md(run_dir / 'cases.jsonl')}.",
        "",
    ]
    return "\n".join(lines)


def wall_text(summary: RunSummary) -> str:
    """``1234.5 s``, or ``unknown`` for a partial run, whose wall time is not known."""
    return "unknown" if summary.partial else f"{summary.wall_s:.1f} s"


def partial_text(summary: RunSummary) -> str | None:
    """The sentence every report of a partial run shows first, or ``None``."""
    partial = summary.partial
    if not partial:
        return None
    planned = partial.cases_planned
    of = f" of {planned} planned" if planned else ""
    return (
        f"Partial run: {partial.cases_done}{of} case records were finished before the run "
        "stopped; every figure covers only these, and its call counts and wall time are "
        "not known."
    )


def truncation_line(summary: RunSummary) -> str:
    """One sentence on answers cut to the schemas' limits, or ``""`` when none was."""
    cut = dict(summary.truncated)
    cases = cut.pop("cases", 0)
    if not cases:
        return ""
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(cut.items()))
    return f"Answers cut to the schema's limits in {cases} case(s): {kinds}."


def terminal_summary(summary: RunSummary, run_dir: Path) -> str:
    """The summary for the terminal: the metrics with their intervals, and what a reader
    needs to know about how they were made."""
    m = summary.metrics
    width = max(len(n) for n in METRICS)
    rows = [f"{'metric':<{width}}  {'value':>7}  95% CI            n"]
    for name in METRICS:
        e = m[name]
        if e.value is None:
            rows.append(f"{name:<{width}}  {summary.missing(name):>7}")
            continue
        ci = f"[{e.ci[0]:.3f}, {e.ci[1]:.3f}]"
        rows.append(f"{name:<{width}}  {e.value:>7.3f}  {ci}  {e.n:>5}")
    rep = summary.repeats
    if rep:
        flaky = ", ".join(rep.flaky_cases[:10]) or "none"
        rows.append(
            f"repeats: {rep.n} per case, a case passes with {rep.k} of {rep.n}; "
            f"pass rate over all runs {rep.pass_rate:.3f}; flaky: {flaky}"
        )
    cut = truncation_line(summary)
    if cut:
        rows.append(cut)
    if summary.matcher != "keyword":
        rows.append(matcher_line(summary, plain=True))
    rows.extend(reading_notes(summary))
    rows.append(
        f"{summary.cases} cases, {summary.passed} passed; report: {run_dir / 'report.html'}"
    )
    if summary.partial:
        rows.append(str(partial_text(summary)))
    reused = summary.calls.records_reused
    if reused:
        rows.append(
            f"{reused} case records taken whole from the cache, computed by an earlier run "
            "with the same inputs and code (--no-reuse recomputes them)"
        )
    return "\n".join(rows)


# -- HTML ----------------------------------------------------------------------------


def html_report(
    summary: RunSummary,
    manifest: RunManifest,
    plots: dict[str, bytes],
    drilldown: dict[str, Any],
    run_name: str = "",
) -> str:
    """``report.html``, rendered from ``templates/report.html.j2`` (``_pages.py``)."""
    return report_page(
        summary,
        manifest,
        plots,
        drilldown,
        truncation_line(summary),
        partial_text(summary),
        run_name,
    )
