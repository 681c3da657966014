"""OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, DeepSeek,
Hunyuan, ...) through the official ``openai`` SDK's ``AsyncOpenAI``."""

from __future__ import annotations

import os
from typing import Any, Literal

from hy_eval._redact import register_secret
from hy_eval.llm._base import (
    Completion,
    ProviderError,
    Request,
    Usage,
    sdk_error,
)

StructuredMode = Literal["json_schema", "json_object", "text"]
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


class ConfigError(ValueError):
    """A provider cannot be set up as asked (missing key, bad option)."""


def to_openai_request(request: Request, model: str, structured: StructuredMode) -> dict[str, Any]:
    """The chat-completions body for ``request`` (a pure function, tested on its own)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in request.messages],
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if request.seed is not None:
        body["seed"] = request.seed
    if request.json_schema is not None:
        if structured == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name or "answer",
                    "schema": dict(request.json_schema),
                    "strict": False,
                },
            }
        elif structured == "json_object":
            body["response_format"] = {"type": "json_object"}
    return body


class OpenAIProvider:
    """``--provider openai``. Key from ``OPENAI_API_KEY`` (or ``api_key``), base URL from
    ``OPENAI_BASE_URL`` (or ``base_url``). A custom base URL needs no key."""

    name = "openai"
    default_concurrency = 8

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        structured: StructuredMode = "json_schema",
    ) -> None:
        import openai

        self.model = model or DEFAULT_OPENAI_MODEL
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or ""
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if not self.base_url:
                raise ConfigError(
                    "the openai provider needs an API key: set OPENAI_API_KEY "
                    "(or pass --base-url for a server that needs none)"
                )
            key = "unused"
        register_secret(key)  # redacted wherever an error body echoes it
        if structured not in ("json_schema", "json_object", "text"):
            raise ConfigError(f"unknown structured-output mode {structured!r}")
        self.structured: StructuredMode = structured
        self.key_options = {"structured": structured}
        self._openai = openai
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=self.base_url or None, max_retries=0
        )

    async def complete(self, request: Request, timeout: float) -> Completion:
        openai = self._openai
        body = to_openai_request(request, self.model, self.structured)
        if request.extra_body:
            body.update(request.extra_body)
        try:
            # The SDK's own POST: the same wire, retries off, error classes and parsing as
            # ``chat.completions.create``, without re-walking our already plain-JSON body
            # through its typed-dict transform (about 3 ms a call for a prompt with a JSON
            # schema) and with the answer as plain JSON rather than a pydantic model tree
            # built for the four fields read here (benchmarks/README.md).
            resp = await self._client.post(
                "/chat/completions",
                cast_to=dict,
                body=body,
                options={"timeout": timeout},
            )
        except (openai.APIError, ValueError) as exc:
            raise sdk_error("openai", openai, exc) from None
        try:
            choice = resp["choices"][0]
            text = choice["message"].get("content") or ""
            usage_data = resp.get("usage") or {}
            usage = Usage(
                int(usage_data.get("prompt_tokens") or 0),
                int(usage_data.get("completion_tokens") or 0),
            )
            finish_reason = choice.get("finish_reason")
            model_id = resp.get("model") or self.model
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            # The SDK hands back the raw text when the body is not JSON.
            raise ProviderError(
                "server", "openai: malformed response body (not a completion)"
            ) from None
        if not isinstance(text, str):
            raise ProviderError("server", "openai: malformed response body (content not text)")
        return Completion(
            text=text,
            finish_reason=finish_reason,
            usage=usage,
            model_id=str(model_id),
        )

    async def aclose(self) -> None:
        await self._client.close()
