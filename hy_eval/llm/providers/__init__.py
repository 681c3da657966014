"""Asking a model: ``LLMClient`` with its cache, retries and concurrency (``_client``),
the OpenAI-compatible and Anthropic providers (``_openai`` with its structured-output
modes in ``_structured``, ``_anthropic``), the provider registry that builds a client from
a model spec (``_registry``) and the command line's model options (``_options``). Above
``core``, ``cache`` and ``local``."""

from hy_eval.llm.providers._anthropic import to_anthropic_request
from hy_eval.llm.providers._client import CallStats, LLMClient, RetryPolicy, finished_completion
from hy_eval.llm.providers._openai import completion_from_body, to_openai_request
from hy_eval.llm.providers._options import DEFAULT_CACHE_PATH, ModelOptions
from hy_eval.llm.providers._registry import PROVIDERS, ModelSpec, build_client, make_provider

__all__ = [
    "DEFAULT_CACHE_PATH",
    "PROVIDERS",
    "CallStats",
    "LLMClient",
    "ModelOptions",
    "ModelSpec",
    "RetryPolicy",
    "build_client",
    "completion_from_body",
    "finished_completion",
    "make_provider",
    "to_anthropic_request",
    "to_openai_request",
]
