"""``summary.json`` (rules E3, E7): a run's metrics with their intervals, the breakdowns,
the counters of its model calls and, for a metamorphic run, one section per perturbation.

``report/_write.py`` writes it when a run ends (or ``hy-eval report`` for a folder whose
run did not finish, marked ``partial``); ``report/_perturbed.add_perturbations`` writes it again
with the ``perturbations`` sections. A summary of a run with no finished case holds only
``cases`` (0) and ``metrics``.
"""

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
from hy_eval.harness.runlog._perturbation import PerturbationSection

SUMMARY_NAME = "summary.json"


class MetricEntry(FilePart):
    """One ratio metric over a group of cases, with its 95% interval over cases
    (``analysis._stats.ratios_with_ci``)."""

    value: float | None = Field(
        default=None, description="sum(num) / sum(den); None: nothing counted."
    )
    ci: tuple[float | None, float | None] = Field(
        default=(None, None),
        description="The interval: bootstrap over cases and Wilson's, the hull.",
    )
    n: int = Field(default=0, description="Cases that count for the metric (den > 0).")
    small_n: bool = Field(default=False, description="Fewer than 10 cases: a wide interval.")
    num: Number = Field(default=0, description="Sum of the cases' numerators.")
    den: Number = Field(default=0, description="Sum of the cases' denominators.")


class BreakdownGroup(FilePart):
    """The cases of one language, rule or tag: how many, and every metric over them
    (one key per metric name, beside ``cases``)."""

    cases: int = Field(description="Cases in the group.")
    __pydantic_extra__: dict[str, MetricEntry] = Field(init=False)

    def metric(self, name: str) -> MetricEntry | None:
        """The group's entry of metric ``name``."""
        return (self.model_extra or {}).get(name)


class RepeatSpread(FilePart):
    """One metric computed per repeat index, and its spread across repeats."""

    per_repeat: list[float] = Field(description="The metric over each repeat index's runs.")
    min: float = Field(description="The smallest of them.")
    max: float = Field(description="The largest of them.")
    std: float = Field(description="Their standard deviation (population).")


class RepeatSummary(FilePart):
    """With ``--repeats``: how cases pass and how much the metrics move between repeats."""

    n: int = Field(description="Repeats per case.")
    k: int = Field(description="A case passes when k of its n repeats pass (--pass-k).")
    pass_rate: float = Field(description="Share of all runs (cases x repeats) that passed.")
    flaky_cases: list[str] = Field(description="Cases with some repeats passed, not all.")
    spread: dict[str, RepeatSpread] = Field(description="Metric -> spread across repeats.")


class GuardCounts(FilePart):
    """Operations the cross-subject guard (R2) turned into ADD, over the records."""

    cross_subject: int = Field(default=0, description="Fact and target of two different subjects.")
    undecided: int = Field(default=0, description="A side's subject could not be told.")


class TokenTotals(FilePart):
    """Tokens of the case records, summed."""

    input: int = Field(default=0, description="Input (prompt) tokens.")
    output: int = Field(default=0, description="Output (completion) tokens.")


class StageTokens(FilePart):
    """Tokens of one stage's model calls (extract, reconcile, judge)."""

    input_tokens: int = Field(default=0, description="Input tokens.")
    output_tokens: int = Field(default=0, description="Output tokens.")


class CallCounts(FilePart):
    """The counters of a run's model client (``llm.CallStats.as_dict``), and what the
    runner adds. Empty for a run that did not finish (only its process knew them)."""

    calls: int = Field(default=0, description="Model calls asked for, cache hits included.")
    cache_hits: int = Field(default=0, description="Calls answered from the answer cache.")
    requests: int = Field(
        default=0, description="Attempts sent to the provider (retries included)."
    )
    retries: int = Field(default=0, description="Attempts repeated after a retryable failure.")
    errors: int = Field(default=0, description="Calls that failed for good.")
    errors_by_kind: dict[str, int] = Field(
        default_factory=dict, description="Failed calls by kind of error."
    )
    input_tokens: int = Field(default=0, description="Input tokens of the calls.")
    output_tokens: int = Field(default=0, description="Output tokens of the calls.")
    tokens_by_stage: dict[str, StageTokens] = Field(
        default_factory=dict, description="Stage -> tokens."
    )
    records_reused: int = Field(
        default=0, description="Case records taken whole from the cache (docs/llm.md)."
    )
    judge_calls: CallCounts | None = Field(
        default=None,
        description="The judge's own client's counters, when it is not the pipeline's.",
    )
    batch: dict[str, Any] | None = Field(
        default=None, description="With --batch: the batch rounds' totals (run/_batch.py)."
    )


class JudgeInfo(FilePart):
    """With ``--matcher judge``: who judged, and how often an answer was unusable."""

    provider: str | None = Field(default=None, description="The judge's provider.")
    model: str | None = Field(
        default=None, description="The judge's model; None: the provider's default."
    )
    variant: str = Field(default="default", description="The judge's prompt variant.")
    unusable: int = Field(default=0, description="Judge answers that could not be used (no match).")


class RateEntry(FilePart):
    """A matcher's precision or recall on the benchmark, with its interval."""

    value: float | None = Field(default=None, description="num / den; None: nothing counted.")
    ci: tuple[float | None, float | None] = Field(default=(None, None), description="95% interval.")
    num: Number = Field(default=0, description="Numerator (pairs).")
    den: Number = Field(default=0, description="Denominator (pairs).")


class MatcherScores(FilePart):
    """A matcher's figures on the benchmark pairs of one language (or all)."""

    pairs: int = Field(default=0, description="Judged pairs.")
    undecided: int = Field(default=0, description="Pairs the matcher gave no verdict on.")
    precision: RateEntry = Field(default_factory=RateEntry, description="Precision.")
    recall: RateEntry = Field(default_factory=RateEntry, description="Recall.")
    confusion: dict[str, int] = Field(default_factory=dict, description="tp, fp, fn, tn.")


class MatcherQuality(FilePart):
    """How far the run's matcher can be trusted (datasets/matcher_pairs/quality.json):
    ``source``, which benchmark source the figures are of, and the scores under ``all``,
    ``en`` and ``zh``."""

    source: str = Field(default="", description="Where the figures were measured.")
    pair_source: str | None = Field(
        default=None,
        description="The benchmark source the figures are of (embedded_run, capable_run); "
        "None: all sources pooled.",
    )
    fits: str | None = Field(
        default=None,
        description="The source that fits the run's model; when pair_source is None it "
        "had too few pairs and the pooled figures were used. None: no model was given.",
    )
    fits_pairs: dict[str, int] | None = Field(
        default=None, description="Language -> the fitting source's benchmark pairs."
    )
    __pydantic_extra__: dict[str, MatcherScores] = Field(init=False)

    def of(self, part: str) -> MatcherScores | None:
        """The scores of ``part`` (all, en, zh), if measured."""
        return (self.model_extra or {}).get(part)


class CorrectedRecall(FilePart):
    """``fact_recall`` corrected for the matcher's own errors (docs/metrics.md)."""

    value: float = Field(description="The corrected recall.")
    ci: tuple[float, float] = Field(description="Its 95% interval.")
    method: str = Field(description="How it was computed, in words.")


class PartialRun(FilePart):
    """The report of a run that did not finish (``hy-eval report``)."""

    cases_done: int = Field(description="Case records finished before the run stopped.")
    cases_planned: int | None = Field(
        default=None, description="Records the run set out to write; None: its suite changed since."
    )


class RunSummary(RunFile):
    """``summary.json`` of a run."""

    suite: str | None = Field(default=None, description="Suite name.")
    system: str | None = Field(
        default=None, description="The memory system under test; absent: this package's own."
    )
    not_measured: list[str] | None = Field(
        default=None, description="Metrics the system under test cannot expose (shown n/m)."
    )
    provider: str | None = Field(default=None, description="Provider of the run's model.")
    model: str | None = Field(default=None, description="The run's model.")
    variant: str | None = Field(default=None, description="Prompt variant.")
    guard: bool | None = Field(default=None, description="The cross-subject guard (R2) was on.")
    dataset_hash: str | None = Field(default=None, description="SHA-256 of the suite's files.")
    matcher: str = Field(
        default="keyword", description="The matcher that paired facts (keyword: a run from before)."
    )
    matcher_quality: MatcherQuality | None = Field(
        default=None,
        description="The matcher's precision and recall on the benchmark, if measured.",
    )
    judge: JudgeInfo | None = Field(default=None, description="With --matcher judge: the judge.")
    cases: int = Field(default=0, description="Cases reported (k of n repeats make one case).")
    passed: int = Field(default=0, description="Cases that passed.")
    metrics: dict[str, MetricEntry] = Field(
        default_factory=dict, description="Metric -> value with its interval (METRICS)."
    )
    breakdown: dict[str, dict[str, BreakdownGroup]] = Field(
        default_factory=dict,
        description="lang, rule and tag -> value -> the group's metrics (a case counts in "
        "each of its rules and tags).",
    )
    confusion: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Gold subject kind -> predicted subject kind -> facts (SUBJECT_KINDS).",
    )
    guard_counts: GuardCounts = Field(
        default_factory=GuardCounts, description="Operations the guard changed."
    )
    calls: CallCounts = Field(default_factory=CallCounts, description="Model call counters.")
    tokens: TokenTotals = Field(default_factory=TokenTotals, description="Tokens of the cases.")
    cost_usd: Number | None = Field(
        default=None, description="Cost by the price table; None when a case's cost is unknown."
    )
    wall_s: float = Field(default=0.0, description="Seconds the cases took (0 for a partial run).")
    failed_cases: list[str] = Field(default_factory=list, description="Ids of failed cases.")
    truncated: dict[str, int] = Field(
        default_factory=dict,
        description="What was cut from answers to the schemas' limits, by kind, and cases: "
        "the cases with any cut.",
    )
    repeats: RepeatSummary | None = Field(default=None, description="With --repeats.")
    fact_recall_corrected: CorrectedRecall | None = Field(
        default=None, description="fact_recall corrected for the matcher's errors, when measured."
    )
    partial: PartialRun | None = Field(default=None, description="Set when the run did not finish.")
    perturbations: dict[str, PerturbationSection] = Field(
        default_factory=dict,
        description="With --perturb: perturbation -> its runs' metrics and consistency.",
    )

    def missing(self, metric: str) -> str:
        """How a metric without a value is shown: ``n/m`` when the system under test
        cannot expose it (not measured), ``n/a`` when no case had anything to count."""
        return "n/m" if metric in (self.not_measured or ()) else "n/a"


def read_summary(run_dir: Path) -> RunSummary | None:
    """``summary.json`` of ``run_dir``; None when there is none, ``RunFolderError`` (one
    line) when it is not a summary."""
    path = run_dir / SUMMARY_NAME
    if not path.is_file():
        return None
    return read_model_file(path, RunSummary, "run summary")


def write_summary(run_dir: Path, summary: RunSummary) -> None:
    """Write ``summary.json`` of ``run_dir`` (redacted, through a rename)."""
    write_json(run_dir / SUMMARY_NAME, summary.to_data())
