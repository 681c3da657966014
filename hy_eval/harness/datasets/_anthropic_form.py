"""OpenAI-form messages in Anthropic content-block form (M5), for the ``anthropic``
perturbation: text parts as text blocks, a tool call as a ``tool_use`` block, a tool
message as a user message holding a ``tool_result`` block."""

from __future__ import annotations

import json
from typing import Any

TOOL_BLOCKS = frozenset({"tool_use", "tool_result"})
#: Block types only Anthropic's form has (OpenAI's parts are text, image_url, ...).
ANTHROPIC_BLOCKS = TOOL_BLOCKS | {"thinking", "redacted_thinking", "image", "document"}


def has_blocks(message: Any, kinds: frozenset[str] = TOOL_BLOCKS) -> bool:
    """A message in Anthropic form holding a block of one of ``kinds`` (by default a tool
    call or a tool's result)."""
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in kinds for part in content
    )


def _blocks(content: Any) -> list[dict[str, Any]] | None:
    """OpenAI content as Anthropic text blocks; None for a part with no Anthropic twin."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out = []
    for part in content or []:
        if isinstance(part, str):
            out.append({"type": "text", "text": part})
        elif isinstance(part, dict) and part.get("type") == "text":
            out.append({"type": "text", "text": part["text"]})
        else:
            return None
    return out


def to_anthropic(messages: list[Any]) -> list[dict[str, Any]] | str:
    """The messages in Anthropic form, or why not. A tool call becomes a ``tool_use``
    block, a tool message a user message holding a ``tool_result`` block."""
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m.get("tool_call_id"),
                "content": m.get("content"),
            }
            out.append({"role": "user", "content": [block]})
            continue
        if role not in ("user", "assistant"):
            return f"message {i} has role {role!r}, which Anthropic gives apart"
        blocks = _blocks(m.get("content")) if m.get("content") is not None else []
        if blocks is None:
            return f"message {i} has a content part with no Anthropic block"
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except json.JSONDecodeError:
                return f"message {i}: tool call arguments are not JSON"
            blocks.append({"type": "tool_use", "id": call["id"], "name": fn["name"], "input": args})
        new: dict[str, Any] = {"role": role, "content": blocks}
        if m.get("name") is not None:
            new["name"] = m["name"]
        out.append(new)
    return out
