"""``LLMClient``: the one door every model call goes through.

It adds to a provider: the answer cache, bounded concurrency, retries with exponential
backoff and jitter (honouring ``Retry-After``), a per-call timeout, JSON parsing of
structured answers, and per-run counters of calls, cache hits, retries, errors and tokens.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from hy_eval._json import scrub_surrogates
from hy_eval._redact import redact
from hy_eval.llm.cache import (
    AnswerCache,
    CacheMiss,
    CacheMode,
    cache_key,
    canonical_json,
    key_fields,
)
from hy_eval.llm.core import (
    Completion,
    Interrupted,
    Provider,
    ProviderError,
    RepeatedRefusal,
    Request,
    RunStopped,
    Usage,
    answer_problem,
    parse_json_answer,
)


@dataclass
class CallStats:
    """Counters for one run. ``requests`` counts attempts sent to the provider."""

    calls: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    usage: Usage = field(default_factory=Usage)
    usage_by_stage: dict[str, Usage] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "requests": self.requests,
            "retries": self.retries,
            "errors": self.errors,
            "errors_by_kind": dict(self.errors_by_kind),
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "tokens_by_stage": {
                k: {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens}
                for k, u in sorted(self.usage_by_stage.items())
            },
        }


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return float(min(max(retry_after, 0.0), self.max_delay))
        backoff = min(self.base_delay * (2.0 ** (attempt - 1)), self.max_delay)
        return float(backoff) * (1 + self.jitter * rng.random())


def usable_completion(completion: Completion) -> Completion:
    """A provider's answer made safe to cache and record, whatever it holds:
    lone surrogates in its text become U+FFFD (they cannot be encoded as UTF-8), and an
    object the vendor parsed that later code cannot handle becomes a parse failure."""
    text = scrub_surrogates(completion.text)
    finish = completion.finish_reason
    changes: dict[str, Any] = {}
    if text != completion.text:
        changes["text"] = text
    if finish is not None and scrub_surrogates(finish) != finish:
        changes["finish_reason"] = scrub_surrogates(finish)
    if scrub_surrogates(completion.model_id) != completion.model_id:
        changes["model_id"] = scrub_surrogates(completion.model_id)
    if completion.parsed is not None:
        problem = answer_problem(completion.parsed)
        if problem is not None:
            changes.update(parsed=None, parse_error=problem)
    return replace(completion, **changes) if changes else completion


def finished_completion(request: Request, completion: Completion) -> Completion:
    """A provider's answer as it is cached and returned: made usable, and parsed when a
    schema was asked for and the vendor did not parse it (a batch's answers too)."""
    completion = usable_completion(completion)
    if (
        request.json_schema is not None
        and completion.parsed is None
        and completion.parse_error is None
    ):
        parsed, error = parse_json_answer(completion.text)
        completion = replace(completion, parsed=parsed, parse_error=error)
    return completion


class LLMClient:
    """Cache, concurrency, retries and counters around one provider."""

    def __init__(
        self,
        provider: Provider,
        *,
        cache: AnswerCache | None = None,
        cache_mode: CacheMode = "read-write",
        concurrency: int | None = None,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        options: dict[str, Any] | None = None,
        stop_after: int = 3,
    ) -> None:
        self.provider = provider
        self.cache = cache if cache_mode != "off" else None
        self.cache_mode = cache_mode
        self.concurrency = concurrency or provider.default_concurrency
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.options = options or provider.key_options
        #: Raise ``RepeatedRefusal`` once this many calls in a row fail with the same
        #: error that is not retried (0: never).
        self.stop_after = stop_after
        self._refusal: tuple[str, int | None, str] | None = None
        self._refusals = 0
        self.stats = CallStats()
        #: Keys of every answer this client returned (for cassettes).
        self.keys_used: set[str] = set()
        self._semaphore: asyncio.Semaphore | None = None
        self._rng = random.Random(0)
        #: Set by :meth:`interrupt`: no new call is made.
        self.interrupted = False

    def interrupt(self) -> None:
        """Ctrl-C: take no new call (each raises ``Interrupted``) and abandon the calls in
        progress where the provider can (``abort``: the local model's process is killed).
        An answer already received has been cached before this returns control."""
        self.interrupted = True
        abort = getattr(self.provider, "abort", None)
        if abort is not None:
            abort()

    def key_fields(self, request: Request) -> dict[str, Any]:
        p = self.provider
        # Credentials in the URL do not change an answer; kept out of the stored request.
        return key_fields(p.name, p.model, redact(p.base_url), self.options, request)

    def _sem(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        return self._semaphore

    async def complete(self, request: Request, *, label: str = "", stage: str = "") -> Completion:
        """Answer ``request`` from the cache or the provider.

        Raises ``CacheMiss`` in replay-only mode, ``ProviderError`` once the retries
        are spent or for an error that is not retried, and ``RepeatedRefusal`` when such
        an error is the same as on the calls before (see :meth:`_count_refusal`).
        """
        if self.interrupted:
            raise Interrupted()
        self.stats.calls += 1
        prepare = getattr(self.provider, "prepare", None)
        if prepare is not None:
            # A mode still to find (openai ``auto``) changes the key: found first.
            await prepare(self.timeout, self.cache_mode)
        fields = self.key_fields(request)
        canonical = canonical_json(fields)
        key = cache_key(fields, canonical)
        if self.cache is not None and self.cache_mode in ("read-write", "replay-only"):
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                self.keys_used.add(key)
                self._count_usage(stage, hit.usage)
                return hit
            if self.cache_mode == "replay-only":
                raise CacheMiss(key, label, fields)
        completion = finished_completion(request, await self._call_with_retries(request))
        if self.cache is not None:
            self.cache.put(key, fields, completion, canonical)
        self.keys_used.add(key)
        self._count_usage(stage, completion.usage)
        return completion

    def _count_usage(self, stage: str, usage: Usage) -> None:
        self.stats.usage = self.stats.usage + usage
        if stage:
            self.stats.usage_by_stage[stage] = self.stats.usage_by_stage.get(stage, Usage()) + usage

    async def _call_with_retries(self, request: Request) -> Completion:
        attempt = 0
        async with self._sem():
            while True:
                if self.interrupted:
                    raise Interrupted()
                self.stats.requests += 1
                started = time.perf_counter()
                try:
                    call = self.provider.complete(request, self.timeout)
                    if self.provider.interruptible:
                        # A guard above the SDK's own timeout, for a provider that ignores it.
                        completion = await asyncio.wait_for(call, self.timeout + 1.0)
                    else:
                        completion = await call
                    self._refusals = 0
                    return replace(
                        completion,
                        latency_s=time.perf_counter() - started,
                        retries=attempt,
                    )
                except asyncio.TimeoutError:
                    error = ProviderError("timeout", f"no answer within {self.timeout:g} s")
                except (ProviderError, RunStopped) as exc:
                    if self.interrupted:  # the call was abandoned (the model process killed)
                        raise Interrupted() from None
                    if not isinstance(exc, ProviderError):
                        raise
                    error = exc
                if not error.retryable or attempt >= self.retry.max_retries:
                    self.stats.errors += 1
                    self.stats.errors_by_kind[error.kind] += 1
                    if attempt:
                        error.args = (f"{error.args[0]} (after {attempt} retries)",)
                    if not error.retryable:
                        self._count_refusal(error)
                    raise error
                attempt += 1
                self.stats.retries += 1
                await asyncio.sleep(self.retry.delay(attempt, error.retry_after, self._rng))

    def _count_refusal(self, error: ProviderError) -> None:
        """Count ``error`` (one no retry cures) against the ones before it; at
        ``stop_after`` identical ones in a row with no answer between, the server will
        refuse every call the same way: raise ``RepeatedRefusal`` to stop the run."""
        signature = (error.kind, error.status, str(error))
        if signature == self._refusal:
            self._refusals += 1
        else:
            self._refusal, self._refusals = signature, 1
        if self.stop_after and self._refusals >= self.stop_after:
            raise RepeatedRefusal(error, self._refusals) from None

    async def aclose(self) -> None:
        await self.provider.aclose()
