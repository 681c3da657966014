"""The LLM layer: providers (OpenAI-compatible, Anthropic, embedded llama.cpp), the answer
cache with record/replay, retries, concurrency, usage and cost."""

from hy_eval.llm._base import (
    Completion,
    ModelProcessDied,
    Provider,
    ProviderError,
    RepeatedRefusal,
    Request,
    RunStopped,
    Usage,
    parse_json_answer,
)
from hy_eval.llm._cache import CACHE_MODES, AnswerCache, CacheMiss, CacheMode, cache_key
from hy_eval.llm._cassette import export_cassette, import_cassette
from hy_eval.llm._client import CallStats, LLMClient, RetryPolicy
from hy_eval.llm._openai import ConfigError
from hy_eval.llm._registry import PROVIDERS, ModelSpec, PriceTable, build_client, make_provider

__all__ = [
    "CACHE_MODES",
    "PROVIDERS",
    "AnswerCache",
    "CacheMiss",
    "CacheMode",
    "CallStats",
    "Completion",
    "ConfigError",
    "LLMClient",
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
    "export_cassette",
    "import_cassette",
    "make_provider",
    "parse_json_answer",
]
