"""A baseline (rule E5): the run that later runs are gated against, as ``hy-eval baseline
bless RUN_DIR`` writes it (``reports/baselines/<suite>.json``): the run's metrics, and
each case's verdict, metric counts and outputs."""

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


class BaselineCase(FilePart):
    """One case of the blessed run (its repeats taken together, k of n)."""

    passed: bool = Field(description="The case passed.")
    counts: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="Metric -> [numerator, denominator], repeats summed."
    )
    outputs: dict[str, Any] = Field(
        default_factory=dict,
        description="What a comparison diffs (analysis.outputs_of): facts as [text, owner], "
        "applied operations as [op, fact, targets], basic_info, error.",
    )


class Baseline(RunFile):
    """A blessed baseline."""

    suite: str = Field(description="Suite name.")
    dataset_hash: str = Field(description="SHA-256 of the suite's files.")
    prompt_hashes: dict[str, str] = Field(
        default_factory=dict, description="SHA-256 of each prompt file the variant used."
    )
    provider: str = Field(description="Provider of the run's model.")
    model: str = Field(description="The run's model.")
    variant: str | None = Field(default=None, description="Prompt variant.")
    guard: bool | None = Field(default=None, description="The cross-subject guard (R2) was on.")
    matcher: str = Field(
        default="keyword", description="The matcher that paired facts (keyword: a run from before)."
    )
    blessed_from: str = Field(default="", description="The run folder it was blessed from.")
    blessed_at: str = Field(default="", description="UTC time of the blessing, ISO 8601.")
    git: dict[str, Any] | None = Field(
        default=None, description="Commit and dirty flag of the run's code."
    )
    metrics: dict[str, float | None] = Field(
        default_factory=dict, description="Metric -> the run's value (None: nothing counted)."
    )
    cases: dict[str, BaselineCase] = Field(
        default_factory=dict, description="Case id -> its verdict, counts and outputs."
    )

    @property
    def label(self) -> str:
        """``baseline provider:model/variant``, as comparisons name it."""
        return f"baseline {self.provider}:{self.model}/{self.variant}"


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path``: indented, keys sorted (a diff of two blessings
    reads case by case)."""
    replace_text(path, json_text(baseline.to_data(), indent=1, sort_keys=True) + "\n")


def read_baseline(path: Path) -> Baseline:
    """The baseline at ``path``; ``FileNotFoundError`` when there is none,
    ``RunFolderError`` (one line) when it is not a baseline."""
    if not path.is_file():
        raise FileNotFoundError(path)
    return read_model_file(path, Baseline, "baseline")
