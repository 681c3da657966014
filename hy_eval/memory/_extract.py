"""Extraction: one model call that yields the facts and the L0 basic profile (A1-A4, P1-P3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hy_eval.conversation import ChatMessage
from hy_eval.llm import Completion, LLMClient, Request, Usage
from hy_eval.memory._prompts import PromptLibrary, RenderedPrompt

PROFILE_FIELDS = ("name", "age", "location", "occupation", "employer")

#: The answer schema named ``memory_extraction``. Bounds keep a small model from looping.
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 120},
                    "owner": {"type": "string", "enum": ["user", "agent"]},
                },
                "required": ["text", "owner"],
                "additionalProperties": False,
            },
        },
        "basic_info": {
            "type": "object",
            "properties": {k: {"type": "string", "maxLength": 80} for k in PROFILE_FIELDS},
            "additionalProperties": False,
        },
    },
    "required": ["facts", "basic_info"],
    "additionalProperties": False,
}


_FACTS_SCHEMA = EXTRACTION_SCHEMA["properties"]["facts"]
#: The schema's limits, enforced on every answer before it reaches the store:
#: a provider without constrained decoding can ignore them.
MAX_FACTS: int = _FACTS_SCHEMA["maxItems"]
MAX_FACT_CHARS: int = _FACTS_SCHEMA["items"]["properties"]["text"]["maxLength"]
MAX_PROFILE_CHARS: int = EXTRACTION_SCHEMA["properties"]["basic_info"]["properties"]["name"][
    "maxLength"
]
CUT_MARK = "…"


def cut_text(text: str, limit: int) -> str:
    """``text`` when it fits in ``limit`` characters, else its start ending in ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + CUT_MARK


class FactAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    owner: Literal["user", "agent"]


class BasicInfoAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    age: str | int | None = None
    location: str | None = None
    occupation: str | None = None
    employer: str | None = None


class ExtractionAnswer(BaseModel):
    """The model's answer, validated: what the schema promises."""

    model_config = ConfigDict(extra="forbid")
    facts: list[FactAnswer]
    basic_info: BasicInfoAnswer = Field(default_factory=BasicInfoAnswer)


@dataclass(frozen=True)
class Fact:
    text: str
    owner: str


@dataclass
class Extraction:
    facts: list[Fact]
    basic_info: dict[str, str]
    prompt: RenderedPrompt
    completion: Completion | None
    parse_error: str | None = None
    error: str | None = None
    #: L0 problems: a value the model gave that belongs to someone else, and what was done.
    profile_issues: list[str] = field(default_factory=list)
    #: What was cut to the schema's limits: ``facts_dropped``, ``fact_texts_cut``,
    #: ``profile_values_cut`` (only counts above zero).
    truncated: dict[str, int] = field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        return self.completion.usage if self.completion else Usage()


def validate_extraction(
    parsed: dict[str, Any] | None,
) -> tuple[ExtractionAnswer | None, str | None]:
    if parsed is None:
        return None, "no JSON object"
    try:
        return ExtractionAnswer.model_validate(parsed), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"wrong schema: {where}: {first['msg']}"


def bound_answer(answer: ExtractionAnswer) -> tuple[ExtractionAnswer, dict[str, int]]:
    """The answer cut to the schema's limits (at most ``MAX_FACTS`` facts of
    ``MAX_FACT_CHARS`` characters, profile values of ``MAX_PROFILE_CHARS``) and what was
    cut. An answer within the limits comes back unchanged."""
    counts = {
        "facts_dropped": max(0, len(answer.facts) - MAX_FACTS),
        "fact_texts_cut": 0,
        "profile_values_cut": 0,
    }
    facts = []
    for fact in answer.facts[:MAX_FACTS]:
        text = cut_text(fact.text, MAX_FACT_CHARS)
        counts["fact_texts_cut"] += text != fact.text
        facts.append(fact if text == fact.text else fact.model_copy(update={"text": text}))
    info: dict[str, Any] = {}
    for key in PROFILE_FIELDS:
        value = getattr(answer.basic_info, key)
        if value is not None and len(str(value)) > MAX_PROFILE_CHARS:
            info[key] = cut_text(str(value), MAX_PROFILE_CHARS)
            counts["profile_values_cut"] += 1
    truncated = {k: n for k, n in counts.items() if n}
    if not truncated:
        return answer, {}
    basic = answer.basic_info.model_copy(update=info) if info else answer.basic_info
    return answer.model_copy(update={"facts": facts, "basic_info": basic}), truncated


def build_profile(
    answer: BasicInfoAnswer | None,
    user_name: str | None,
    other_names: tuple[str, ...],
) -> tuple[dict[str, str], list[str]]:
    """The L0 fields to write, and the problems seen (P1-P3).

    The name of ``role=user`` is trusted input (P2): it is written even when the model
    omits it, and it wins over a different name from the model (recorded as an issue).
    A model-given name that is another speaker's is dropped and recorded.
    """
    issues: list[str] = []
    data: dict[str, str] = {}
    if answer is not None:
        for key in PROFILE_FIELDS:
            value = getattr(answer, key)
            if value is None or str(value).strip() == "":
                continue
            data[key] = str(value).strip()
    model_name = data.get("name")
    if model_name is not None and model_name in other_names:
        issues.append(f"basic_info.name {model_name!r} is another speaker's name; dropped")
        del data["name"]
    if user_name:
        if "name" in data and data["name"] != user_name:
            issues.append(
                f"basic_info.name {data['name']!r} differs from the user's name {user_name!r};"
                " the user's name is kept"
            )
        data["name"] = user_name
    return data, issues


async def extract(
    llm: LLMClient,
    prompts: PromptLibrary,
    *,
    conversation: str,
    history: str,
    lang: str,
    user_name: str | None,
    named_speakers: list[str],
    label: str = "",
    max_tokens: int = 768,
    temperature: float = 0.0,
    repeat: int = 0,
) -> Extraction:
    """Run the extraction stage. Provider errors propagate (nothing is stored then)."""
    prompt = prompts.render(
        "extract",
        lang,
        {
            "conversation": conversation,
            "history": history,
            "user_name": user_name,
            "named_speakers": named_speakers,
            "lang": lang,
        },
    )
    request = Request.of(
        prompt.messages(),
        max_tokens=max_tokens,
        temperature=temperature,
        repeat=repeat,
        json_schema=EXTRACTION_SCHEMA,
        schema_name="memory_extraction",
    )
    completion = await llm.complete(request, label=f"{label} extract".strip(), stage="extract")
    answer, problem = validate_extraction(completion.parsed)
    parse_error = completion.parse_error or problem
    truncated: dict[str, int] = {}
    if answer is not None:
        answer, truncated = bound_answer(answer)
    facts = [Fact(f.text.strip(), f.owner) for f in answer.facts] if answer else []
    profile, issues = build_profile(
        answer.basic_info if answer else None, user_name, tuple(named_speakers)
    )
    return Extraction(facts, profile, prompt, completion, parse_error, None, issues, truncated)


def history_text(messages: list[ChatMessage], limit: int) -> str:
    from hy_eval.conversation import history_context, render_conversation

    if not messages:
        return ""
    return render_conversation(history_context(messages, limit))
