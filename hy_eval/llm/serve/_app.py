"""What ``hy-eval serve`` answers, apart from HTTP: each route's answer, the client's
event loop, the summary of calls, tokens and cost (the HTTP server is ``_server.py``).

Every chat completion goes through one :class:`LLMClient`, so the answer cache (and so
cassettes and replay-only mode), retries, concurrency and token counts apply exactly as
for our own pipeline. The client lives on one event loop in a thread of its own, to
which each request's thread hands its call. Wire format: ``_wire.py``; embeddings:
the stand-in of ``_embed.py``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hy_eval.llm.cache import CacheMiss, cache_key
from hy_eval.llm.core import (
    Completion,
    Interrupted,
    PriceTable,
    ProviderError,
    Request,
    RunStopped,
    Usage,
)
from hy_eval.llm.providers import LLMClient
from hy_eval.llm.serve._embed import EMBEDDING_MODEL, hashed_embedding, token_count
from hy_eval.llm.serve._wire import (
    ChatCall,
    WireError,
    chat_response,
    check_model,
    embeddings_response,
    error_object,
    model_object,
    read_chat,
    read_embeddings,
    read_json_body,
)


@dataclass
class ServeSummary:
    """What a server did: its chat calls (as ``CallStats`` counts them), its embedding
    requests, tokens (all answers, and those newly asked of the provider) and cost
    (``None``: the model has no price)."""

    model: str
    chat_calls: int = 0
    cache_hits: int = 0
    upstream_requests: int = 0
    retries: int = 0
    failed: int = 0
    embedding_requests: int = 0
    embedding_inputs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    new_input_tokens: int = 0
    new_output_tokens: int = 0
    cost_usd: float | None = None
    new_cost_usd: float | None = None
    #: Error answers by HTTP status (malformed requests, misses, provider errors).
    errors_by_status: dict[int, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for the terminal."""
        cost = (
            f"cost ${self.cost_usd:.6f} (new ${self.new_cost_usd:.6f})"
            if self.cost_usd is not None and self.new_cost_usd is not None
            else f"cost unknown (no price for {self.model})"
        )
        errors = ", ".join(f"{n} x {s}" for s, n in sorted(self.errors_by_status.items()))
        return (
            f"{_count(self.chat_calls, 'chat call')} ({self.cache_hits} from the cache, "
            f"{_count(self.upstream_requests, 'upstream request')}, "
            f"{_count(self.retries, 'retry', 'retries')}, {self.failed} failed), "
            f"{_count(self.embedding_requests, 'embedding request')} "
            f"({_count(self.embedding_inputs, 'input')}); tokens {self.input_tokens} in / "
            f"{self.output_tokens} out (new: {self.new_input_tokens} in / "
            f"{self.new_output_tokens} out); {cost}; error answers: {errors or 'none'}"
        )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


class _Stopping(Exception):
    """The server is stopping: no new call is made."""


class _Loop:
    """The client's event loop, in a thread of its own; request threads hand calls to it."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="hy-eval-serve-loop", daemon=True
        )
        self._thread.start()

    def complete(self, request: Request) -> Completion:
        """One call through the client (blocks the calling thread, not the loop)."""
        with self._lock:
            if self._closed:
                raise _Stopping()
            future = asyncio.run_coroutine_threadsafe(
                self.client.complete(request, label="serve", stage="chat"), self.loop
            )
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise _Stopping() from None

    def close(self) -> None:
        """Cancel the calls in progress (each answered 503), close the provider, stop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True

        async def finish() -> None:
            current = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not current]
            if pending:
                self.client.interrupt()  # the local model's process is killed mid-call
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self.client.aclose()

        try:
            asyncio.run_coroutine_threadsafe(finish(), self.loop).result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self.loop.close()


@dataclass(frozen=True)
class _Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _error(exc: WireError) -> _Answer:
    return _Answer(exc.status, exc.body())


def provider_error_answer(exc: ProviderError) -> _Answer:
    """A provider's failure, after the client's retries, as an OpenAI-style error: 429 a
    rate limit, 504 a timeout, 400 a request the provider refused as malformed, 502 the
    rest (the provider failed, refused our key, or knows no such model or path)."""
    message = f"the model provider failed: {exc}"
    headers: dict[str, str] = {}
    if exc.kind == "rate_limit":
        if exc.retry_after is not None:
            headers["Retry-After"] = str(max(1, round(exc.retry_after)))
        body = error_object(message, "rate_limit_error", "rate_limit_exceeded")
        return _Answer(429, body, headers)
    if exc.kind == "timeout":
        return _Answer(504, error_object(message, "upstream_error", "upstream_timeout"))
    if exc.kind == "bad_request" and exc.status not in (404,):
        return _Answer(400, error_object(message, "invalid_request_error", "upstream_refused"))
    return _Answer(502, error_object(message, "upstream_error", f"upstream_{exc.kind}"))


class _App:
    """What each route answers, apart from HTTP (the handler only moves bytes)."""

    def __init__(
        self,
        client: LLMClient,
        prices: PriceTable,
        default_temperature: float,
        log: Callable[[str], None] | None,
    ) -> None:
        self.client = client
        self.model = client.provider.model
        self.prices = prices
        self.default_temperature = default_temperature
        self.log = log
        self.loop = _Loop(client)
        self._lock = threading.Lock()
        self._new_usage = Usage()
        self._embedding_requests = 0
        self._embedding_inputs = 0
        self._errors: dict[int, int] = {}
        #: The first replay-only miss, for a caller that must stop on one (a run through
        #: an external memory system: the system only sees an error answer).
        self.first_miss: CacheMiss | None = None

    def answer(self, method: str, path: str, raw: bytes) -> _Answer:
        """The answer to one HTTP request; never raises."""
        try:
            found = self._route(method, path.split("?", 1)[0].rstrip("/"), raw)
        except WireError as exc:
            found = _error(exc)
        except Exception as exc:  # a bug of ours: one error answer, the server goes on
            if self.log is not None:
                self.log(f"hy-eval serve: internal error on {method} {path}: {exc!r}")
            found = _Answer(
                500, error_object(f"internal error: {type(exc).__name__}: {exc}", "server_error")
            )
        if found.status >= 400:
            self.note_error(found.status)
        return found

    def note_error(self, status: int) -> None:
        """Count an error answer (the HTTP side's own, too: a body too large)."""
        with self._lock:
            self._errors[status] = self._errors.get(status, 0) + 1

    def _route(self, method: str, path: str, raw: bytes) -> _Answer:
        routes: dict[str, tuple[str, Callable[[bytes], _Answer]]] = {
            "/v1/chat/completions": ("POST", self.chat),
            "/v1/embeddings": ("POST", self.embeddings),
            "/v1/models": ("GET", lambda _raw: self.models()),
        }
        if path.startswith("/v1/models/") and method == "GET":
            return self.one_model(path.removeprefix("/v1/models/"))
        if path not in routes:
            raise WireError(404, f"no route {method} {path}", code="unknown_url")
        wanted, handler = routes[path]
        if method != wanted:
            raise WireError(405, f"{path} takes {wanted}, not {method}", code="method_not_allowed")
        return handler(raw)

    def chat(self, raw: bytes) -> _Answer:
        body = read_json_body(raw)
        check_model(body, (self.model,))
        call = read_chat(
            body,
            provider=self.client.provider.name,
            default_temperature=self.default_temperature,
        )
        try:
            completion = self.loop.complete(call.request)
        except CacheMiss as exc:
            if self.first_miss is None:
                self.first_miss = exc
            return _Answer(404, error_object(str(exc), "invalid_request_error", "cache_miss"))
        except ProviderError as exc:
            return provider_error_answer(exc)
        except (_Stopping, Interrupted):  # the calls in progress when the server stops
            return _Answer(503, error_object("the server is stopping", "server_error"))
        except RunStopped as exc:  # the local model's process died; the next call restarts it
            return _Answer(502, error_object(exc.describe(), "upstream_error", "upstream_died"))
        return self._chat_answer(call, completion)

    def _chat_answer(self, call: ChatCall, completion: Completion) -> _Answer:
        key = cache_key(self.client.key_fields(call.request))
        if not completion.cached:
            with self._lock:
                self._new_usage = self._new_usage + completion.usage
        headers = {
            "x-hy-eval-cached": "true" if completion.cached else "false",
            "x-hy-eval-cache-key": key,
        }
        cost = self.prices.cost(self.model, completion.usage)
        if cost is not None:
            headers["x-hy-eval-cost-usd"] = f"{cost:.8f}"
        if call.dropped:
            headers["x-hy-eval-ignored"] = ",".join(call.dropped)
        body = chat_response(call, completion, key=key, model=self.model, created=int(time.time()))
        return _Answer(200, body, headers)

    def embeddings(self, raw: bytes) -> _Answer:
        body = read_json_body(raw)
        check_model(body, (EMBEDDING_MODEL,))
        call = read_embeddings(body)
        vectors: list[Any] = []
        for text in call.texts:
            vector = hashed_embedding(text, call.dimensions)
            if call.base64:
                packed = struct.pack(f"<{len(vector)}f", *vector)
                vectors.append(base64.b64encode(packed).decode("ascii"))
            else:
                vectors.append(vector)
        with self._lock:
            self._embedding_requests += 1
            self._embedding_inputs += len(call.texts)
        tokens = sum(token_count(t) for t in call.texts)
        return _Answer(200, embeddings_response(vectors, tokens=tokens))

    def models(self) -> _Answer:
        data = [self._model(m) for m in (self.model, EMBEDDING_MODEL)]
        return _Answer(200, {"object": "list", "data": data})

    def one_model(self, name: str) -> _Answer:
        check_model({"model": name}, (self.model, EMBEDDING_MODEL))
        return _Answer(200, self._model(name))

    def _model(self, name: str) -> dict[str, Any]:
        if name == EMBEDDING_MODEL:
            return model_object(name, "hy-eval stand-in")
        owner = f"hy-eval {self.client.provider.name}"
        return model_object(name, owner)

    def summary(self) -> ServeSummary:
        stats = self.client.stats
        with self._lock:
            new = self._new_usage
            summary = ServeSummary(
                model=self.model,
                chat_calls=stats.calls,
                cache_hits=stats.cache_hits,
                upstream_requests=stats.requests,
                retries=stats.retries,
                failed=stats.errors,
                embedding_requests=self._embedding_requests,
                embedding_inputs=self._embedding_inputs,
                input_tokens=stats.usage.input_tokens,
                output_tokens=stats.usage.output_tokens,
                new_input_tokens=new.input_tokens,
                new_output_tokens=new.output_tokens,
                errors_by_status=dict(self._errors),
            )
        summary.cost_usd = self.prices.cost(self.model, stats.usage)
        summary.new_cost_usd = self.prices.cost(self.model, new)
        return summary
