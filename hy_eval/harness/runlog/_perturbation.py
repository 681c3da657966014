"""The files of a metamorphic run (docs/metrics.md, "Consistency"): ``perturb.json`` in
each ``RUN/perturb/<name>/``, and the consistency of a perturbed run against its base, as
the base run's ``summary.json`` holds it per perturbation and a comparison holds it for
its B against its A."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hy_eval.harness.runlog._jsonfile import (
    FilePart,
    Number,
    RunFile,
    read_model_file,
    write_json,
)

PERTURB_FILE = "perturb.json"


class PerturbCase(FilePart):
    """How one case was perturbed."""

    subjects: dict[str, str] = Field(
        description="The perturbed case's subjects -> the original's (names mapped back "
        "for the diffs; user and assistant map to themselves)."
    )
    note: str = Field(default="", description="What was changed, in words.")


class PerturbFile(RunFile):
    """``RUN/perturb/<name>/perturb.json``: what a perturbation skipped, and each case's
    subject map."""

    perturbation: str | None = Field(default=None, description="The perturbation's name.")
    seed: int | None = Field(default=None, description="Seed of its random choices.")
    skipped: list[tuple[str, str]] = Field(
        default_factory=list,
        description="(case id, reason) of each case not perturbable soundly (not run).",
    )
    cases: dict[str, PerturbCase] = Field(
        default_factory=dict, description="Case id -> how it was perturbed."
    )


def read_perturb_file(run_dir: Path) -> PerturbFile | None:
    """``perturb.json`` of ``run_dir``, None when the folder has none, else
    ``RunFolderError`` (one line) when it is not a perturbation file."""
    path = run_dir / PERTURB_FILE
    if not path.is_file():
        return None
    return read_model_file(path, PerturbFile, "perturbation file")


class ConsistencyValue(FilePart):
    """A share of (case, check) verdicts left unchanged, with its 95% interval over cases
    (``analysis._stats.ratios_with_ci``, without the keys it does not need)."""

    value: float | None = Field(default=None, description="num / den; None: no check paired.")
    ci: tuple[float | None, float | None] = Field(default=(None, None), description="95% interval.")
    n: int = Field(default=0, description="Cases with a paired check.")
    num: Number = Field(default=0, description="Verdicts unchanged.")
    den: Number = Field(default=0, description="Verdicts paired.")
    small_n: bool = Field(default=False, description="Fewer than 10 cases: a wide interval.")


class FragilityEntry(ConsistencyValue):
    """The consistency of the cases of one rule or tag."""

    changed: int = Field(default=0, description="Cases of the group with a verdict changed.")


class Fragility(FilePart):
    """Consistency per rule and per tag (a case counts under each of its rules and tags)."""

    rule: dict[str, FragilityEntry] = Field(default_factory=dict, description="Rule id -> entry.")
    tag: dict[str, FragilityEntry] = Field(default_factory=dict, description="Tag -> entry.")


class ChangedCase(FilePart):
    """A case (and repeat) with at least one check verdict changed."""

    id: str = Field(description="Case id.")
    repeat: int = Field(default=0, description="Repeat index.")
    passed: tuple[bool, bool] = Field(description="The case passed in the base, perturbed run.")
    changed: list[str] = Field(description="The changed checks: kind#occurrence (fact#1).")
    facts_diff: Any = Field(
        default=None, description="Structural diff of the facts, the perturbed names mapped back."
    )


class ConsistencyResult(FilePart):
    """The consistency of one run's (case, check) verdicts against another's on their
    shared (case, repeat) keys (``analysis._consistency.consistency``)."""

    consistency: ConsistencyValue = Field(
        default_factory=ConsistencyValue, description="The share of verdicts unchanged."
    )
    cases: int = Field(default=0, description="Shared (case, repeat) keys.")
    checks: int = Field(default=0, description="Verdicts paired.")
    checks_changed: int = Field(default=0, description="Verdicts changed.")
    only_in_base: int = Field(default=0, description="Keys of the base run the other lacks.")
    fragility: Fragility = Field(default_factory=Fragility, description="By rule and tag.")
    changed_count: int | None = Field(
        default=None, description="Cases with at least one verdict changed."
    )
    #: Summaries written before the count was named ``changed_count`` call it this.
    flipped_count: int | None = Field(default=None, description="changed_count's name before.")
    changed_cases: list[ChangedCase] = Field(
        default_factory=list, description="The first 50 changed cases (MAX_CHANGED)."
    )

    @property
    def changed_cases_count(self) -> int | None:
        """Cases with a verdict changed, under the name the file has."""
        return self.changed_count if self.changed_count is not None else self.flipped_count


class PerturbedMetric(FilePart):
    """One metric of the base run and of its perturbed run."""

    base: float | None = Field(default=None, description="The base run's value.")
    perturbed: float | None = Field(default=None, description="The perturbed run's value.")
    perturbed_ci: tuple[float | None, float | None] | None = Field(
        default=None, description="The perturbed run's 95% interval."
    )


class _SectionHead(FilePart):
    """The fields a summary's perturbation section has before the consistency's."""

    run_dir: str = Field(
        default="", description="The perturbed run's folder, relative to the base's."
    )
    seed: int | None = Field(default=None, description="Seed of the perturbation.")
    skipped: int = Field(default=0, description="Cases skipped as not perturbable soundly.")
    skipped_cases: list[tuple[str, str]] = Field(
        default_factory=list, description="(case id, reason) of each skipped case."
    )
    metrics: dict[str, PerturbedMetric] = Field(
        default_factory=dict, description="Metric -> the base and perturbed values."
    )


# pydantic orders the fields of a class by its bases from the last to the first: the
# head's fields come first, as the section is written.
class PerturbationSection(ConsistencyResult, _SectionHead):
    """One perturbation in the base run's ``summary.json``: what ran and was skipped, the
    metrics of both runs, and the consistency."""


def write_perturb_file(run_dir: Path, perturb: PerturbFile) -> None:
    """Write ``perturb.json`` of the perturbed run folder ``run_dir``."""
    write_json(run_dir / PERTURB_FILE, perturb.to_data())
