"""The ``score`` of a case record (rule E3): every metric's numerator and denominator,
the verdict, the facts as the scorer read them and every check, as ``score_case``
(``scoring/_score.py``) wrote them. docs/metrics.md defines the metrics and checks."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool, ValidationError

from hy_eval.harness.runlog._jsonfile import FilePart, Number


class ScoreFact(FilePart):
    """One extracted fact as the scorer read it (``score.facts``)."""

    text: str = Field(description="The fact's text, as extracted.")
    owner: str = Field(description="Its owner, as extracted: user or agent.")
    subject: str = Field(
        description="The subject read back from the text (A5, A8): user, assistant, "
        "named:<name>, other or unknown."
    )
    by_name: bool = Field(
        default=False,
        description="The user named by their own name, not as 'the user' "
        "(counted by noncanonical_subject_rate).",
    )
    echoed: str | None = Field(
        default=None,
        description="The person of the prompt's worked examples this fact is about, who is "
        "named nowhere in the conversation or history (counted by echoed_subject_rate); "
        "absent otherwise.",
    )


class FactMatch(FilePart):
    """What a ``fact`` check looked at: one gold fact and the predicted fact the matcher
    paired with it, if any (:meth:`ScoreCheck.fact_match` reads it)."""

    gold_subject: str = Field(description="The gold fact's subject (user, assistant, a name).")
    gold_owner: str = Field(description="The gold fact's owner.")
    keywords: list[Any] = Field(default_factory=list, description="The gold fact's keywords.")
    matched: int | None = Field(
        default=None, description="Index of the predicted fact paired with it; None: no match."
    )
    also: list[int] | None = Field(
        default=None,
        description="strict: further predicted facts the gold fact is stated across (a "
        "fact split in two); subject_ok and owner_ok hold only when they hold for each.",
    )
    text: str | None = Field(default=None, description="The paired fact's text.")
    predicted_subject: str | None = Field(
        default=None, description="The paired fact's subject key."
    )
    subject_ok: bool | None = Field(default=None, description="The paired fact's subject is right.")
    owner: str | None = Field(default=None, description="The paired fact's owner.")
    owner_ok: bool | None = Field(default=None, description="The paired fact's owner is right.")
    match: dict[str, Any] | None = Field(
        default=None,
        description="What the matcher adds: fuzzy's similarity, the judge's unusable "
        "answers (judge_unusable: predicted index -> problem), ...; absent for keyword.",
    )

    @property
    def judge_unusable(self) -> int:
        """Judge answers about this gold fact's pairs that could not be used."""
        return len((self.match or {}).get("judge_unusable") or {})


class ScoreCheck(FilePart):
    """One check of a case (``score.checks``); the case passes when every check does."""

    check: str = Field(
        description="The kind of check: fact, absent, merge, untouched, operations, "
        "profile_name, profile_absent, parse (only when failed) or error (only when failed)."
    )
    ok: StrictBool = Field(description="The check holds.")
    detail: Any = Field(
        default=None,
        description="What the check looked at; its form is the kind's: fact a FactMatch, "
        "absent the subject, keywords and facts found, merge the violating operations, "
        "untouched the changed memory ids, operations one row per expected operation, "
        "profile_name the name read, profile_absent the leaked values, parse and error a "
        "sentence.",
    )

    def fact_match(self) -> FactMatch | None:
        """The detail of a ``fact`` check, typed; None for another kind, or for a detail
        that is not a gold fact's pairing (a hand-edited record: the verdict still counts)."""
        if self.check != "fact" or not isinstance(self.detail, dict):
            return None
        try:
            return FactMatch.model_validate(self.detail)
        except ValidationError:
            return None


class ScoreRecord(FilePart):
    """``score`` of a case record. An error record's score has the error as its one
    check; a record written without a score reads as an empty one (not passed)."""

    counts: dict[str, tuple[Number, Number]] = Field(
        default_factory=dict,
        description="Metric -> [numerator, denominator] of this case (METRICS, all of them).",
    )
    passed: StrictBool = Field(default=False, description="Every check of the case holds.")
    facts: list[ScoreFact] = Field(
        default_factory=list, description="The extracted facts with their subjects read back."
    )
    checks: list[ScoreCheck] = Field(
        default_factory=list, description="Every check, in the order the scorer made them."
    )
    confusion: list[tuple[str, str]] = Field(
        default_factory=list,
        description="Per gold fact: (gold subject kind, predicted subject kind or missing).",
    )
    not_measured: list[str] | None = Field(
        default=None,
        description="Metrics the system under test cannot expose (scored [0, 0]); "
        "absent for this package's own pipeline.",
    )

    def failing(self) -> list[str]:
        """The kinds of the checks that fail, sorted, each once."""
        return sorted({c.check for c in self.checks if not c.ok})

    def judge_unusable(self) -> int:
        """Judge answers that could not be used, over the case's fact checks."""
        total = 0
        for check in self.checks:
            match = check.fact_match()
            if match is not None:
                total += match.judge_unusable
        return total
