"""Message normalisation: OpenAI-style and Anthropic-style input to one ``ChatMessage`` list.

Rules M1-M7 of the spec. The caller fixes the perspective through ``role`` (M6): nothing
here guesses who the user is from names.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hy_eval.conversation._lookalike import (
    ROLE_WORDS,
    TURN_MARKER_RE,
    lookalike_letters,
    speaker_key,
)

Role = Literal["system", "user", "assistant", "tool"]
InputFormat = Literal["auto", "openai", "anthropic"]

ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
#: Labels that rendering gives to roles; a speaker may not take one of them as a name,
#: or ``[user]`` in L1_RAW would no longer say who the current user is.
RESERVED_NAMES: frozenset[str] = frozenset(ROLES)
#: A UTF-16 surrogate code point, which JSON's ``\\ud800`` escape can produce alone.
LONE_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")

_ANTHROPIC_ONLY_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image"}
)
_OPENAI_ONLY_PARTS = frozenset({"image_url", "input_audio", "refusal", "file"})


class MessageError(ValueError):
    """A conversation that cannot be accepted (M7). ``index`` is the message's position."""

    def __init__(self, index: int | None, problem: str) -> None:
        self.index = index
        self.problem = problem
        where = f"message {index}: " if index is not None else ""
        super().__init__(f"{where}{problem}")


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation after normalisation.

    ``name`` is the speaker's name for ``user`` and ``assistant`` (M2, M3, M5) and the
    tool's name for ``tool`` (M4). ``tool_call_id`` links a tool result to its call.
    """

    role: Role
    content: str
    name: str | None = None
    tool_call_id: str | None = None

    @property
    def is_named_human(self) -> bool:
        """``role=assistant`` with a name is another real person, never the AI (M2, A4)."""
        return self.role == "assistant" and self.name is not None

    @property
    def is_ai_assistant(self) -> bool:
        return self.role == "assistant" and self.name is None


def normalise_messages(
    messages: object,
    *,
    system: object = None,
    format: InputFormat = "auto",
) -> list[ChatMessage]:
    """Turn OpenAI- or Anthropic-style messages into ``ChatMessage`` objects.

    The format is detected per message unless ``format`` forces one. ``system`` is the
    Anthropic-style system prompt given apart (a string or a list of text blocks); it
    becomes a leading ``system`` message. Raises ``MessageError`` naming the message
    index for anything malformed (M7).
    """
    if format not in ("auto", "openai", "anthropic"):
        raise MessageError(None, f"unknown input format {format!r}")
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise MessageError(None, f"conversation must be a list of messages, got {_kind(messages)}")
    if len(messages) == 0:
        raise MessageError(None, "empty conversation")
    out: list[ChatMessage] = []
    if system is not None:
        text = _system_text(system)
        _check_text(None, text, "system")
        if text:
            out.append(ChatMessage(role="system", content=text))
    tool_names: dict[str, str] = {}
    #: The input index of each message of ``out`` after the system prompt.
    indices: list[int] = []
    for index, raw in enumerate(messages):
        if not isinstance(raw, Mapping):
            raise MessageError(index, f"a message must be an object, got {_kind(raw)}")
        fmt = format if format != "auto" else _detect_format(raw)
        made = (_from_anthropic if fmt == "anthropic" else _from_openai)(index, raw, tool_names)
        for m in made:
            _check_text(index, m.content, "content")
        out.extend(made)
        indices.extend([index] * len(made))
    _check_speaker_names(out[len(out) - len(indices) :], indices)
    return out


def _check_text(index: int | None, text: str, where: str) -> None:
    """Refuse lone UTF-16 surrogates (``"\\ud800"`` in JSON): they cannot be written as
    UTF-8, so the cache key, the store and every record would fail on them."""
    found = LONE_SURROGATE_RE.search(text)
    if found:
        raise MessageError(
            index,
            f"{where} holds a lone surrogate {found.group()!r} at character {found.start()}"
            " (not valid Unicode text)",
        )


def _fold(name: str) -> str:
    """A name as compared across speakers: NFKC (full-width letters) and case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


def _check_speaker_names(messages: list[ChatMessage], indices: list[int]) -> None:
    """A named human (``role=assistant`` with a name) may not carry a name of the current
    user: rendered as ``[Tim]: ...`` beside ``The user's name is Tim`` it would speak as
    the user while being scored as somebody else (M6). Nor may a speaker's name
    look like another speaker's without being it (``Tіm`` with a Cyrillic ``і`` beside
    ``Tim``; ``【Tim】``; ``speaker_key``): a reader could not tell the two apart."""
    user_names = {_fold(m.name): m.name for m in messages if m.role == "user" and m.name}
    #: Skeleton -> the first name seen with it and whose it is.
    seen: dict[str, tuple[str, str]] = {}
    for m in messages:
        if m.role == "user" and m.name:
            seen.setdefault(speaker_key(m.name), (m.name, "the current user's name"))
    for m, index in zip(messages, indices, strict=True):
        if not (m.is_named_human and m.name):
            continue
        if _fold(m.name) in user_names:
            raise MessageError(
                index,
                f"name {m.name!r} is the current user's name "
                f"({user_names[_fold(m.name)]!r}); another speaker needs another name",
            )
        other, whose = seen.setdefault(speaker_key(m.name), (m.name, "another speaker's name"))
        if other != m.name:
            letters = "; ".join(lookalike_letters(m.name) or lookalike_letters(other))
            raise MessageError(
                index,
                f"name {m.name!r} looks like {whose} {other!r}"
                + (f" (look-alike letters: {letters})" if letters else "")
                + "; another speaker needs a name that reads differently",
            )


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _system_text(system: object) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        parts = []
        for block in system:
            if not (isinstance(block, Mapping) and block.get("type") == "text"):
                raise MessageError(None, "system: only text blocks are accepted")
            parts.append(_require_str(None, block.get("text"), "system text block 'text'"))
        return "\n".join(parts)
    raise MessageError(
        None, f"system must be a string or a list of text blocks, got {_kind(system)}"
    )


def _detect_format(raw: Mapping[str, Any]) -> Literal["openai", "anthropic"]:
    if raw.get("role") == "tool" or "tool_calls" in raw or "tool_call_id" in raw:
        return "openai"
    content = raw.get("content")
    if isinstance(content, list):
        types = {b.get("type") for b in content if isinstance(b, Mapping)}
        if types & _ANTHROPIC_ONLY_BLOCKS:
            return "anthropic"
        if types & _OPENAI_ONLY_PARTS:
            return "openai"
    # Plain strings and lists of text blocks read the same in both formats.
    return "openai"


def _require_str(index: int | None, value: object, what: str) -> str:
    if not isinstance(value, str):
        raise MessageError(index, f"{what} must be a string, got {_kind(value)}")
    return value


def _clean_name(index: int, raw: Mapping[str, Any], role: str) -> str | None:
    if "name" not in raw or raw["name"] is None:
        return None
    name = raw["name"]
    if not isinstance(name, str):
        raise MessageError(index, f"name must be a string, got {_kind(name)}")
    stripped = name.strip()
    if not stripped:
        raise MessageError(index, "name is empty")
    # Full-width brackets count: NFKC makes them brackets, and a model reads them as such.
    folded = unicodedata.normalize("NFKC", stripped)
    if any(ch in folded for ch in "[]\n\r\t") or not stripped.isprintable():
        raise MessageError(index, f"name {name!r} contains a bracket or control character")
    if role == "tool":
        return stripped
    # A look-alike of a role label (``ｕｓｅｒ``, ``uѕer`` with a Cyrillic ѕ), one in
    # brackets or before a colon (``【user】``, ``(user)``, ``User:``) or in Chinese
    # (``用户``, ``【助手】``) reads as one.
    key = speaker_key(stripped)
    if key in ROLE_WORDS:
        reads = f" (reads as {key!r})" if key != stripped else ""
        raise MessageError(index, f"name {name!r} is reserved for a role label{reads}")
    # A chat template's turn marker (``<|im_start|>``) would start a turn of its own.
    if TURN_MARKER_RE.search(folded):
        raise MessageError(index, f"name {name!r} holds a chat-template turn marker")
    return stripped


def _check_role(index: int, raw: Mapping[str, Any], allowed: Sequence[str]) -> str:
    if "role" not in raw:
        raise MessageError(index, "missing role")
    role = raw["role"]
    if not isinstance(role, str):
        raise MessageError(index, f"role must be a string, got {_kind(role)}")
    if role == "developer" and "system" in allowed:
        return "system"  # OpenAI's newer name for the system role
    if role not in allowed:
        raise MessageError(index, f"unknown role {role!r} (expected one of {', '.join(allowed)})")
    return role


def _format_tool_call(name: str, arguments: object) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"(calls tool {name} with {args})"


# --- OpenAI ---------------------------------------------------------------------------


def _from_openai(
    index: int, raw: Mapping[str, Any], tool_names: dict[str, str]
) -> list[ChatMessage]:
    role = _check_role(index, raw, ROLES)
    name = _clean_name(index, raw, role)
    content = raw.get("content")
    if content is None:
        if role == "assistant" and raw.get("tool_calls"):
            text = ""
        else:
            raise MessageError(index, "missing content")
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = _openai_parts(index, content)
    else:
        raise MessageError(
            index, f"content must be a string or a list of parts, got {_kind(content)}"
        )

    tool_call_id: str | None = None
    if role == "assistant" and raw.get("tool_calls") is not None:
        calls = raw["tool_calls"]
        if not isinstance(calls, list):
            raise MessageError(index, f"tool_calls must be a list, got {_kind(calls)}")
        lines = [text] if text else []
        for call in calls:
            fn = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(fn, Mapping):
                raise MessageError(index, "tool_calls entry without a 'function' object")
            fn_name = _require_str(index, fn.get("name"), "tool call function name")
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                tool_names[call["id"]] = fn_name
            lines.append(_format_tool_call(fn_name, fn.get("arguments", "")))
        text = "\n".join(lines)
    if role == "tool":
        tcid = raw.get("tool_call_id")
        if tcid is not None:
            tool_call_id = _require_str(index, tcid, "tool_call_id")
        if name is None and tool_call_id is not None:
            name = tool_names.get(tool_call_id)
    return [ChatMessage(role=role, content=text, name=name, tool_call_id=tool_call_id)]  # type: ignore[arg-type]


def _openai_parts(index: int, parts: list[Any]) -> str:
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, Mapping):
            raise MessageError(index, f"content part must be an object, got {_kind(part)}")
        kind = part.get("type")
        if kind == "text":
            texts.append(_require_str(index, part.get("text"), "text part 'text'"))
        elif kind == "refusal":
            texts.append(_require_str(index, part.get("refusal"), "refusal part 'refusal'"))
        elif kind in ("image_url", "input_audio", "file"):
            texts.append(f"[{kind}]")
        else:
            raise MessageError(index, f"unknown content part type {kind!r}")
    return "\n".join(texts)


# --- Anthropic ------------------------------------------------------------------------


def _from_anthropic(
    index: int, raw: Mapping[str, Any], tool_names: dict[str, str]
) -> list[ChatMessage]:
    role = _check_role(index, raw, ("user", "assistant"))
    name = _clean_name(index, raw, role)
    content = raw.get("content")
    if isinstance(content, str):
        return [ChatMessage(role=role, content=content, name=name)]  # type: ignore[arg-type]
    if not isinstance(content, list):
        if content is None:
            raise MessageError(index, "missing content")
        raise MessageError(
            index, f"content must be a string or a list of blocks, got {_kind(content)}"
        )
    out: list[ChatMessage] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            out.append(ChatMessage(role=role, content="\n".join(texts), name=name))  # type: ignore[arg-type]
            texts.clear()

    for block in content:
        if not isinstance(block, Mapping):
            raise MessageError(index, f"content block must be an object, got {_kind(block)}")
        kind = block.get("type")
        if kind == "text":
            texts.append(_require_str(index, block.get("text"), "text block 'text'"))
        elif kind == "tool_use":
            tool = _require_str(index, block.get("name"), "tool_use block 'name'")
            if isinstance(block.get("id"), str):
                tool_names[block["id"]] = tool
            texts.append(_format_tool_call(tool, block.get("input", {})))
        elif kind == "tool_result":
            flush()
            tool_id = block.get("tool_use_id")
            tcid = _require_str(index, tool_id, "tool_result block 'tool_use_id'")
            out.append(
                ChatMessage(
                    role="tool",
                    content=_tool_result_text(index, block.get("content", "")),
                    name=tool_names.get(tcid),
                    tool_call_id=tcid,
                )
            )
        elif kind in ("image", "document"):
            texts.append(f"[{kind}]")
        elif kind in ("thinking", "redacted_thinking"):
            continue  # a model's private reasoning is not part of the conversation
        else:
            raise MessageError(index, f"unknown Anthropic content block type {kind!r}")
    flush()
    if not out:
        out.append(ChatMessage(role=role, content="", name=name))  # type: ignore[arg-type]
    return out


def _tool_result_text(index: int, content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                texts.append(_require_str(index, block.get("text"), "tool_result text 'text'"))
            elif isinstance(block, Mapping) and block.get("type") in ("image", "document"):
                texts.append(f"[{block['type']}]")
            else:
                raise MessageError(index, "tool_result content must be text blocks")
        return "\n".join(texts)
    raise MessageError(
        index, f"tool_result content must be a string or a list, got {_kind(content)}"
    )
