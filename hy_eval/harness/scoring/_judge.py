"""The ``judge`` matcher's model calls: an LLM decides, for each (gold,
predicted) pair of a case, whether the two state the same fact.

One call per pair, through the LLM layer like every pipeline call (the same cache,
retries and counters; stage ``judge``), with the prompt ``judge.<lang>.j2`` of a prompt
variant and a JSON-schema answer ``{"same": bool, "reason": str}``. A pair's call does
not depend on the other facts of the case, so the cache answers it again whenever the
same prediction meets the same gold fact.

An answer that cannot be used (not JSON, ``same`` not a boolean, a provider error after
the retries) counts as "not the same" and is reported: on the fact's check
(``match.judge_unusable``) and summed in ``summary.json`` (``judge.unusable``). A
replay-only cache miss or a stopped model stops the run, as in the pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from hy_eval.harness.datasets import GoldFact
from hy_eval.harness.scoring._matching import Verdict, VerdictMatcher, gold_text
from hy_eval.llm import LLMClient, ModelOptions, ProviderError, Request
from hy_eval.llm.core import short_text
from hy_eval.memory import PromptLibrary
from hy_eval.memory._prompts import JUDGE_STAGE

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "same": {"type": "boolean"},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["same", "reason"],
    "additionalProperties": False,
}
#: Room for a one-sentence reason; a longer answer is cut and then unusable.
JUDGE_MAX_TOKENS = 200
#: The most characters of a judge's reason kept in a record: the schema's bound, which a
#: server that ignores the schema (or a cached answer from one) may exceed by megabytes.
REASON_LIMIT = JUDGE_SCHEMA["properties"]["reason"]["maxLength"]


def read_verdict(parsed: Any, parse_error: str | None) -> Verdict:
    """The verdict in a parsed answer, or an unusable one saying why."""
    if parse_error:
        return Verdict(False, "", f"unparsable answer: {short_text(parse_error)}")
    if not isinstance(parsed, dict) or not isinstance(parsed.get("same"), bool):
        return Verdict(False, "", 'no boolean "same" in the answer')
    reason = parsed.get("reason")
    reason = reason[:REASON_LIMIT] if isinstance(reason, str) else ""
    return Verdict(parsed["same"], reason)


class Judge:
    """Asks ``llm`` about pairs of facts with ``prompts``' judge templates."""

    def __init__(self, llm: LLMClient, prompts: PromptLibrary) -> None:
        self.llm = llm
        self.prompts = prompts

    def identity(self) -> dict[str, Any]:
        """What decides the judge's answers: its model and its prompt files (for the
        result cache's record identity and the summary)."""
        p = self.llm.provider
        return {
            "provider": p.name,
            "model": p.model,
            "base_url": p.base_url or None,
            "variant": self.prompts.variant,
            "prompt_hashes": self.prompts.file_hashes((JUDGE_STAGE,)),
        }

    async def same(self, predicted: str, gold: str, lang: str, label: str = "") -> Verdict:
        """The judge's verdict on one pair (an unusable one on a provider error)."""
        prompt = self.prompts.render(
            JUDGE_STAGE, lang, {"predicted": predicted, "gold": gold, "lang": lang}
        )
        request = Request.of(
            prompt.messages(),
            max_tokens=JUDGE_MAX_TOKENS,
            temperature=0.0,
            json_schema=JUDGE_SCHEMA,
            schema_name="fact_judgement",
        )
        try:
            completion = await self.llm.complete(
                request, label=f"{label} judge".strip(), stage=JUDGE_STAGE
            )
        except ProviderError as exc:
            return Verdict(False, "", f"provider error: {exc.kind}: {short_text(str(exc))}")
        return read_verdict(completion.parsed, completion.parse_error)

    async def verdicts(
        self, golds: Sequence[GoldFact], texts: Sequence[str], lang: str, label: str = ""
    ) -> dict[tuple[int, int], Verdict]:
        """Every (gold, predicted) pair's verdict, asked concurrently."""
        pairs = [(g, p) for g in range(len(golds)) for p in range(len(texts))]
        answers = await asyncio.gather(
            *(self.same(texts[p], gold_text(golds[g]), lang, label) for g, p in pairs)
        )
        return dict(zip(pairs, answers, strict=True))

    async def matcher(
        self, golds: Sequence[GoldFact], texts: Sequence[str], lang: str, label: str = ""
    ) -> VerdictMatcher:
        return VerdictMatcher(await self.verdicts(golds, texts, lang, label))


@dataclass(frozen=True)
class JudgeSettings:
    """``--judge-provider``, ``--judge-model``, ``--judge-base-url``, ``--judge-variant``
    (``None``: the pipeline's model)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    variant: str = "default"


def judge_options(pipeline: ModelOptions, settings: JudgeSettings) -> ModelOptions:
    """The judge's model options: the pipeline's, with the judge's provider, model and
    base URL where given. Another provider starts from its own defaults (no model, URL,
    key or structured mode of the pipeline's provider carries over)."""
    same = settings.provider in (None, pipeline.provider)
    return replace(
        pipeline,
        provider=settings.provider or pipeline.provider,
        model=settings.model if settings.model is not None else (pipeline.model if same else None),
        base_url=settings.base_url
        if settings.base_url is not None
        else (pipeline.base_url if same else None),
        api_key=pipeline.api_key if same else None,
        structured=pipeline.structured if same else None,
    )


def build_judge(pipeline: ModelOptions, llm: LLMClient, settings: JudgeSettings) -> Judge:
    """The judge: the pipeline's client ``llm`` when the judge's model is the pipeline's,
    else a client of its own (same cache file, retries and timeout). Raises
    ``ConfigError`` or ``PromptError``."""
    prompts = PromptLibrary(settings.variant)
    options = judge_options(pipeline, settings)
    client = llm if options == pipeline else options.client()
    return Judge(client, prompts)
