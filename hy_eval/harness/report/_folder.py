"""``hy-eval report DIR``: the summary and reports of whatever a run folder holds.

A run writes ``summary.json`` and its reports only when it ends; an interrupted or killed
run leaves its manifest and the records it finished. This writes them from those, marked
*partial* when the run did not finish: ``summary.partial`` says how many cases are in
the report and, when the suite can still be read with the dataset the run started on,
how many were planned. A finished run's reports are written again as they were (its call
counters, which only the running process knew, are taken from its summary).

The records are checked line by line first (``_compare_input``): a run folder is input
like any other, and a bad line is one line naming the file, line and field.
"""

from __future__ import annotations

from pathlib import Path

from hy_eval._files import LinkRefused, refuse_link
from hy_eval.harness.analysis import checked_records
from hy_eval.harness.datasets import DatasetError, load_suite, select_cases
from hy_eval.harness.report._write import write_reports
from hy_eval.harness.runlog import (
    RECORDS_NAME,
    CallCounts,
    PartialRun,
    RunFolderError,
    RunManifest,
    RunSummary,
    read_manifest,
    read_summary,
)


def planned_cases(manifest: RunManifest) -> int | None:
    """How many (case, repeat) records the run set out to write: its suite's selection
    under its own filter, sample and limit, times its repeats. ``None`` when the suite is
    gone or has changed since (its hash is not the manifest's)."""
    params = manifest.params
    try:
        # The suite as the command line named it (a name or a folder), as the run loaded it.
        suite = load_suite(params.suite or manifest.suite)
        cases = select_cases(suite.refs, params.filter, params.sample, params.limit)
    except (DatasetError, ValueError, OSError):
        return None
    if suite.hash != manifest.dataset_hash:
        return None
    repeats = params.repeats
    return len(cases) * (repeats if isinstance(repeats, int) and repeats > 0 else 1)


def _saved_calls(run_dir: Path) -> tuple[CallCounts, float]:
    """The call counters and wall time of a finished run's own summary, if readable."""
    try:
        old = read_summary(run_dir)
    except RunFolderError:
        old = None
    if old is None:
        return CallCounts(), 0.0
    return old.calls, old.wall_s


def report_folder(run_dir: Path) -> RunSummary:
    """Write ``summary.json``, the plots, ``report.md`` and ``report.html`` of ``run_dir``
    from its records; return the summary. ``RunFolderError`` (one line) for a folder that
    is not a run, holds no record, or holds a bad one, and for a run folder that is a
    symbolic link (the reports would be renamed into the folder it points to)."""
    try:
        refuse_link(run_dir, "the run folder")
    except LinkRefused as exc:
        raise RunFolderError(str(exc)) from None
    manifest = read_manifest(run_dir)
    records = run_dir / RECORDS_NAME
    done = {(r.id, r.repeat) for r in checked_records(records)}
    if not done:
        raise RunFolderError(f"{run_dir}: no finished case in {RECORDS_NAME}; nothing to report")
    partial = None
    if manifest.finished:
        calls, wall = _saved_calls(run_dir)
    else:
        calls, wall = CallCounts(), 0.0
        partial = PartialRun(cases_done=len(done), cases_planned=planned_cases(manifest))
    pass_k = manifest.params.pass_k
    return write_reports(
        run_dir,
        manifest,
        calls,
        wall,
        None,
        pass_k=pass_k if isinstance(pass_k, int) else None,
        partial=partial,
    )
