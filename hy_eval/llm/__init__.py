"""The LLM layer: providers (OpenAI-compatible, Anthropic, embedded llama.cpp), the answer
cache with record/replay, retries, concurrency, usage and cost; ``hy-eval serve``, the
same layer as an OpenAI-compatible endpoint for other programs."""

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
from hy_eval.llm._embed import EMBEDDING_MODEL, hashed_embedding
from hy_eval.llm._options import DEFAULT_CACHE_PATH, ModelOptions
from hy_eval.llm._prices import DEFAULT_PRICES, PriceTable
from hy_eval.llm._providers import PROVIDERS, ModelSpec, build_client, make_provider
from hy_eval.llm._serve import LLMServer, serve_in_thread
from hy_eval.llm._serve_app import ServeSummary

__all__ = [
    "CACHE_MODES",
    "DEFAULT_CACHE_PATH",
    "DEFAULT_PRICES",
    "EMBEDDING_MODEL",
    "PROVIDERS",
    "AnswerCache",
    "CacheMiss",
    "CacheMode",
    "CallStats",
    "Completion",
    "ConfigError",
    "Interrupted",
    "LLMClient",
    "LLMServer",
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
    "ServeSummary",
    "Usage",
    "build_client",
    "cache_key",
    "canonical_json",
    "export_cassette",
    "hashed_embedding",
    "import_cassette",
    "make_provider",
    "open_db",
    "parse_json_answer",
    "serve_in_thread",
    "short_text",
]
