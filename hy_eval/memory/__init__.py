"""The memory pipeline under test: prompts, extraction with L0, reconcile with the
cross-subject guard, the SQLite store and ``MemoryClient`` (SPEC sections 4-7)."""

from hy_eval.memory._client import AddResult, MemoryClient
from hy_eval.memory._examples import example_people
from hy_eval.memory._extract import EXTRACTION_SCHEMA, Extraction, Fact, build_profile
from hy_eval.memory._prompts import PromptError, PromptLibrary, RenderedPrompt
from hy_eval.memory._reconcile import (
    RECONCILE_SCHEMA,
    GuardEvent,
    Operation,
    Reconciliation,
    guard,
)
from hy_eval.memory._store import Memory, MemoryStore
from hy_eval.memory._subjects import Speakers, Subject, mentions, same_subject, subject_of

__all__ = [
    "EXTRACTION_SCHEMA",
    "RECONCILE_SCHEMA",
    "AddResult",
    "Extraction",
    "Fact",
    "GuardEvent",
    "Memory",
    "MemoryClient",
    "MemoryStore",
    "Operation",
    "PromptError",
    "PromptLibrary",
    "Reconciliation",
    "RenderedPrompt",
    "Speakers",
    "Subject",
    "build_profile",
    "example_people",
    "guard",
    "mentions",
    "same_subject",
    "subject_of",
]
