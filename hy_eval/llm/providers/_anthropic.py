"""Anthropic's Messages API through the official ``anthropic`` SDK's ``AsyncAnthropic``.

Structured output goes through a forced tool call: the schema is the tool's
``input_schema`` and ``tool_choice`` names it, so the answer arrives as the tool's
``input`` object, already parsed by the API. (Prefill with ``{`` is the other route; a
forced tool is more reliable because the API validates the shape of a tool input.)
"""

from __future__ import annotations

import json
import os
from typing import Any

from hy_eval._redact import register_secret
from hy_eval.llm.core import (
    Completion,
    ConfigError,
    ProviderError,
    Request,
    Usage,
    sdk_error,
)

DEFAULT_ANTHROPIC_MODEL = "claude-3-5-haiku-latest"


def to_anthropic_request(request: Request, model: str) -> dict[str, Any]:
    """Keyword arguments of ``messages.create`` for ``request``: system messages go apart,
    temperature and any extra body fields ride in ``extra_body`` (a pure function)."""
    system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": [
            {"role": m["role"], "content": m["content"]}
            for m in request.messages
            if m["role"] != "system"
        ],
    }
    if system:
        body["system"] = system
    # Sent in the body as the API defines it; newer SDKs no longer take it as an argument.
    body["extra_body"] = {"temperature": request.temperature, **(request.extra_body or {})}
    if request.json_schema is not None:
        name = request.schema_name or "answer"
        body["tools"] = [
            {
                "name": name,
                "description": "Record the answer in this exact structure.",
                "input_schema": dict(request.json_schema),
            }
        ]
        body["tool_choice"] = {"type": "tool", "name": name}
    return body


class AnthropicProvider:
    """``--provider anthropic``. Key from ``ANTHROPIC_API_KEY``; base URL from
    ``ANTHROPIC_BASE_URL`` or ``base_url``. Anthropic has no seed parameter."""

    name = "anthropic"
    default_concurrency = 8
    interruptible = True

    def __init__(
        self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None
    ) -> None:
        import anthropic

        self.model = model or DEFAULT_ANTHROPIC_MODEL
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or ""
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError("the anthropic provider needs an API key: set ANTHROPIC_API_KEY")
        register_secret(key)  # redacted wherever an error body echoes it
        self.key_options: dict[str, Any] = {"structured": "tool"}
        self._anthropic = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=self.base_url or None, max_retries=0
        )

    async def complete(self, request: Request, timeout: float) -> Completion:
        anthropic = self._anthropic
        body = to_anthropic_request(request, self.model)
        try:
            resp = await self._client.messages.create(**body, timeout=timeout)
        except (anthropic.APIError, ValueError) as exc:
            raise sdk_error("anthropic", anthropic, exc) from None
        if isinstance(resp, str) or not hasattr(resp, "content"):
            raise ProviderError("server", "anthropic: malformed response body (not a message)")
        try:
            return self._completion(resp)
        except (TypeError, AttributeError, ValueError):
            # The SDK builds its objects without validating them: ``content: null`` or a
            # block without a type arrives as is.
            raise ProviderError(
                "server", "anthropic: malformed response body (not a message)"
            ) from None

    def _completion(self, resp: Any) -> Completion:
        texts: list[str] = []
        parsed: dict[str, Any] | None = None
        for block in resp.content:
            if block.type == "tool_use" and parsed is None:
                parsed = dict(block.input) if isinstance(block.input, dict) else None
            elif block.type == "text":
                if not isinstance(block.text, str):
                    raise TypeError("text block without text")
                texts.append(block.text)
        # A forced tool's input arrives as an object; plain text is parsed by LLMClient.
        text = json.dumps(parsed, ensure_ascii=False) if parsed is not None else "".join(texts)
        return Completion(
            text=text,
            finish_reason=resp.stop_reason,
            usage=Usage.read(resp.usage.input_tokens, resp.usage.output_tokens, "anthropic"),
            model_id=str(resp.model or self.model),
            parsed=parsed,
        )

    async def aclose(self) -> None:
        await self._client.close()
