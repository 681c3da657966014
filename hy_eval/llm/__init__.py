"""The LLM layer: providers (OpenAI-compatible, Anthropic, embedded llama.cpp), the answer
cache with record/replay, retries, concurrency, usage and cost."""

from hy_eval.llm._base import (
    Completion,
    ConfigError,
    Interrupted,
    ModelProcessDied,
    Provider,
    ProviderError,
    RepeatedRefusal,
    Request,
    RunStopped,
    Usage,
    parse_json_answer,
    short_text,
)
from hy_eval.llm._cache import (
    CACHE_MODES,
    AnswerCache,
    CacheMiss,
    CacheMode,
    cache_key,
    canonical_json,
    open_db,
)
from hy_eval.llm._cassette import export_cassette, import_cassette
from hy_eval.llm._client import CallStats, LLMClient, RetryPolicy
from hy_eval.llm._options import DEFAULT_CACHE_PATH, ModelOptions
from hy_eval.llm._prices import DEFAULT_PRICES, PriceTable
from hy_eval.llm._providers import PROVIDERS, ModelSpec, build_client, make_provider

__all__ = [
    "CACHE_MODES",
    "DEFAULT_CACHE_PATH",
    "DEFAULT_PRICES",
    "PROVIDERS",
    "AnswerCache",
    "CacheMiss",
    "CacheMode",
    "CallStats",
    "Completion",
    "ConfigError",
    "Interrupted",
    "LLMClient",
    "ModelOptions",
    "ModelProcessDied",
    "ModelSpec",
    "PriceTable",
    "Provider",
    "ProviderError",
    "RepeatedRefusal",
    "Request",
    "RetryPolicy",
    "RunStopped",
    "Usage",
    "build_client",
    "cache_key",
    "canonical_json",
    "export_cassette",
    "import_cassette",
    "make_provider",
    "open_db",
    "parse_json_answer",
    "short_text",
]
