"""The provider factory: a provider chosen by name (``--provider``, ``--model``,
``--base-url``), and the ``LLMClient`` around it with its cache and retry policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hy_eval.llm.core import ConfigError, Provider
from hy_eval.llm.providers._client import LLMClient

PROVIDERS: tuple[str, ...] = ("local", "openai", "anthropic")


def make_provider(
    name: str = "local",
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Provider:
    """Build a provider; its vendor SDK is imported only here, when it is chosen."""
    opts = dict(options or {})
    if name == "local":
        from hy_eval.llm.local import LocalProvider

        if base_url:
            raise ConfigError("--base-url does not apply to the local provider")
        return LocalProvider(model, **opts)
    if name == "openai":
        from hy_eval.llm.providers._openai import OpenAIProvider

        return OpenAIProvider(model, base_url=base_url, api_key=api_key, **opts)
    if name == "anthropic":
        from hy_eval.llm.providers._anthropic import AnthropicProvider

        return AnthropicProvider(model, base_url=base_url, api_key=api_key, **opts)
    raise ConfigError(f"unknown provider {name!r} (expected one of {', '.join(PROVIDERS)})")


def build_client(
    provider: str = "local",
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    options: Mapping[str, Any] | None = None,
    cache_path: str | Path | None = None,
    cache_mode: str = "read-write",
    concurrency: int | None = None,
    timeout: float = 120.0,
    retries: int = 4,
    retry_base_delay: float = 0.5,
) -> LLMClient:
    """A provider wrapped in an ``LLMClient`` with its cache. Raises ``ConfigError``.

    ``concurrency`` is the calls at once (``None``: the provider's default); for the local
    provider it is its model processes times the requests each decodes together.
    An openai provider in ``auto`` mode (the default with a base URL) is settled here:
    the mode remembered beside the cache, else one probe of the server."""
    from hy_eval.llm.cache import CACHE_MODES, AnswerCache
    from hy_eval.llm.providers._client import RetryPolicy

    if cache_mode not in CACHE_MODES:
        raise ConfigError(f"unknown cache mode {cache_mode!r} (expected {', '.join(CACHE_MODES)})")
    if cache_mode != "off" and cache_path is None:
        raise ConfigError("a cache file is needed unless the cache mode is off")
    if provider == "local" and concurrency is not None:
        # As many calls at once as the local model's processes and their batches hold.
        from hy_eval.llm.local import split_concurrency

        threads = (options or {}).get("threads")
        processes, slots = split_concurrency(concurrency, threads)
        options = {**(options or {}), "processes": processes, "slots": slots}
    p = make_provider(provider, model, base_url=base_url, api_key=api_key, options=options)
    settle = getattr(p, "settle", None)
    if settle is not None:
        # openai ``auto``: the mode is found now, so that the manifest can say which.
        from hy_eval.llm.providers._openai import mode_memory

        settle(mode_memory(cache_path) if cache_mode != "off" else None, cache_mode, timeout)
    cache = AnswerCache(cache_path) if cache_mode != "off" and cache_path is not None else None
    return LLMClient(
        p,
        cache=cache,
        cache_mode=cache_mode,  # type: ignore[arg-type]
        concurrency=concurrency,
        timeout=timeout,
        retry=RetryPolicy(max_retries=retries, base_delay=retry_base_delay),
    )


@dataclass(frozen=True)
class ModelSpec:
    """``local``, ``openai:gpt-4o-mini``, ``anthropic:claude-3-5-haiku-latest``."""

    provider: str
    model: str | None

    @staticmethod
    def parse(text: str) -> ModelSpec:
        provider, _, model = text.partition(":")
        if provider not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {provider!r} in model spec {text!r} "
                f"(expected one of {', '.join(PROVIDERS)})"
            )
        return ModelSpec(provider, model or None)

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}" if self.model else self.provider
