"""One case of a run: seed an empty store, run the memory pipeline, score, and return the
case's :class:`~hy_eval.harness.runlog._files.CaseRecord`.

A provider error or an unexpected exception costs this case only (its record says why);
a replay-only cache miss or a stopped model stops the run and is raised.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness.datasets import Case
from hy_eval.harness.runlog import CaseRecord
from hy_eval.harness.scoring import (
    CaseScore,
    Judge,
    Matcher,
    Outcome,
    VerdictMatcher,
    score_case,
    static_matcher,
)
from hy_eval.llm import (
    CacheMiss,
    LLMClient,
    ModelProcessDied,
    PriceTable,
    ProviderError,
    RunStopped,
)
from hy_eval.llm._base import short_text
from hy_eval.memory import AddResult, MemoryClient, MemoryStore, PromptLibrary

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


def case_label(case: Case, repeat: int) -> str:
    """How messages name the case: its id, and the repeat when there are repeats."""
    return case.id if repeat == 0 else f"{case.id} repeat {repeat}"


async def run_case(
    case: Case,
    llm: LLMClient,
    prompts: PromptLibrary,
    prices: PriceTable,
    guard: bool,
    *,
    repeat: int = 0,
    temperature: float = 0.0,
    store: MemoryStore | None = None,
    matcher: str = "strict",
    judge: Judge | None = None,
) -> CaseRecord:
    """One case through an empty in-memory store (``store``, or a new one): seed history
    and existing memories, add the conversation, score. A provider error marks the case
    failed; a replay-only cache miss stops the run."""
    store = MemoryStore() if store is None else store
    outcome = Outcome(existing_ids=seed_store(store, case))
    client = MemoryClient(llm, store, prompts, guard=guard, temperature=temperature)
    started = time.perf_counter()
    fields: dict[str, Any] = _case_fields(case, repeat)
    label = case_label(case, repeat)
    try:
        # The case's messages were normalised once, when the suite was loaded.
        result = await client.add_normalised(
            case.normalised,
            case.user_id,
            label=label,
            repeat=repeat,
            aliases=case.aliases,
        )
    except ProviderError as exc:
        outcome.error = f"{exc.kind}: {exc}"
    except ModelProcessDied as exc:
        exc.case_id = label  # the run's failure; its message names the case it was on
        raise
    except (CacheMiss, RunStopped):  # the run's failures, not this case's
        raise
    except Exception as exc:
        # Anything else (a bug, or an answer no check foresaw) costs this case, never the
        # run: the healthy cases are kept and the reason is in the record.
        outcome.error = f"internal error: {type(exc).__name__}: {short_text(str(exc))}"
    else:
        fields.update(_pipeline_fields(result, store, case, outcome, llm, prices))
    if outcome.error is not None:
        fields.update(status="error", error=outcome.error)
    score = await _score(case, outcome, fields, matcher, judge, label)
    fields["latency_s"] = round(time.perf_counter() - started, 4)
    fields["score"] = score.record()
    return CaseRecord(**fields)


async def _score(
    case: Case,
    outcome: Outcome,
    fields: dict[str, Any],
    matcher: str,
    judge: Judge | None,
    label: str,
) -> CaseScore:
    """The case's score. Matching (the judge's model calls included) is under the same
    rule as the pipeline: an unexpected exception costs this case, never the run."""
    try:
        return score_case(case, outcome, await _matcher(case, outcome, matcher, judge, label))
    except ModelProcessDied as exc:
        exc.case_id = label
        raise
    except (CacheMiss, RunStopped):
        raise
    except Exception as exc:
        outcome.error = (
            f"internal error while matching ({matcher}): "
            f"{type(exc).__name__}: {short_text(str(exc))}"
        )
        fields.update(status="error", error=outcome.error)
        return score_case(case, outcome)


async def _matcher(
    case: Case, outcome: Outcome, name: str, judge: Judge | None, label: str
) -> Matcher:
    """The case's matcher; for ``judge``, with the judge's verdicts on its pairs (asked
    only when the pipeline ran and there are facts on both sides)."""
    if name != "judge":
        return static_matcher(name, case.speakers)
    if judge is None:
        raise ValueError("the judge matcher needs a Judge (_judge.build_judge)")
    golds, texts = case.expect.facts, [f["text"] for f in outcome.facts]
    if outcome.error is not None or not golds or not texts:
        return VerdictMatcher({})
    return await judge.matcher(golds, texts, case.lang, label)


def _case_fields(case: Case, repeat: int) -> dict[str, Any]:
    """The record's fields that the case alone decides: labels, input and gold."""
    return {
        "id": case.id,
        "repeat": repeat,
        "lang": case.lang,
        "rules": case.rules,
        "tags": case.tags,
        "input": {
            "messages": case.messages,
            "system": case.system,
            "history": case.history,
            "existing": [m.model_dump() for m in case.existing],
            **({"aliases": case.aliases} if case.aliases else {}),
        },
        "expect": case.expect.model_dump(),
    }


def _pipeline_fields(
    result: AddResult,
    store: MemoryStore,
    case: Case,
    outcome: Outcome,
    llm: LLMClient,
    prices: PriceTable,
) -> dict[str, Any]:
    """What the pipeline did, into ``outcome`` for scoring and as the record's fields."""
    ext, rec = result.extraction, result.reconciliation
    outcome.facts = result.facts
    outcome.raw_ops = [o.as_dict() for o in rec.raw]
    outcome.applied_ops = [o.as_dict() for o in rec.applied]
    outcome.reconcile_ran = rec.prompt is not None
    outcome.fallback = rec.fallback
    outcome.parse_failed = bool(ext.parse_error or rec.parse_error)
    snap = store.snapshot(case.user_id)
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
        "cost_usd": prices.cost(llm.provider.model, usage),
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
