"""The LLM layer: providers (OpenAI-compatible, Anthropic, embedded llama.cpp), the answer
cache with record/replay, retries, concurrency, usage and cost; ``hy-eval serve``, the
same layer as an OpenAI-compatible endpoint for other programs.

Six rooms, bottom first: ``core``, ``cache``, ``local``, ``providers``, ``batch``,
``serve`` (docs/architecture.md); a room imports only the rooms below it, through their
``__init__``. This package re-exports the names the rest of hy_eval and its users need."""

from hy_eval.llm.cache import (
    CACHE_MODES,
    AnswerCache,
    CacheMiss,
    CacheMode,
    cache_key,
    canonical_json,
    export_cassette,
    import_cassette,
    open_db,
)
from hy_eval.llm.core import (
    DEFAULT_PRICES,
    Completion,
    ConfigError,
    Interrupted,
    ModelProcessDied,
    PriceTable,
    Provider,
    ProviderError,
    RepeatedRefusal,
    Request,
    RunStopped,
    Usage,
    parse_json_answer,
    short_text,
)
from hy_eval.llm.providers import (
    DEFAULT_CACHE_PATH,
    PROVIDERS,
    CallStats,
    LLMClient,
    ModelOptions,
    ModelSpec,
    RetryPolicy,
    build_client,
    make_provider,
)
from hy_eval.llm.serve import (
    EMBEDDING_MODEL,
    LLMServer,
    ServeSummary,
    hashed_embedding,
    serve_in_thread,
)

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
