"""Matrix runs: one suite under every (system, model, variant) combination.

A matrix runs every case under every (system, model, variant) combination, one sub-folder each,
all sharing the answer cache; then compares each combination with the first (paired
tests, McNemar's p Holm-corrected across the comparisons) and writes ``matrix.md``,
``matrix.json`` and one comparison page per combination.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hy_eval._files import LinkRefused, private_dir, replace_file
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._plan import REPORTS_DIR, RunError, SystemUnavailable
from hy_eval.harness.run._suite import run_suite
from hy_eval.harness.runlog import Comparison, MatrixFile, RunSummary, write_matrix_file
from hy_eval.llm import ModelSpec


@dataclass(frozen=True)
class MatrixEntry:
    """One finished combination."""

    #: ``<provider>[_<model>]--<variant>``, also its sub-folder's name.
    name: str
    run_dir: Path
    #: The run's summary (as ``summary.json`` holds it).
    summary: RunSummary
    #: The run's exit code (0, or 3 for provider errors above the tolerance).
    code: int


@dataclass
class MatrixResult:
    """What :func:`run_matrix` made."""

    root: Path
    entries: list[MatrixEntry]
    #: Combinations whose system could not be set up: (name, the one-line reason).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Each combination after the first compared with the first (``compare`` results).
    comparisons: list[Comparison] = field(default_factory=list)
    #: The metric table and the comparisons, as written at the top of ``matrix.md``.
    text: str = ""

    @property
    def code(self) -> int:
        """The worst exit code of the runs; 2 when a system could not be set up."""
        worst = max((e.code for e in self.entries), default=0)
        return max(worst, 2) if self.skipped else worst

    @property
    def report(self) -> Path:
        return self.root / "matrix.md"

    @property
    def pages(self) -> list[Path]:
        """The comparison pages, one per combination after the first."""
        return [self.root / f"compare-{e.name}.html" for e in self.entries[1:]]


def combination_name(spec: ModelSpec, variant: str, system: str = "hy_eval") -> str:
    """``[<system>--]<provider>[_<model>]--<variant>``: the system only when it is not
    this package's own pipeline, so the names of earlier matrices stay."""
    name = f"{str(spec).replace(':', '_').replace('/', '_')}--{variant}"
    return name if system == "hy_eval" else f"{system}--{name}"


def default_matrix_root(suite: str) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return REPORTS_DIR / f"{stamp}-{suite}-matrix"


def run_matrix(
    base: RunConfig,
    models: Sequence[ModelSpec],
    variants: Sequence[str],
    root: Path | None = None,
    *,
    perturbations: Sequence[str] = (),
    seed: int = 0,
    on_run: Callable[[MatrixEntry], None] | None = None,
    systems: Sequence[str] = (),
    on_skip: Callable[[str, str], None] | None = None,
) -> MatrixResult:
    """Run ``base`` under each system, model and variant (systems outer, then models;
    ``systems`` empty: ``base``'s), call ``on_run`` after each, then compare and write the
    matrix files under ``root``. A model of another provider than ``base``'s drops
    ``base``'s URL; a spec without a model keeps ``base``'s. A system that cannot be set
    up is skipped (``on_skip`` told, the result's code 2); any other ``RunError`` is
    raised naming the combination that failed."""
    if not models or not variants:
        raise RunError("a matrix run needs at least one model and one variant")
    root = _matrix_folder(root or default_matrix_root(base.suite))
    result = MatrixResult(root, [])
    for system, spec, variant in itertools.product(systems or [base.system], models, variants):
        name = combination_name(spec, variant, system)
        config = base.model_copy(
            update={
                "system": system,
                "provider": spec.provider,
                "model": spec.model or base.model,
                "base_url": base.base_url if spec.provider == base.provider else None,
                "variant": variant,
                "out": str(root / name),
            }
        )
        try:
            run_dir, summary, code = run_suite(config, perturbations, seed)
        except SystemUnavailable as exc:
            result.skipped.append((name, str(exc)))
            if on_skip is not None:
                on_skip(name, str(exc))
            continue
        except RunError as exc:
            raise RunError(f"{name}: {exc}", exc.exit_code) from None
        entry = MatrixEntry(name, run_dir, summary, code)
        result.entries.append(entry)
        if on_run is not None:
            on_run(entry)
    if not result.entries:
        raise RunError("no combination of the matrix could run: " + result.skipped[0][1])
    _compare_all(result)
    _write_matrix(result)
    return result


def tabulate_runs(run_dirs: Sequence[Path], root: Path) -> MatrixResult:
    """The matrix files of finished runs (each folder's name its column; the first the
    one the others are compared with), written under ``root``: a side-by-side table of
    runs made apart, e.g. systems that need different model settings. Raises
    ``RunError`` for a folder without a summary, or runs that cannot be compared."""
    from hy_eval.harness.analysis import CompareError
    from hy_eval.harness.runlog import RunFolderError, read_summary

    if len(run_dirs) < 2:
        raise RunError("a table needs at least two run folders")
    result = MatrixResult(root, [])
    for run_dir in run_dirs:
        try:
            summary = read_summary(run_dir)
        except RunFolderError as exc:
            raise RunError(str(exc)) from None
        if summary is None:
            raise RunError(f"{run_dir}: no summary.json (not a finished run folder)")
        result.entries.append(MatrixEntry(Path(run_dir).name, Path(run_dir), summary, 0))
    try:
        _compare_all(result)
    except CompareError as exc:
        raise RunError(str(exc)) from None
    _matrix_folder(root)
    _write_matrix(result)
    return result


def _matrix_folder(root: Path) -> Path:
    """``root`` made (0700) to hold the matrix files; a link there is refused, as no
    rename may land in the folder it points to."""
    try:
        return private_dir(root)
    except LinkRefused as exc:
        raise RunError(str(exc)) from None


def _compare_all(result: MatrixResult) -> None:
    from hy_eval.harness.analysis import compare, holm, run_outcomes

    base = run_outcomes(result.entries[0].run_dir)
    comparisons = [compare(base, run_outcomes(e.run_dir)) for e in result.entries[1:]]
    if len(comparisons) > 1:
        p_values = [c.mcnemar.p_value for c in comparisons]
        for c, p in zip(comparisons, holm(p_values), strict=True):
            c.p_holm = p
    result.comparisons = comparisons


def metric_table(entries: Sequence[MatrixEntry]) -> list[str]:
    """A Markdown table: one row per metric and tokens per case, one column per run; a
    value with its 95% interval and n (the cases that count for it) when the run has them."""
    from hy_eval.harness.scoring import METRICS

    lines = [
        "| metric | " + " | ".join(e.name for e in entries) + " |",
        "|---" * (len(entries) + 1) + "|",
    ]
    summaries = [e.summary for e in entries]
    for metric in METRICS:
        cells = [_cell(s, metric) for s in summaries]
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    tokens = [f"{_tokens_per_case(s):.0f}" for s in summaries]
    lines.append("| tokens per case | " + " | ".join(tokens) + " |")
    return lines


def _cell(summary: RunSummary, metric: str) -> str:
    """``0.139 [0.081, 0.205] n=20``; n/a or n/m without a value (n/a too for a metric
    added after the run's summary was written)."""
    entry = summary.metrics.get(metric)
    if entry is None or entry.value is None:
        return summary.missing(metric)
    lo, hi = entry.ci
    if lo is None or hi is None:
        return f"{entry.value:.3f}"
    return f"{entry.value:.3f} [{lo:.3f}, {hi:.3f}] n={entry.n}"


def _tokens_per_case(summary: RunSummary) -> float:
    tokens = summary.tokens.input + summary.tokens.output
    return float(tokens / max(1, summary.cases))


def flipped_sections(result: MatrixResult) -> list[str]:
    """Per comparison, the cases whose pass/fail flipped, linked to both reports."""
    from hy_eval.harness.analysis import diff_words

    first = result.entries[0].name
    home = _link(result.root, result.entries[0].run_dir)
    lines: list[str] = []
    for entry, comparison in zip(result.entries[1:], result.comparisons, strict=True):
        there = _link(result.root, entry.run_dir)
        lines.append(f"\n### Flipped cases: {entry.name} against {first}\n")
        lines.append(
            f"Side by side, with a fact-level diff: "
            f"[compare-{entry.name}.html](compare-{entry.name}.html)\n"
        )
        lines.append("| case | change | drill-down | what changed |\n|---|---|---|---|")
        for f in comparison.flipped:
            links = f"[A]({home}/report.html#{f.id}) / [B]({there}/report.html#{f.id})"
            changed = diff_words(f.diff)
            lines.append(f"| {f.id} | {f.change} | {links} | {changed} |")
    return lines


def _link(root: Path, run_dir: Path) -> str:
    """``run_dir`` as a link from a page in ``root``."""
    return Path(os.path.relpath(run_dir, root)).as_posix()


def _write_matrix(result: MatrixResult) -> None:
    from hy_eval.harness.report import comparison_text, write_compare_page

    skipped = [f"- {name} not run: {why}" for name, why in result.skipped]
    result.text = (
        "\n".join(metric_table(result.entries) + (["", *skipped] if skipped else []))
        + "\n\n"
        + "\n\n".join("```\n" + comparison_text(c) + "\n```" for c in result.comparisons)
    )
    root = result.root
    flips = "\n".join(flipped_sections(result))
    replace_file(root / "matrix.md", result.text + "\n" + flips + "\n")
    first = result.entries[0].run_dir
    for entry, comparison in zip(result.entries[1:], result.comparisons, strict=True):
        write_compare_page(root / f"compare-{entry.name}.html", comparison, first, entry.run_dir)
    combinations = [e.name for e in result.entries]
    write_matrix_file(root, MatrixFile(combinations=combinations, comparisons=result.comparisons))
