"""What a newcomer needs beside the numbers, in the terminal, report.md and report.html
alike: what each metric means, that the embedded model's figures are a floor, and that a
run which covered one language of the suite cannot speak for the other.

The meanings are short forms of docs/metrics.md's table (tests/harness/report check that
every metric has one); the notes are read from the summary alone, so a report made again
from a run folder says the same."""

from __future__ import annotations

from hy_eval.harness.runlog import RunSummary
from hy_eval.harness.scoring import EMBEDDED_MODEL

#: Each metric in one line: what is counted over what (docs/metrics.md has the rules).
MEANINGS: dict[str, str] = {
    "case_pass": "cases whose every check holds",
    "fact_recall": "gold facts the matcher found among the predicted facts",
    "attribution_accuracy": "found gold facts whose predicted subject is the gold subject",
    "owner_accuracy": "found gold facts stored with the gold owner (user or agent)",
    "profile_name_accuracy": "cases whose L0 profile name is the expected one",
    "operation_accuracy": "expected reconcile operations met after the guard",
    "misattribution_rate": "'must not appear' checks violated: a fact given to a wrong subject",
    "merge_violation_rate_raw": "cross-subject UPDATE/DELETE/SUPERSEDE the model asked for",
    "merge_violation_rate_applied": "the same after the cross-subject guard (R2)",
    "untouched_violation_rate": "memories that had to stay untouched but were changed",
    "profile_leak_rate": "strings that must stay out of the L0 profile but were found in it",
    "noncanonical_subject_rate": "facts about the user that name the user, not 'The user'",
    "echoed_subject_rate": "facts about a person of the prompt's examples the case never names",
    "parse_failure_rate": "cases with a model answer that could not be used",
    "fallback_rate": "reconcile steps that fell back to adding every fact (R3)",
    "error_rate": "cases that failed with a provider error after their retries",
}

#: Languages a suite may hold, by the code a case's ``lang`` carries.
LANGUAGES = {"en": "English", "zh": "Chinese"}


def floor_note(summary: RunSummary) -> str | None:
    """The embedded model's caveat, for a run of it; ``None`` for any other model."""
    if summary.model != EMBEDDED_MODEL:
        return None
    return (
        f"These figures come from the embedded {EMBEDDED_MODEL} model: a floor that shows "
        "the pipeline runs offline, not a reference for a prompt decision; a capable model "
        "scores far higher (README.md)."
    )


def coverage_note(summary: RunSummary) -> str | None:
    """A run whose cases are all of one language says so: its figures cannot speak for
    the other (``--limit`` takes the first cases in file order, English first)."""
    langs = sorted(summary.breakdown.get("lang", {}))
    if len(langs) != 1 or summary.cases == 0:
        return None
    name = LANGUAGES.get(langs[0], langs[0])
    return (
        f"All {summary.cases} cases are {name} (lang={langs[0]}): these figures say nothing "
        "of the suite's other language; --sample N spreads N cases over every file."
    )


def reading_notes(summary: RunSummary) -> list[str]:
    """The notes that apply to this run, in the order they are shown."""
    return [n for n in (coverage_note(summary), floor_note(summary)) if n]
