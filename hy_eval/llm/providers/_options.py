"""``ModelOptions``: which model to ask and how, in one object.

The command line builds it once from the model flags (``--provider``, ``--model``,
``--base-url``, ``--api-key``, ``--structured``, ``--timeout``, ``--retries``,
``--retry-delay``, ``--temperature``, ``--threads``, ``--context``, ``--cache-mode``,
``--cache``; ``run`` adds ``--concurrency``). ``memory add`` builds its client from it,
and ``run`` hands it to the runner through ``RunConfig``, whose model fields carry the same
names, so a flag cannot reach one command and be dropped by the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hy_eval._numbers import is_integer, is_number
from hy_eval.llm.core import ConfigError

if TYPE_CHECKING:
    from hy_eval.llm.providers._client import LLMClient

DEFAULT_CACHE_PATH = ".hy_eval/cache.sqlite"


@dataclass(frozen=True)
class ModelOptions:
    """How to reach one model and ask it. Field names match ``RunConfig``'s."""

    #: ``local`` (embedded llama.cpp), ``openai`` (and compatible servers) or ``anthropic``.
    provider: str = "local"
    #: Model id, or a GGUF path for ``local``; ``None`` for the provider's default.
    model: str | None = None
    #: Endpoint of an OpenAI-compatible or Anthropic server.
    base_url: str | None = None
    #: The key; ``None`` reads the provider's environment variable. Never written anywhere.
    api_key: str | None = field(default=None, repr=False)
    #: openai only: how to ask for JSON (``json_schema``, ``tools``, ``auto``, ...).
    structured: str | None = None
    #: Seconds per call.
    timeout: float = 120.0
    #: Retries per call for errors that a retry can cure.
    retries: int = 4
    #: First backoff delay in seconds, doubling per retry.
    retry_base_delay: float = 0.5
    #: Calls at once; ``None`` for the provider's default.
    concurrency: int | None = None
    #: Sampling temperature of every request.
    temperature: float = 0.0
    #: local only: llama.cpp's threads (``None``: as many as the cores, at most 4). Not in
    #: the cache key: on the CPU backend a different count may change the last bits of
    #: floating-point sums, and so, rarely, a token; answers cached with one count are
    #: served to a run with another.
    threads: int | None = None
    #: local only: llama.cpp's context in tokens (``None``: 8,192, SmolLM2's trained
    #: length). Part of the cache key. Above the model's trained length the model runs
    #: on positions it never saw: a system whose prompt does not fit otherwise can run,
    #: at a cost in quality that is not measured here.
    context: int | None = None
    #: ``read-write``, ``replay-only``, ``off`` or ``refresh``.
    cache_mode: str = "read-write"
    #: The answer cache file (``None`` only with ``cache_mode="off"``).
    cache_path: str | None = DEFAULT_CACHE_PATH

    def problem(self) -> str | None:
        """A one-line problem with the numbers or choices, or ``None``. The only check of
        these flags: ``memory add`` calls it, and so does ``RunConfig.problem`` for
        ``run``."""
        if not is_number(self.timeout) or self.timeout <= 0:
            return f"--timeout must be above 0 seconds (got {self.timeout!r})"
        if not is_integer(self.retries) or self.retries < 0:
            return f"--retries must be 0 or more (got {self.retries!r})"
        if not is_number(self.retry_base_delay) or self.retry_base_delay < 0:
            return f"--retry-delay must be 0 or more (got {self.retry_base_delay!r})"
        if self.concurrency is not None and (
            not is_integer(self.concurrency) or self.concurrency < 1
        ):
            return f"--concurrency must be at least 1 (got {self.concurrency!r})"
        if not is_number(self.temperature) or self.temperature < 0:
            return f"--temperature must be 0 or more (got {self.temperature!r})"
        if self.structured and self.provider != "openai":
            return "--structured applies to the openai provider only"
        if self.threads is not None:
            if not is_integer(self.threads) or self.threads < 1:
                return f"--threads must be at least 1 (got {self.threads!r})"
            if self.provider != "local":
                return "--threads applies to the local provider only"
        if self.context is not None:
            if not is_integer(self.context) or not 512 <= self.context <= 131072:
                return f"--context must be between 512 and 131072 tokens (got {self.context!r})"
            if self.provider != "local":
                return "--context applies to the local provider only"
        return None

    def client(self) -> LLMClient:
        """The provider and its ``LLMClient`` (cache, retries, timeout, concurrency).
        Raises ``ConfigError`` for a bad setting, a missing key or an unknown provider."""
        from hy_eval.llm.providers._registry import build_client

        problem = self.problem()
        if problem:
            raise ConfigError(problem)
        return build_client(
            self.provider,
            self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            options=self._provider_options(),
            cache_path=self.cache_path,
            cache_mode=self.cache_mode,
            concurrency=self.concurrency,
            timeout=self.timeout,
            retries=self.retries,
            retry_base_delay=self.retry_base_delay,
        )

    def _provider_options(self) -> dict[str, object] | None:
        """The provider's own settings: openai's structured mode, local's threads."""
        options: dict[str, object] = {}
        if self.structured:
            options["structured"] = self.structured
        if self.threads is not None:
            options["threads"] = self.threads
        if self.context is not None:
            options["n_ctx"] = self.context
        return options or None
