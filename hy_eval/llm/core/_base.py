"""The provider protocol and the records that cross it."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hy_eval._json import MAX_DEPTH, check_value
from hy_eval._redact import redact

JsonDict = dict[str, Any]
ErrorKind = Literal[
    "rate_limit", "server", "connection", "timeout", "bad_request", "auth", "bad_answer", "other"
]
RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limit", "server", "connection", "timeout"})


@dataclass(frozen=True)
class Request:
    """Everything that can change a model's answer, and nothing else.

    ``messages`` are plain ``{"role", "content"}`` dicts (system first if any). When
    ``json_schema`` is given the provider asks for structured output under
    ``schema_name``. ``repeat`` separates repeated samples of the same request in the
    cache (it is never sent to the model).
    """

    messages: tuple[Mapping[str, str], ...]
    model: str = ""
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0
    json_schema: Mapping[str, Any] | None = None
    schema_name: str | None = None
    extra_body: Mapping[str, Any] | None = None
    repeat: int = 0

    @staticmethod
    def of(messages: Sequence[Mapping[str, str]], **kwargs: Any) -> Request:
        return Request(messages=tuple(dict(m) for m in messages), **kwargs)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )

    @staticmethod
    def read(input_tokens: Any, output_tokens: Any, vendor: str) -> Usage:
        """The usage a server reported, checked: a missing count is 0; one that is not a
        whole number from 0 to ``MAX_TOKEN_COUNT`` (``Infinity``, ``-1e9``, ``1e40``, a
        string) makes the answer malformed, as a hostile or broken server would write it;
        it would otherwise crash the run or poison the cost figures."""
        return Usage(
            _token_count(input_tokens, vendor, "input"),
            _token_count(output_tokens, vendor, "output"),
        )


#: Above any prompt or answer a model takes or writes in one call.
MAX_TOKEN_COUNT = 10_000_000


def _token_count(value: Any, vendor: str, which: str) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        raise ProviderError(
            "server",
            f"{vendor}: malformed response body "
            f"({which} token count {short_text(repr(value), 40)})",
        )
    return value


@dataclass(frozen=True)
class Completion:
    """A model's answer. ``parsed`` is the JSON object when a schema was asked for and the
    answer could be read as one (else ``None`` and ``parse_error`` says why). Providers set
    it only when the vendor hands back an object; ``LLMClient`` parses text answers."""

    text: str
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    model_id: str = ""
    parsed: JsonDict | None = None
    parse_error: str | None = None
    cached: bool = False
    retries: int = 0

    def __post_init__(self) -> None:
        # A server writes these two labels; a record keeps them, so they are bounded here,
        # where every path (providers, batches, the cache) makes its completions.
        if self.finish_reason is not None and len(str(self.finish_reason)) > LABEL_LIMIT:
            object.__setattr__(self, "finish_reason", str(self.finish_reason)[:LABEL_LIMIT])
        if len(self.model_id) > LABEL_LIMIT:
            object.__setattr__(self, "model_id", self.model_id[:LABEL_LIMIT])


#: The most characters kept of a completion's ``finish_reason`` and ``model_id``: real
#: ones are a word and a model name.
LABEL_LIMIT = 120


class ConfigError(ValueError):
    """A provider or client cannot be set up as asked (a missing key, an unknown provider,
    a bad option or price file): one line for the user, before any model call."""


class ProviderError(Exception):
    """A failed model call. ``kind`` decides whether it is retried."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        #: The fix, for an error the server will keep giving (a refused structured-output
        #: mode, a refused key): named when the run stops early.
        self.hint: str | None = None

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


class RunStopped(Exception):
    """A failure that is not one case's but the run's: the run stops with its finished
    cases kept. :meth:`describe` is the one line the user reads; ``resumable`` says
    whether ``--resume`` with the same settings can finish the run."""

    resumable = True

    def describe(self) -> str:
        return str(self)


class ModelProcessDied(RunStopped):
    """The local model's own process ended in the middle of a call (a native crash of the
    model library, or a kill). Not a :class:`ProviderError`: it is not one case's failure
    but the run's, which stops with its finished cases kept (the runner adds the case)."""

    def __init__(self, returncode: int, case_id: str | None = None) -> None:
        self.returncode = returncode
        self.case_id = case_id
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.returncode < 0:
            import signal

            try:
                name = f", {signal.Signals(-self.returncode).name}"
            except ValueError:
                name = ""
            how = f"died (signal {-self.returncode}{name})"
        else:
            how = f"exited with code {self.returncode}"
        where = f" on case {self.case_id}" if self.case_id else ""
        return f"local model process {how}{where}"


class RepeatedRefusal(RunStopped):
    """The same error that no retry cures (a refused request parameter, a refused key) on
    several calls in a row, with no answer between: every further case would fail the
    same way, so the run stops. The line names the error and, when known, the
    fix; a resume with the same settings would meet the same refusal."""

    resumable = False

    def __init__(self, error: ProviderError, count: int) -> None:
        self.error = error
        self.count = count
        super().__init__(self.describe())

    def describe(self) -> str:
        fix = f"; {self.error.hint}" if self.error.hint else ""
        return f"{self.count} calls in a row failed with the same error: {self.error}{fix}"


class Interrupted(RunStopped):
    """The run was interrupted (Ctrl-C): the client takes no new call, and a call it
    abandoned ends with this. The runner drops the case it was on (no record: a resume
    runs it again); answers received before are in the cache."""

    def describe(self) -> str:
        return "interrupted"


class Provider(Protocol):
    """One model endpoint. Implementations live one per file and import their SDK lazily."""

    #: Registry name: ``openai``, ``anthropic``, ``local``, ...
    name: str
    #: Model id as the user named it (part of the cache key).
    model: str
    #: Endpoint (part of the cache key); empty for in-process models.
    base_url: str
    #: Default concurrency for this provider.
    default_concurrency: int
    #: Settings that change answers without being in the request (the structured-output
    #: mode, the local model file): part of the cache key. A provider may update it in
    #: place once a mode is settled (openai ``auto``).
    key_options: dict[str, Any]
    #: Whether a call may be abandoned when it overruns the timeout. ``False`` for a model
    #: that computes in this process's worker and cannot be stopped halfway (local).
    interruptible: bool

    async def complete(self, request: Request, timeout: float) -> Completion:
        """Make one call. Raise ``ProviderError`` for any failure."""
        ...

    async def aclose(self) -> None: ...


def retry_after_seconds(headers: Any) -> float | None:
    """``Retry-After`` in seconds (numeric form; ``retry-after-ms`` is preferred when sent)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # an HTTP date: fall back to exponential backoff


def short_text(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, secrets redacted (a provider's error
    body may echo the request's headers)."""
    text = redact(" ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


_VALIDATION_RE = re.compile(
    r"\b\d+ validation errors?\b|Input should be |Extra inputs are not permitted"
    r"|Unrecognized request argument|Unsupported parameter",
    re.IGNORECASE,
)


def is_validation_message(message: str) -> bool:
    """Whether an error body reads as the server refusing the request's shape (pydantic's
    "1 validation error ... Input should be", OpenAI's "Unrecognized request argument")."""
    return bool(_VALIDATION_RE.search(message))


def sdk_error(vendor: str, sdk: Any, exc: BaseException) -> ProviderError:
    """Map an exception of the ``openai`` or ``anthropic`` SDK (their error classes share
    names and meaning) to a ``ProviderError`` whose kind decides the retry."""
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError("timeout", f"{vendor}: timed out: {redact(str(exc))}")
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError("connection", f"{vendor}: connection error: {redact(str(exc))}")
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        kind: ErrorKind = (
            "rate_limit"
            if status == 429
            # A 500 whose body is a validation message (llama-cpp-python's server answers
            # a refused request field so) will be given again: not retried.
            else "bad_request"
            if status >= 500 and is_validation_message(str(exc.message))
            else "server"
            if status >= 500
            else "auth"
            if status in (401, 403)
            else "bad_request"
        )
        return ProviderError(
            kind,
            f"{vendor}: HTTP {status}: {short_text(exc.message)}",
            status=status,
            retry_after=retry_after_seconds(exc.response.headers),
        )
    # A body that is not JSON: the SDK raises a validation error or lets json's
    # ValueError through. A proxy glitch as far as we can tell: retried like a 5xx.
    return ProviderError("server", f"{vendor}: malformed response body: {redact(str(exc))}")


_FENCE_RE = re.compile(r"^\s*```(?:json|JSON)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_THINK_RE = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)


def parse_json_answer(text: str) -> tuple[JsonDict | None, str | None]:
    """Read a JSON object from a model's answer, with the repairs that are safe.

    Safe repairs (docs/reliability.md): a leading ``<think>…</think>`` reasoning block is
    dropped; a whole answer in a Markdown code fence is unwrapped; prose after a complete
    top-level object is ignored. Anything else (truncated JSON, an array, an empty answer)
    is a parse failure with a one-line reason.
    """
    body = _THINK_RE.sub("", text, count=1).strip()
    fence = _FENCE_RE.match(body)
    if fence:
        body = fence.group(1).strip()
    if not body:
        return None, "empty answer"
    start = body.find("{")
    if start == -1:
        return None, "no JSON object in the answer"
    if body[:start].strip():
        # Text before the object: accept only a fenced block that starts later.
        inner = re.search(r"```(?:json|JSON)?\s*\n(\{.*?\})\s*\n\s*```", body, re.DOTALL)
        if not inner:
            return None, "text before the JSON object"
        body, start = inner.group(1), 0
    try:
        value, _end = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg.removesuffix(' at')} at char {exc.pos}"
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_DEPTH} levels"
    except ValueError:  # json's only other one: an integer past Python's digit limit
        return None, f"a number with more than {sys.get_int_max_str_digits()} digits"
    if not isinstance(value, dict):
        return None, "the answer is not a JSON object"
    problem = answer_problem(value)
    if problem is not None:
        return None, problem
    return value, None


def answer_problem(value: JsonDict) -> str | None:
    """Why a parsed answer cannot be used as it is (nested too deeply for later code, a
    lone surrogate that cannot be stored), else ``None``."""
    found = check_value(value)
    if found is None:
        return None
    where, problem = found
    return problem if where == "json" else f"{where}: {problem}"
