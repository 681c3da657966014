"""A paired comparison of two runs (rule E4; ``analysis._compare.compare``), and the
files that hold one: ``hy-eval compare --json``, a run's ``gates.json`` (the gates'
verdict with the comparison against the baseline, E5) and a matrix run's
``matrix.json``. docs/metrics.md states the procedures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hy_eval.harness.runlog._jsonfile import (
    FilePart,
    RunFile,
    json_text,
    read_model_file,
    replace_text,
)
from hy_eval.harness.runlog._perturbation import ConsistencyResult

GATES_FILE = "gates.json"
MATRIX_FILE = "matrix.json"


class WorseTest(FilePart):
    """The one-sided test of "B worse than A by more than ``limit``" a gate asks for."""

    limit: float = Field(description="The worsening allowed (max_drop or max_rise).")
    p: float = Field(description="One-sided p-value.")
    method: str = Field(
        description="permutation, McNemar (case_pass) or score (limit > 0: the paired score "
        "interval inverted; bootstrap in files written before it)."
    )
    samples: int | None = Field(
        default=None, description="Bootstrap resamples used (bootstrap only; None otherwise)."
    )


class OwnValue(FilePart):
    """A run's own value of a metric over all its cases (its summary's headline)."""

    value: float | None = Field(
        default=None, description="sum(num) / sum(den); None: nothing counted."
    )
    n: int = Field(default=0, description="Cases with something to check.")
    not_measured: bool | None = Field(
        default=None, description="True: the run's system under test cannot expose it."
    )


class OwnValues(FilePart):
    """Each run's own value of a metric."""

    a: OwnValue = Field(default_factory=OwnValue, description="Run A's.")
    b: OwnValue = Field(default_factory=OwnValue, description="Run B's.")


class ComparedMetric(FilePart):
    """One metric of B against A on the shared cases that count for it in both runs. A
    metric no shared case has holds a, b, diff, ci, n, p_value, higher_is_better,
    significant and own only."""

    a: float | None = Field(default=None, description="A's value on the shared cases.")
    b: float | None = Field(default=None, description="B's value on the shared cases.")
    diff: float | None = Field(default=None, description="B - A.")
    ci: tuple[float | None, float | None] = Field(
        default=(None, None),
        description="Paired score CI of B - A at ci_level (Newcombe's, for ratios), holding 0 "
        "where p_value is at least 1 - ci_level.",
    )
    ci_level: float | None = Field(default=None, description="Level of the CI.")
    n: int = Field(default=0, description="Shared cases that count for the metric in both runs.")
    p_value: float | None = Field(
        default=None, description="Two-sided paired permutation p (exact McNemar for case_pass)."
    )
    se: float | None = Field(default=None, description="Paired standard error of B - A.")
    mde: float | None = Field(
        default=None, description="Minimum detectable effect, 80% power at two-sided alpha."
    )
    higher_is_better: bool = Field(default=True, description="An accuracy (else a rate).")
    worse_cases: list[str] = Field(
        default_factory=list, description="Cases on which B is worse for this metric."
    )
    better_cases: int = Field(default=0, description="How many cases B is better on.")
    worse_test: WorseTest | None = Field(default=None, description="The gate's one-sided test.")
    p_adjusted: float | None = Field(default=None, description="Holm-adjusted p over the metrics.")
    significant: bool = Field(default=False, description="p_adjusted < alpha.")
    significant_unadjusted: bool | None = Field(default=None, description="p_value < alpha.")
    own: OwnValues | None = Field(
        default=None, description="Each run's own value over all its cases."
    )


class MatcherPair(FilePart):
    """The matcher that paired facts in each run."""

    a: str = Field(default="keyword", description="Run A's matcher.")
    b: str = Field(default="keyword", description="Run B's matcher.")


class McNemarResult(FilePart):
    """McNemar's exact test on the flipped cases (case_pass)."""

    fixed: int = Field(default=0, description="Cases A failed and B passes.")
    broken: int = Field(default=0, description="Cases A passed and B fails.")
    p_value: float = Field(default=1.0, description="Two-sided exact p.")


class FlippedCase(FilePart):
    """A case whose pass/fail verdict differs between the runs."""

    id: str = Field(description="Case id.")
    change: str = Field(description="fixed (by B) or broken (by B).")
    diff: dict[str, Any] = Field(
        default_factory=dict, description="Structural diff of the case's outputs, A to B."
    )


class Comparison(RunFile):
    """The paired comparison of run B against run A (``compare --json``)."""

    a: str = Field(description="Run A's label (provider:model/variant, or baseline ...).")
    b: str = Field(description="Run B's label.")
    cases: int = Field(default=0, description="Shared case ids compared.")
    only_in_a: int = Field(default=0, description="Case ids only A has.")
    only_in_b: int = Field(default=0, description="Case ids only B has.")
    alpha: float = Field(default=0.05, description="Level of the tests.")
    ci_level: float = Field(default=0.95, description="Level of the CIs.")
    adjustment: str = Field(default="holm", description="Multiple-comparison adjustment of p.")
    matcher: MatcherPair | None = Field(default=None, description="Each run's matcher.")
    metrics_tested: int = Field(default=0, description="Metrics with a p-value (Holm's family).")
    metrics: dict[str, ComparedMetric] = Field(
        default_factory=dict, description="Metric -> B against A (METRICS)."
    )
    mcnemar: McNemarResult = Field(
        default_factory=McNemarResult, description="McNemar's test on the flipped cases."
    )
    mde_case_pass: float | None = Field(default=None, description="case_pass's MDE.")
    flipped_count: int = Field(default=0, description="Cases whose pass/fail verdict flipped.")
    flipped: list[FlippedCase] = Field(default_factory=list, description="The flipped cases.")
    changed_count: int | None = Field(
        default=None,
        description="Shared cases with a check verdict changed, flipped ones included; "
        "None when a side has no check verdicts (a baseline).",
    )
    perturbation: str | None = Field(
        default=None, description="The perturbation B is of A, for a perturbed run B."
    )
    consistency: ConsistencyResult | None = Field(
        default=None, description="B's check verdicts against A's, when both are run folders."
    )
    p_holm: float | None = Field(
        default=None, description="In a matrix: McNemar's p Holm-adjusted across the comparisons."
    )
    prompts_changed: list[str] | None = Field(
        default=None,
        description="The prompt files (variant/stage.lang.j2) whose text differs between A and "
        "B, or that only one uses; None when a side does not record its prompts.",
    )

    def metric(self, name: str) -> ComparedMetric:
        """The entry of metric ``name`` (a metric the comparison lacks: an empty one)."""
        return self.metrics.get(name) or ComparedMetric()


def write_comparison(path: str | Path, comparison: Comparison) -> None:
    """``compare --json``: the comparison as indented JSON."""
    replace_text(Path(path), json_text(comparison.to_data(), indent=1))


def read_comparison(path: Path) -> Comparison:
    """A comparison written by ``compare --json``; ``RunFolderError`` when it is not one."""
    return read_model_file(path, Comparison, "comparison")


class GatesFile(RunFile):
    """``RUN/gates.json``: the verdict of the gates on a run (``gate._apply``)."""

    failures: list[str] = Field(default_factory=list, description="Gates that failed.")
    untested: list[str] = Field(
        default_factory=list, description="Gates with nothing to test (no shared case)."
    )
    warnings: list[str] = Field(
        default_factory=list, description="Worse than allowed, but not significantly."
    )
    comparison: Comparison | None = Field(
        default=None, description="The run against the baseline, when a gate needed one."
    )


def write_gates_file(run_dir: Path, gates: GatesFile) -> Path:
    """Write ``RUN/gates.json``; return its path."""
    path = run_dir / GATES_FILE
    replace_text(path, json_text(gates.to_data(), indent=1))
    return path


def read_gates_file(run_dir: Path) -> GatesFile:
    """``RUN/gates.json``; ``RunFolderError`` when it is not a gates verdict."""
    return read_model_file(run_dir / GATES_FILE, GatesFile, "gates verdict")


class MatrixFile(RunFile):
    """``matrix.json`` of a matrix run: its combinations and each one compared with the
    first."""

    combinations: list[str] = Field(
        default_factory=list, description="Sub-folder names, the first the reference."
    )
    comparisons: list[Comparison] = Field(
        default_factory=list, description="Each later combination against the first."
    )


def write_matrix_file(root: Path, matrix: MatrixFile) -> None:
    """Write ``ROOT/matrix.json``."""
    replace_text(root / MATRIX_FILE, json_text(matrix.to_data(), indent=1))
