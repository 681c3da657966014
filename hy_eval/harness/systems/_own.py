"""This package's own pipeline (``hy_eval.memory``) as a system under test: the first
:class:`~hy_eval.harness.systems._base.MemorySystem`, and the one every figure before the
seam was measured on (its records are byte for byte what they were)."""

from __future__ import annotations

import hashlib
from typing import Any

from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness.datasets import Case
from hy_eval.harness.scoring import Outcome
from hy_eval.harness.systems._base import SystemRun
from hy_eval.llm import LLMClient, PriceTable
from hy_eval.memory import AddResult, MemoryClient, MemoryStore, PromptLibrary, example_people

#: The most characters of a raw answer kept in a case record: far above what
#: ``max_tokens`` lets a model write, far below what fills a disk.
RAW_ANSWER_LIMIT = 32_000


def seed_store(store: MemoryStore, case: Case) -> dict[str, int]:
    """Put the case's history and existing memories in ``store`` (empty); return each
    existing memory's database id by its case id (``m1``)."""
    existing_ids: dict[str, int] = {}
    with store.transaction():
        if case.history:
            store.add_l1_raw(case.user_id, render_conversation(normalise_messages(case.history)))
        for mem in case.existing:
            existing_ids[mem.id] = store.insert(case.user_id, mem.text, mem.owner, "seed")
    return existing_ids


class OwnPipeline:
    """``hy_eval.memory``'s extract, reconcile and guard on an in-memory store, through
    the run's LLM client. One store is reused (emptied after each case)."""

    name = "hy_eval"

    def __init__(
        self,
        llm: LLMClient,
        prompts: PromptLibrary,
        prices: PriceTable,
        guard: bool,
        *,
        temperature: float = 0.0,
        store: MemoryStore | None = None,
        people: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.llm, self.prompts, self.prices = llm, prompts, prices
        self.guard, self.temperature = guard, temperature
        self.store = MemoryStore() if store is None else store
        #: The people of the prompt's worked examples, per language (read once): a run's
        #: workers share one dict, since reading them renders the templates (13 ms).
        self._people: dict[str, tuple[str, ...]] = {} if people is None else people

    async def add_case(self, case: Case, *, label: str, repeat: int) -> SystemRun:
        outcome = Outcome(existing_ids=seed_store(self.store, case))
        client = MemoryClient(
            self.llm, self.store, self.prompts, guard=self.guard, temperature=self.temperature
        )
        run = SystemRun(outcome)
        try:
            # The case's messages were normalised once, when the suite was loaded.
            result = await client.add_normalised(
                case.normalised, case.user_id, label=label, repeat=repeat, aliases=case.aliases
            )
            run.fields = self._fields(result, case, outcome)
        finally:
            self.store.clear()
        return run

    async def close(self) -> None:
        """Nothing to stop: the store lives in this process."""

    def _fields(self, result: AddResult, case: Case, outcome: Outcome) -> dict[str, Any]:
        """What the pipeline did, into ``outcome`` for scoring and as the record's fields."""
        ext, rec = result.extraction, result.reconciliation
        outcome.facts = result.facts
        # The examples of the extraction prompt this case was given: its variant, in the
        # language the pipeline chose for the conversation (echoed_subject_rate).
        if result.lang not in self._people:
            self._people[result.lang] = example_people(self.prompts, result.lang)
        outcome.example_people = self._people[result.lang]
        outcome.raw_ops = [o.as_dict() for o in rec.raw]
        outcome.applied_ops = [o.as_dict() for o in rec.applied]
        outcome.reconcile_ran = rec.prompt is not None
        outcome.fallback = rec.fallback
        outcome.parse_failed = bool(ext.parse_error or rec.parse_error)
        snap = self.store.snapshot(case.user_id)
        outcome.memories_after = {m["id"]: m for m in snap["memories"]}
        outcome.profile = snap["profile"]
        truncated = dict(result.truncated)
        stages: dict[str, Any] = {
            "extract": _stage(ext.prompt, ext.completion, ext.parse_error, truncated),
        }
        if rec.prompt is not None:
            stages["reconcile"] = _stage(rec.prompt, rec.completion, rec.parse_error, truncated)
            stages["reconcile"]["short_ids"] = rec.short_ids
        usage = result.usage
        return {
            "status": "ok",
            "error": None,
            "rendered": result.rendered,
            "stages": stages,
            "facts": result.facts,
            "basic_info": ext.basic_info,
            "profile_issues": ext.profile_issues,
            "operations": {"raw": outcome.raw_ops, "applied": outcome.applied_ops},
            "guard_events": [g.as_dict() for g in rec.guard_events],
            # Operations the guard added because a subject could not be told (R2).
            "guard_undecided": rec.undecided,
            "fallback": rec.fallback,
            "store_after": snap,
            "existing_ids": outcome.existing_ids,
            "warnings": result.warnings,
            "truncated": truncated,
            "round_trips": result.round_trips,
            "tokens": {"input": usage.input_tokens, "output": usage.output_tokens},
            "cost_usd": self.prices.cost(self.llm.provider.model, usage),
        }


def _stage(
    prompt: Any, completion: Any, parse_error: str | None, truncated: dict[str, int]
) -> dict[str, Any]:
    """A stage's part of the record; a raw answer over ``RAW_ANSWER_LIMIT`` characters is
    cut, its full length kept as ``raw_chars`` and counted in ``truncated``."""
    out: dict[str, Any] = {
        "template": prompt.template,
        "prompt_sha256": hashlib.sha256((prompt.system + "\0" + prompt.user).encode()).hexdigest(),
        "system": prompt.system,
        "user": prompt.user,
        "parse_error": parse_error,
    }
    if completion is not None:
        raw = completion.text
        if len(raw) > RAW_ANSWER_LIMIT:
            out["raw_chars"] = len(raw)
            raw = raw[:RAW_ANSWER_LIMIT] + "…"
            truncated["raw_answers_cut"] = truncated.get("raw_answers_cut", 0) + 1
        out.update(
            raw=raw,
            finish_reason=completion.finish_reason,
            cached=completion.cached,
            retries=completion.retries,
            latency_s=round(completion.latency_s, 4),
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
        )
    return out
