"""The ``expect`` part of a case and its existing memories (docs/datasets.md): gold facts,
absent checks, the profile, untouched memories and expected reconcile operations.

Keyword items are strings or any-of groups; ``_keywords`` matches them. Problems are
raised as ``ValueError`` so ``_schema`` reports them as ``file:line: field: message``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from hy_eval.harness.datasets._keywords import KeywordItem
from hy_eval.memory import Subject
from hy_eval.memory._extract import MAX_FACTS

#: What an ``expect.operations`` entry may ask of an existing memory.
EXPECTED_OPS = ("UPDATE", "DELETE", "SUPERSEDE", "NONE")


def _check_ops(value: object) -> object:
    ops = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        raise ValueError("give an operation or a non-empty list of them")
    for op in ops:
        if op not in EXPECTED_OPS:
            raise ValueError(f"{op!r} is not one of {', '.join(EXPECTED_OPS)}")
    if "NONE" in ops and len(ops) > 1:
        raise ValueError("NONE cannot be listed with other operations")
    return value


#: One operation or a non-empty list of accepted ones.
ExpectedOps = Annotated[str | list[str], BeforeValidator(_check_ops)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoldFact(_Strict):
    subject: str = Field(description='"user", "assistant" or the name of a named speaker')
    owner: Literal["user", "agent"]
    text: str | None = Field(default=None, description="a reference wording, for reports only")
    keywords: list[KeywordItem] = Field(
        min_length=1, description="every item must occur; a list item is any-of"
    )


class AbsentCheck(_Strict):
    """Violated by a predicted fact with this subject that contains every keyword and
    none of the ``without`` items."""

    subject: str
    keywords: list[KeywordItem] = Field(min_length=1)
    without: list[KeywordItem] = Field(default_factory=list)


class ProfileExpect(_Strict):
    name: str | None = None
    absent: list[str] = Field(default_factory=list)


class ExistingMemory(_Strict):
    id: str
    text: str = Field(min_length=1)
    owner: Literal["user", "agent"] = "user"


class Expect(_Strict):
    facts: list[GoldFact] = Field(default_factory=list)
    absent: list[AbsentCheck] = Field(default_factory=list)
    profile: ProfileExpect | None = None
    untouched: list[str] = Field(default_factory=list)
    #: Existing memory id -> the operation(s) (after the guard) that must target it;
    #: NONE: no changing operation targets it.
    operations: dict[str, ExpectedOps] = Field(default_factory=dict)
    #: False when the case does not measure a cross-subject merge: its untouched memories
    #: are then not checked by ``datasets validate --merges``.
    measures_merge: StrictBool = True

    def expected_ops(self, memory_id: str) -> tuple[str, ...]:
        """The accepted operations for one memory id, as a tuple."""
        ops = self.operations[memory_id]
        return (ops,) if isinstance(ops, str) else tuple(ops)


def check_expect_ids(expect: Expect, memory_ids: list[str]) -> None:
    """``untouched`` and ``operations`` name existing memories, never the same one twice;
    an operation that changes a memory needs a gold fact to do it; and no more gold facts
    than one extraction answer can hold (a perfect answer could not pass)."""
    if len(expect.facts) > MAX_FACTS:
        raise ValueError(
            f"expect.facts: {len(expect.facts)} gold facts, but an extraction answer "
            f"holds at most {MAX_FACTS}"
        )
    missing = [u for u in expect.untouched if u not in memory_ids]
    if missing:
        raise ValueError(f"expect.untouched: unknown memory id(s) {', '.join(missing)}")
    missing = [u for u in expect.operations if u not in memory_ids]
    if missing:
        raise ValueError(f"expect.operations: unknown memory id(s) {', '.join(missing)}")
    both = [u for u in expect.operations if u in expect.untouched]
    if both:
        raise ValueError(
            f"expect.operations: {', '.join(both)} also in expect.untouched (use one of them)"
        )
    changing = [m for m in expect.operations if expect.expected_ops(m) != ("NONE",)]
    if changing and not expect.facts:
        raise ValueError(
            f"expect.operations: {', '.join(changing)} must change but the case has no gold fact"
        )


def gold_subject(subject: str) -> Subject:
    """A gold fact's subject (``user``, ``assistant`` or a name) as the pipeline's
    ``Subject``."""
    if subject == "user":
        return Subject("user")
    if subject == "assistant":
        return Subject("assistant")
    return Subject("named", subject)


def subject_right(gold: str, predicted: Subject) -> bool:
    """The user named by their own name counts as the user here (it is counted apart,
    by ``noncanonical_subject_rate``)."""
    return gold_subject(gold).key == predicted.key
