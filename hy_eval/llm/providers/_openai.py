"""OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, DeepSeek,
Hunyuan, ...) through the official ``openai`` SDK's ``AsyncOpenAI``."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hy_eval._redact import redact, register_secret
from hy_eval.llm.core import (
    Completion,
    ConfigError,
    ProviderError,
    Request,
    Usage,
    sdk_error,
)
from hy_eval.llm.providers._structured import (
    MODES,
    PROBE_REQUEST,
    SCHEMA_IN_PROMPT,
    ModeMemory,
    ProbeFailed,
    key_options,
    probe_modes,
    refusal_hint,
    schema_in_prompt,
    structured_fields,
)

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
#: ``--structured`` values: the modes, and ``auto`` (probe the server once).
STRUCTURED_CHOICES: tuple[str, ...] = (*MODES, "auto")


def to_openai_request(request: Request, model: str, structured: str) -> dict[str, Any]:
    """The chat-completions body for ``request`` in mode ``structured`` (a pure function,
    tested on its own; the modes are described in ``_structured.py``)."""
    messages = [dict(m) for m in request.messages]
    if request.json_schema is not None and structured in SCHEMA_IN_PROMPT:
        messages = schema_in_prompt(request.messages, request.json_schema)
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if request.seed is not None:
        body["seed"] = request.seed
    if request.json_schema is not None:
        name = request.schema_name or "answer"
        body.update(structured_fields(structured, request.json_schema, name))
    return body


def answer_text(message: Mapping[str, Any], structured: str) -> Any:
    """The answer in a completion's ``message``: the forced tool call's arguments in
    ``tools`` mode (a JSON string, or an object from a lax server), else the content."""
    calls = message.get("tool_calls")
    if structured == "tools" and isinstance(calls, list) and calls:
        arguments = calls[0]["function"].get("arguments")
        if isinstance(arguments, dict):
            return json.dumps(arguments, ensure_ascii=False)
        return arguments or ""
    return message.get("content") or ""


def completion_from_body(resp: Any, structured: str, model: str) -> Completion:
    """The ``Completion`` in a chat-completions response body (a dict; also what a batch's
    output line holds). Raises ``ProviderError`` for a body that is not a completion."""
    try:
        choice = resp["choices"][0]
        text = answer_text(choice["message"], structured)
        usage_data = resp.get("usage") or {}
        usage = Usage.read(
            usage_data.get("prompt_tokens"), usage_data.get("completion_tokens"), "openai"
        )
        finish_reason = choice.get("finish_reason")
        model_id = resp.get("model") or model
    except (TypeError, KeyError, IndexError, AttributeError, ValueError):
        # The SDK hands back the raw text when the body is not JSON.
        raise ProviderError(
            "server", "openai: malformed response body (not a completion)"
        ) from None
    if not isinstance(text, str):
        raise ProviderError("server", "openai: malformed response body (content not text)")
    return Completion(text=text, finish_reason=finish_reason, usage=usage, model_id=str(model_id))


class OpenAIProvider:
    """``--provider openai``. Key from ``OPENAI_API_KEY`` (or ``api_key``), base URL from
    ``OPENAI_BASE_URL`` (or ``base_url``). A custom base URL needs no key.

    ``structured`` is one of :data:`STRUCTURED_CHOICES`; by default ``json_schema`` for
    OpenAI itself and ``auto`` for a base URL. ``auto`` is settled by :meth:`settle`
    before the first answer (``build_client`` does it, else the first call)."""

    name = "openai"
    default_concurrency = 8
    interruptible = True

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        structured: str | None = None,
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
        if structured is None:
            structured, chosen_by = ("auto" if self.base_url else "json_schema"), "default"
        else:
            chosen_by = "flag"
        if structured not in STRUCTURED_CHOICES:
            raise ConfigError(
                f"unknown structured-output mode {structured!r} "
                f"(expected one of {', '.join(STRUCTURED_CHOICES)})"
            )
        self.structured = structured
        #: Which mode is used and how it was chosen (flag, default, probe, remembered);
        #: written to the run's manifest.
        self.structured_choice: dict[str, Any] = {"mode": structured, "chosen_by": chosen_by}
        self.key_options: dict[str, Any] = key_options(structured)
        self._key = key
        self._openai = openai
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=self.base_url or None, max_retries=0
        )
        self._settle_lock: asyncio.Lock | None = None

    # -- auto: settling the mode ---------------------------------------------------------

    def _use(self, mode: str, chosen_by: str, memory: ModeMemory | None) -> None:
        self.structured = mode
        # Updated in place: an LLMClient holds this dict as its key options.
        self.key_options.clear()
        self.key_options.update(key_options(mode))
        self.structured_choice = {"mode": mode, "chosen_by": chosen_by}
        if memory is not None:
            self.structured_choice["remembered_in"] = str(memory.path)

    def settle(
        self, memory: ModeMemory | None = None, cache_mode: str = "read-write", timeout: float = 30
    ) -> None:
        """Turn ``auto`` into a mode: the one remembered for this base URL and model, else
        the one :func:`probe_modes` finds (then remembered). ``refresh`` probes again;
        ``replay-only`` never probes (nothing remembered: ``json_schema``). Raises
        ``ConfigError`` when no mode can be found."""
        if self.structured != "auto":
            return
        where = redact(self.base_url) or "api.openai.com"
        if memory is not None and cache_mode != "refresh":
            mode = memory.get(self.base_url, self.model)
            if mode is not None:
                self._use(mode, "remembered", memory)
                return
        if cache_mode == "replay-only":
            # No server is asked in replay-only mode: the first mode's answers are looked
            # up (a cassette recorded in another mode needs --structured MODE).
            self._use(MODES[0], "replay-only default", memory)
            return
        try:
            result = probe_modes(self._probe_sender(timeout), where)
        except ProbeFailed as exc:
            raise ConfigError(str(exc)) from None
        if memory is not None:
            memory.put(self.base_url, self.model, result)
        self._use(result.mode, "probe", memory)
        self.structured_choice["passed_over"] = result.passed_over

    def _probe_sender(self, timeout: float) -> Any:
        """``send(mode)`` for :func:`probe_modes`: the probe request, in ``mode``, through
        the SDK's synchronous client (the probe runs before any event loop needs it)."""
        openai = self._openai

        def send(mode: str) -> str:
            client = openai.OpenAI(api_key=self._key, base_url=self.base_url or None, max_retries=0)
            try:
                body = to_openai_request(PROBE_REQUEST, self.model, mode)
                resp = client.post(
                    "/chat/completions", cast_to=dict, body=body, options={"timeout": timeout}
                )
            except (openai.APIError, ValueError) as exc:
                raise sdk_error("openai", openai, exc) from None
            finally:
                client.close()
            try:
                return str(answer_text(resp["choices"][0]["message"], mode))
            except (TypeError, KeyError, IndexError, AttributeError):
                return ""

        return send

    async def prepare(self, timeout: float, cache_mode: str = "read-write") -> None:
        """Settle ``auto`` (without a memory) when no one did before the first call."""
        if self.structured != "auto":
            return
        if self._settle_lock is None:
            self._settle_lock = asyncio.Lock()
        async with self._settle_lock:
            if self.structured == "auto":
                await asyncio.to_thread(self.settle, None, cache_mode, timeout)

    # -- calls -----------------------------------------------------------------------------

    async def complete(self, request: Request, timeout: float) -> Completion:
        openai = self._openai
        await self.prepare(timeout)
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
            raise self._with_hint(sdk_error("openai", openai, exc), request) from None
        return completion_from_body(resp, self.structured, self.model)

    def _with_hint(self, error: ProviderError, request: Request) -> ProviderError:
        """``error`` with the fix a user can apply, when it is one the server will keep
        giving (a refused mode, a refused key): the early stop's line names it."""
        mode = self.structured if request.json_schema is not None else "text"
        where = redact(self.base_url) or "api.openai.com"
        error.hint = refusal_hint(error, mode, where, self.structured_choice["chosen_by"])
        return error

    async def aclose(self) -> None:
        await self._client.close()


def mode_memory(cache_path: str | Path | None) -> ModeMemory | None:
    """Where ``auto`` remembers modes for the answer cache at ``cache_path`` (none for an
    in-memory cache or no cache)."""
    if cache_path is None or str(cache_path) == ":memory:":
        return None
    return ModeMemory(cache_path)
