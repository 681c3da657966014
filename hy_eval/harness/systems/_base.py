"""What a memory system under test is to the run: something that takes one case and
says what it stored (docs/systems.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from hy_eval.harness.datasets import Case
from hy_eval.harness.scoring import Outcome

#: The systems ``--system`` takes; ``hy_eval`` is this package's own pipeline.
SYSTEM_NAMES = ("hy_eval", "hy_memory", "mem0")

#: The embedded model's context (tokens) a system needs when ``--context`` is not given:
#: mem0's extraction prompt is longer than SmolLM2's 8,192 trained positions, and every
#: case fails with the default (docs/systems.md).
LOCAL_CONTEXT = {"mem0": 16384}


@dataclass
class SystemRun:
    """One case as a system ran it: ``outcome`` for the scorer, ``fields`` for the case
    record (``status``, ``facts``, ``store_after``, ... as ``CaseRecord`` names them)."""

    outcome: Outcome
    fields: dict[str, Any] = field(default_factory=dict)


class MemorySystem(Protocol):
    """A memory system a run scores. ``add_case`` seeds an empty store with the case's
    history and existing memories, adds its conversation and reads back what the system
    holds. A model or system failure that costs only this case raises ``CaseFailed``
    (or the LLM layer's ``ProviderError``); a replay-only cache miss raises ``CacheMiss``."""

    name: str

    async def add_case(self, case: Case, *, label: str, repeat: int) -> SystemRun: ...

    async def close(self) -> None: ...


class CaseFailed(Exception):
    """The system failed this case (its message is one line); the run goes on."""
