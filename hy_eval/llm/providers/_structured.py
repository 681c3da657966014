"""How an OpenAI-compatible server is asked for JSON that follows a schema.

Servers differ, so the openai provider has modes:

- ``json_schema``: ``response_format`` ``{"type": "json_schema", "json_schema": {...}}``
  (OpenAI, vLLM, Ollama 0.5+, llama.cpp's ``llama-server``).
- ``json_object_schema``: the schema inside ``{"type": "json_object", "schema": ...}``,
  as llama-cpp-python's server takes it (it refuses ``json_schema``).
- ``tools``: one function whose parameters are the schema, forced by ``tool_choice``;
  the answer is that call's arguments.
- ``json_object``: ``{"type": "json_object"}`` with the schema described in the prompt
  (DeepSeek's JSON Output).
- ``text``: no ``response_format``; the schema is described in the prompt.

``auto`` finds the first mode a server takes with one small probe per base URL and model
(:func:`probe_modes`), remembered in the cache directory (:class:`ModeMemory`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hy_eval._files import replace_file
from hy_eval._redact import redact
from hy_eval.llm.core import ProviderError, Request, parse_json_answer

StructuredMode = Literal["json_schema", "json_object_schema", "tools", "json_object", "text"]
#: The order ``auto`` tries: constrained decoding first, the prompt alone last.
MODES: tuple[StructuredMode, ...] = (
    "json_schema",
    "json_object_schema",
    "tools",
    "json_object",
    "text",
)
#: Modes in which the server itself holds the answer to the schema.
CONSTRAINED: frozenset[str] = frozenset({"json_schema", "json_object_schema", "tools"})
#: Modes whose request carries the schema in the last user message.
SCHEMA_IN_PROMPT: frozenset[str] = frozenset({"json_object", "text"})
#: What each mode sends, for messages that name what a server refused.
WHAT_IS_SENT: dict[str, str] = {
    "json_schema": "response_format json_schema",
    "json_object_schema": "a schema inside response_format json_object",
    "tools": "a forced tool call (tools, tool_choice)",
    "json_object": "response_format json_object",
    "text": "a plain request",
}
#: Words in an error message that tie a refusal to the mode's own request fields.
_MODE_WORDS: dict[str, tuple[str, ...]] = {
    "json_schema": ("response_format", "json_schema"),
    "json_object_schema": ("response_format", "json_object", "schema"),
    "tools": ("tool", "function"),
    "json_object": ("response_format", "json_object"),
    "text": (),
}

SCHEMA_INSTRUCTION = (
    "Answer with one JSON object, and nothing else, that follows this JSON Schema:\n"
)


def schema_in_prompt(
    messages: tuple[Mapping[str, str], ...], schema: Mapping[str, Any]
) -> list[dict[str, str]]:
    """``messages`` with the schema described at the end of the last user message (the
    system prompt is left alone, so a server's cached prefix of it still serves)."""
    out = [dict(m) for m in messages]
    text = "\n\n" + SCHEMA_INSTRUCTION + json.dumps(schema, ensure_ascii=False)
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = str(m.get("content", "")) + text
            return out
    return [*out, {"role": "user", "content": text.strip()}]


def structured_fields(mode: str, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The body fields that ask for ``schema`` in ``mode`` (a pure function)."""
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(schema), "strict": False},
            }
        }
    if mode == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": dict(schema)}}
    if mode == "tools":
        function = {
            "name": name,
            "description": "Record the answer in this exact structure.",
            "parameters": dict(schema),
        }
        return {
            "tools": [{"type": "function", "function": function}],
            "tool_choice": {"type": "function", "function": {"name": name}},
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def key_options(mode: str) -> dict[str, Any]:
    """The answer-changing options of ``mode`` for the cache key. ``json_schema`` keeps
    the key it had before the other modes existed, so its cached answers still apply; the
    prompt-described modes say so, because their requests carry more text than the
    messages in the key."""
    options: dict[str, Any] = {"structured": mode}
    if mode in SCHEMA_IN_PROMPT:
        options["schema_in_prompt"] = True
    return options


# ---- refusals that will not go away --------------------------------------------------


def next_mode(mode: str) -> str:
    """The mode ``auto`` would try after ``mode``."""
    i = MODES.index(mode) if mode in MODES else -1
    return MODES[min(i + 1, len(MODES) - 1)]


def refusal_hint(error: ProviderError, mode: str, where: str, chosen_by: str) -> str | None:
    """The fix for an error a server will keep giving, or ``None`` when there is none
    to name: a refused mode names the next one to try, a refused key names the key."""
    if error.retryable:
        return None
    if error.kind == "auth":
        return f"the server at {where} refuses the API key; check --api-key or OPENAI_API_KEY"
    text = str(error).lower()
    if mode != "text" and any(w in text for w in _MODE_WORDS.get(mode, ())):
        remembered = " (the mode auto chose and remembered)" if chosen_by == "remembered" else ""
        return (
            f"the server at {where} rejects {WHAT_IS_SENT[mode]}{remembered}; "
            f"try --structured {next_mode(mode)}, or --structured auto to probe it"
        )
    if error.status == 404:
        return f"the server at {where} knows no such path or model; check --base-url and --model"
    return None


# ---- the probe --------------------------------------------------------------------------

#: A schema no model meets by chance: one key whose only value is a made-up word.
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"probe": {"type": "string", "enum": ["hy_eval_ok"]}},
    "required": ["probe"],
}
PROBE_REQUEST = Request.of(
    [{"role": "user", "content": "Say hello."}],
    max_tokens=48,
    temperature=0.0,
    seed=0,
    json_schema=PROBE_SCHEMA,
    schema_name="probe",
)


@dataclass
class ProbeResult:
    """The mode ``auto`` chose and why each earlier mode was passed over."""

    mode: str
    passed_over: dict[str, str] = field(default_factory=dict)


class ProbeFailed(Exception):
    """The probe could not decide (the server is down, refuses the key, takes no mode)."""


def probe_modes(
    send: Callable[[str], str],
    where: str,
    *,
    transient_retries: int = 2,
    pause: float = 1.0,
) -> ProbeResult:
    """The first mode in :data:`MODES` that the server at ``where`` takes.

    ``send(mode)`` makes the probe request in that mode and returns the answer's text, or
    raises ``ProviderError``. A constrained mode counts as taken only when the answer
    follows :data:`PROBE_SCHEMA` (a server that ignores the schema is passed over); a
    prompt-described mode counts when the server answers at all. A refusal moves on to
    the next mode; a transient error is tried again; a refused key ends the probe.
    """
    passed: dict[str, str] = {}
    for mode in MODES:
        attempt = 0
        while True:
            try:
                text = send(mode)
            except ProviderError as exc:
                if exc.retryable and attempt < transient_retries:
                    attempt += 1
                    time.sleep(pause)
                    continue
                if exc.retryable or exc.kind == "auth":
                    raise ProbeFailed(
                        f"cannot find how the server at {where} takes structured output: {exc}"
                        "; give --structured MODE to skip the probe"
                    ) from None
                passed[mode] = str(exc)
                break
            if mode not in CONSTRAINED:
                return ProbeResult(mode, passed)
            parsed, _problem = parse_json_answer(text)
            if parsed is not None and parsed.get("probe") == "hy_eval_ok":
                return ProbeResult(mode, passed)
            passed[mode] = f"answered, but not in the schema: {text[:80]!r}"
            break
    last = passed.get("text", "")
    raise ProbeFailed(
        f"the server at {where} answered no structured-output mode "
        f"(json_schema: {passed.get('json_schema', '')}; text: {last}); "
        "check --base-url and --model"
    )


class ModeMemory:
    """The mode ``auto`` found per base URL and model, in ``structured_modes.json`` beside
    the answer cache. Delete an entry (or the file) to probe that server again."""

    FILE_NAME = "structured_modes.json"

    def __init__(self, cache_path: str | Path) -> None:
        self.path = Path(cache_path).parent / self.FILE_NAME

    @staticmethod
    def entry_key(base_url: str, model: str) -> str:
        return f"{redact(base_url)} {model}"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}  # missing or unreadable: probe again, write it anew
        return data if isinstance(data, dict) else {}

    def get(self, base_url: str, model: str) -> str | None:
        entry = self._read().get(self.entry_key(base_url, model))
        mode = entry.get("mode") if isinstance(entry, dict) else None
        return mode if mode in MODES else None

    def put(self, base_url: str, model: str, result: ProbeResult) -> None:
        """Record ``result`` (one atomic replace; two runs probing at once write the same)."""
        data = self._read()
        data[self.entry_key(base_url, model)] = {
            "mode": result.mode,
            "passed_over": result.passed_over,
            "probed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A new temporary file per writer (runs in threads or processes probing at once).
        replace_file(self.path, redact(json.dumps(data, ensure_ascii=False, indent=1)) + "\n")
