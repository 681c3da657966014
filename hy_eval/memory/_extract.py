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
    facts = [Fact(f.text.strip(), f.owner) for f in answer.facts] if answer else []
    profile, issues = build_profile(
        answer.basic_info if answer else None, user_name, tuple(named_speakers)
    )
    return Extraction(facts, profile, prompt, completion, parse_error, None, issues)


def history_text(messages: list[ChatMessage], limit: int) -> str:
    from hy_eval.conversation import history_context, render_conversation

    if not messages:
        return ""
    return render_conversation(history_context(messages, limit))
