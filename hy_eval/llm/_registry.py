"""Choosing a provider by name (``--provider``, ``--model``, ``--base-url``) and pricing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hy_eval._toml import read_toml
from hy_eval.llm._base import Provider, Usage
from hy_eval.llm._client import LLMClient
from hy_eval.llm._openai import ConfigError

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
        from hy_eval.llm._local import LocalProvider

        if base_url:
            raise ConfigError("--base-url does not apply to the local provider")
        return LocalProvider(model, **opts)
    if name == "openai":
        from hy_eval.llm._openai import OpenAIProvider

        return OpenAIProvider(model, base_url=base_url, api_key=api_key, **opts)
    if name == "anthropic":
        from hy_eval.llm._anthropic import AnthropicProvider

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

    An openai provider in ``auto`` mode (the default with a base URL) is settled here:
    the mode remembered beside the cache, else one probe of the server (issue 22)."""
    from hy_eval.llm._cache import CACHE_MODES, AnswerCache
    from hy_eval.llm._client import RetryPolicy

    if cache_mode not in CACHE_MODES:
        raise ConfigError(f"unknown cache mode {cache_mode!r} (expected {', '.join(CACHE_MODES)})")
    if cache_mode != "off" and cache_path is None:
        raise ConfigError("a cache file is needed unless the cache mode is off")
    p = make_provider(provider, model, base_url=base_url, api_key=api_key, options=options)
    settle = getattr(p, "settle", None)
    if settle is not None:
        # openai ``auto``: the mode is found now, so that the manifest can say which.
        from hy_eval.llm._openai import mode_memory

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


#: USD per million tokens (input, output), from the vendors' published price lists.
#: Extend or override with a TOML file: ``[models."name"] input_per_mtok = 0.15 ...``.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "SmolLM2-135M-Instruct": (0.0, 0.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "claude-3-5-haiku-latest": (0.80, 4.00),
    "claude-sonnet-4-0": (3.00, 15.00),
}


class PriceTable:
    def __init__(self, prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)

    @staticmethod
    def load(path: str | Path | None) -> PriceTable:
        table = PriceTable()
        if path is None:
            return table
        data = read_toml(path, "price file", ConfigError)
        for model, entry in (data.get("models") or {}).items():
            try:
                table.prices[model] = (
                    float(entry["input_per_mtok"]),
                    float(entry["output_per_mtok"]),
                )
            except (KeyError, TypeError, ValueError):
                raise ConfigError(
                    f"{path}: models.{model} needs numeric input_per_mtok and output_per_mtok"
                ) from None
        return table

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for ``usage`` on ``model``; ``None`` (unknown) when the model has no price."""
        price = self.prices.get(model)
        if price is None:
            return None
        return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
