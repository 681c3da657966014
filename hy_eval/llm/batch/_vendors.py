"""The two vendors' batch endpoints behind one small interface.

OpenAI Batch: the requests go up as a JSONL file (``purpose=batch``) of
``{custom_id, method, url, body}`` lines, a batch is made from the file, polled by id,
and its answers come back in an output file (and the failed ones in an error file).
Anthropic Message Batches: the requests go in the create call's body as
``{custom_id, params}``, the batch is polled by id, and the answers are read from its
``results_url``. Both are reached through the provider's own SDK client (its key, base
URL and error classes); every batched request is the body the provider would send
interactively, and its ``custom_id`` is the answer cache key.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from hy_eval.llm.core import (
    Completion,
    ConfigError,
    Provider,
    ProviderError,
    Request,
    Usage,
    sdk_error,
)

MIB = 1024 * 1024

#: What a batch id looks like at both vendors (``batch_…``, ``msgbatch_…``). An id goes
#: into a URL path, so one with a slash or dots (``../files/…``) would reach another
#: endpoint with the key: refused wherever an id comes from (the vendor, ``batches.json``).
BATCH_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def batch_id_problem(batch_id: Any) -> str | None:
    """Why ``batch_id`` cannot be a batch id, or ``None``."""
    if isinstance(batch_id, str) and BATCH_ID_RE.fullmatch(batch_id):
        return None
    return f"{json.dumps(batch_id)[:60]} is not a batch id (letters, digits, _ and -)"


def checked_id(batch_id: Any, vendor: str) -> str:
    """``batch_id`` as the vendor gave it, or ``ProviderError`` for one that is none."""
    problem = batch_id_problem(batch_id)
    if problem:
        raise ProviderError("bad_answer", f"{vendor}: the batch endpoint answered with {problem}")
    return str(batch_id)


def same_model(answered: str, asked: str) -> bool:
    """Whether an answer naming model ``answered`` is an answer of ``asked``: the same
    name, or a dated version of it (``gpt-4o`` answered as ``gpt-4o-2024-08-06``; an alias
    ending in ``-latest`` answered as any version of its stem). An empty name says
    nothing and is taken."""
    if not answered or answered == asked:
        return True
    stem = asked.removesuffix("-latest")
    return answered.startswith(stem + "-")


@dataclass(frozen=True)
class BatchItem:
    """One request to batch: its cache key (the batch's ``custom_id``), the key's fields
    and their canonical JSON (stored with the answer), and the request itself."""

    key: str
    fields: dict[str, Any]
    canonical: str
    request: Request


@dataclass(frozen=True)
class RemoteState:
    """A batch as its vendor reports it."""

    #: The vendor's own word (``in_progress``, ``finalizing``, ``ended``, ...).
    state: str
    ended: bool
    total: int
    succeeded: int
    failed: int
    expired: int


@dataclass(frozen=True)
class ItemResult:
    """One batched request's outcome: ``succeeded`` (with its completion), ``failed``,
    ``expired`` or ``canceled`` (with the reason)."""

    key: str
    outcome: str
    completion: Completion | None = None
    reason: str = ""


class Vendor(Protocol):
    name: str
    #: Most requests and bytes in one batch.
    max_requests: int
    max_bytes: int

    def line(self, item: BatchItem) -> bytes: ...

    async def submit(self, lines: list[bytes]) -> str: ...

    async def state(self, batch_id: str) -> RemoteState: ...

    def results(self, batch_id: str) -> AsyncIterator[ItemResult]: ...

    async def cancel(self, batch_id: str) -> None: ...


def vendor_for(provider: Provider) -> Vendor:
    """The batch endpoints of ``provider``'s vendor; ``ConfigError`` for a provider
    without any (the local model)."""
    if provider.name == "openai":
        return OpenAIBatches(provider)
    if provider.name == "anthropic":
        return AnthropicBatches(provider)
    raise ConfigError(f"--batch needs the openai or anthropic provider (not {provider.name})")


class OpenAIBatches:
    """OpenAI's Files and Batches endpoints (and any server that copies them)."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 200 * MIB

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._client = provider._client
        self._sdk = provider._openai

    def line(self, item: BatchItem) -> bytes:
        return openai_line(self._provider, item)

    async def submit(self, lines: list[bytes]) -> str:
        try:
            uploaded = await self._client.files.create(
                file=("requests.jsonl", b"".join(lines), "application/jsonl"), purpose="batch"
            )
            batch = await self._client.post(
                "/batches",
                cast_to=dict,
                body={
                    "input_file_id": uploaded.id,
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                },
            )
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("openai", self._sdk, exc) from None
        return checked_id(batch.get("id") if isinstance(batch, dict) else None, "openai")

    async def _get(self, batch_id: str) -> dict[str, Any]:
        try:
            return dict(await self._client.get(f"/batches/{batch_id}", cast_to=dict))
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("openai", self._sdk, exc) from None

    async def state(self, batch_id: str) -> RemoteState:
        batch = await self._get(batch_id)
        counts = batch.get("request_counts") or {}
        status = str(batch.get("status"))
        return RemoteState(
            status,
            status in ("completed", "expired", "cancelled", "failed"),
            int(counts.get("total") or 0),
            int(counts.get("completed") or 0),
            int(counts.get("failed") or 0),
            0,  # OpenAI counts expired requests among the failed ones
        )

    async def results(self, batch_id: str) -> AsyncIterator[ItemResult]:
        batch = await self._get(batch_id)
        for name in ("output_file_id", "error_file_id"):
            file_id = batch.get(name)
            if not file_id:
                continue
            try:
                async with self._client.files.with_streaming_response.content(file_id) as resp:
                    async for text in resp.iter_lines():
                        if text.strip():
                            yield self._result(text)
            except (self._sdk.APIError, ValueError) as exc:
                raise sdk_error("openai", self._sdk, exc) from None

    def _result(self, text: str) -> ItemResult:
        return openai_result(text, self._provider)

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.post(f"/batches/{batch_id}/cancel", cast_to=dict)
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("openai", self._sdk, exc) from None


def openai_line(provider: Any, item: BatchItem) -> bytes:
    """The OpenAI Batch input line of ``item``: its ``body`` is the one the openai provider
    sends for that call (``to_openai_request`` and the request's extra body, as
    ``OpenAIProvider.complete`` builds it), ``custom_id`` the cache key."""
    from hy_eval.llm.providers import to_openai_request

    body = to_openai_request(item.request, provider.model, provider.structured)
    if item.request.extra_body:
        body.update(item.request.extra_body)
    line = {"custom_id": item.key, "method": "POST", "url": "/v1/chat/completions"}
    return _jsonl({**line, "body": body})


def openai_result(text: str, provider: Any) -> ItemResult:
    """One OpenAI Batch output line's result, read in ``provider``'s structured mode. A
    line that is no JSON object, or whose parts have the wrong shapes, is no result: its
    request is then missing from the output, failed (and asked again)."""
    try:
        line = json.loads(text)
        if not isinstance(line, dict):
            raise TypeError("not a JSON object")
        return _openai_read(line, provider)
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        return ItemResult("", "failed", reason=f"unreadable output line: {exc}")


def _openai_read(line: dict[str, Any], provider: Any) -> ItemResult:
    from hy_eval.llm.providers import completion_from_body

    key = str(line.get("custom_id"))
    error = line.get("error") or {}
    response = line.get("response") or {}
    if error:
        code = str(error.get("code") or "")
        outcome = {"batch_expired": "expired", "batch_cancelled": "canceled"}.get(code, "failed")
        return ItemResult(key, outcome, reason=f"{code}: {error.get('message')}")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        message = body.get("error", {}).get("message") if isinstance(body, dict) else body
        return ItemResult(key, "failed", reason=f"HTTP {status}: {message}")
    try:
        return ItemResult(
            key, "succeeded", completion_from_body(body, provider.structured, provider.model)
        )
    except Exception as exc:  # a malformed answer is this request's failure
        return ItemResult(key, "failed", reason=str(exc))


class AnthropicBatches:
    """Anthropic's Message Batches endpoints."""

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * MIB

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._client = provider._client
        self._sdk = provider._anthropic

    def line(self, item: BatchItem) -> bytes:
        from hy_eval.llm.providers import to_anthropic_request

        body = to_anthropic_request(item.request, self._provider.model)
        # The SDK merges ``extra_body`` into the body; a batch's params hold it plainly.
        params = {**body, **body.pop("extra_body", {})}
        return _jsonl({"custom_id": item.key, "params": params})

    async def submit(self, lines: list[bytes]) -> str:
        requests = [json.loads(line) for line in lines]
        try:
            batch = await self._client.messages.batches.create(requests=requests)
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("anthropic", self._sdk, exc) from None
        return checked_id(getattr(batch, "id", None), "anthropic")

    async def state(self, batch_id: str) -> RemoteState:
        try:
            found = await self._client.messages.batches.retrieve(batch_id)
            batch = found.model_dump(mode="json")
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("anthropic", self._sdk, exc) from None
        counts = {k: int(v or 0) for k, v in (batch.get("request_counts") or {}).items()}
        status = str(batch.get("processing_status"))
        return RemoteState(
            status,
            status == "ended",
            sum(counts.values()),
            counts.get("succeeded", 0),
            counts.get("errored", 0) + counts.get("canceled", 0),
            counts.get("expired", 0),
        )

    async def results(self, batch_id: str) -> AsyncIterator[ItemResult]:
        try:
            decoder = await self._client.messages.batches.results(batch_id)
            async for entry in decoder:
                yield self._result(entry)
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("anthropic", self._sdk, exc) from None

    def _result(self, entry: Any) -> ItemResult:
        """One result entry's outcome; one of the wrong shape is no result (its request
        is then missing from the output, failed, and asked interactively)."""
        try:
            return self._read(entry.model_dump(mode="json"))
        except (TypeError, ValueError, AttributeError, ProviderError) as exc:
            return ItemResult("", "failed", reason=f"unreadable result: {exc}")

    def _read(self, line: dict[str, Any]) -> ItemResult:
        key = str(line.get("custom_id"))
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            message = result.get("message") or {}
            model = self._provider.model
            return ItemResult(key, "succeeded", message_completion(message, model))
        if kind == "errored":
            error = (result.get("error") or {}).get("error") or {}
            return ItemResult(key, "failed", reason=f"{error.get('type')}: {error.get('message')}")
        outcome = "expired" if kind == "expired" else "canceled"
        return ItemResult(key, outcome, reason=str(kind))

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.messages.batches.cancel(batch_id)
        except (self._sdk.APIError, ValueError) as exc:
            raise sdk_error("anthropic", self._sdk, exc) from None


def message_completion(message: dict[str, Any], model: str = "") -> Completion:
    """The ``Completion`` of an Anthropic message given as JSON: a forced tool's input is
    the parsed answer (as ``AnthropicProvider.complete`` reads it), else the text."""
    texts: list[str] = []
    parsed: dict[str, Any] | None = None
    for block in message.get("content") or []:
        if block.get("type") == "tool_use" and parsed is None:
            value = block.get("input")
            parsed = dict(value) if isinstance(value, dict) else None
        elif block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
    text = json.dumps(parsed, ensure_ascii=False) if parsed is not None else "".join(texts)
    usage = message.get("usage") or {}
    return Completion(
        text=text,
        finish_reason=message.get("stop_reason"),
        usage=Usage.read(usage.get("input_tokens"), usage.get("output_tokens"), "anthropic"),
        model_id=str(message.get("model") or model),
        parsed=parsed,
    )


def _jsonl(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
