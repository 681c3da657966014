"""The model flags every model-calling command shares, read into one ``ModelOptions``."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from hy_eval.cli._errors import UserError

if TYPE_CHECKING:  # hy_eval.llm is imported by the commands, not by --help
    from hy_eval.llm import LLMClient, ModelOptions

#: ``hy_eval.llm.DEFAULT_CACHE_PATH``, spelled out for the help text (a test keeps the two
#: equal) so that ``--help`` does not import the LLM layer.
DEFAULT_CACHE = ".hy_eval/cache.sqlite"

STRUCTURED_CHOICES = ("json_schema", "json_object_schema", "tools", "json_object", "text", "auto")


def cache_path(args: argparse.Namespace) -> str:
    """``--cache``, else ``$HY_EVAL_CACHE``, else the default file."""
    return str(args.cache or os.environ.get("HY_EVAL_CACHE") or DEFAULT_CACHE)


def add_cache_flag(p: Any) -> None:
    p.add_argument("--cache", help=f"answer cache file (default $HY_EVAL_CACHE or {DEFAULT_CACHE})")


def add_model_flags(p: argparse.ArgumentParser, *, cache_mode: bool = True) -> None:
    """The ``model`` flag group; ``cache_mode=False`` for a command that fixes the mode."""
    g = p.add_argument_group("model")
    g.add_argument("--provider", default="local", help="local (default), openai or anthropic")
    g.add_argument("--model", help="model id, or a GGUF path for local (default: embedded)")
    g.add_argument("--base-url", help="endpoint of an OpenAI-compatible or Anthropic server")
    g.add_argument("--api-key", help="API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY)")
    g.add_argument(
        "--structured",
        choices=STRUCTURED_CHOICES,
        help="openai provider: how to ask for JSON (default: auto with --base-url, which "
        "probes the server once; json_schema for OpenAI). See docs/llm.md",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds per call to a server (default 120); the local model's calls are not "
        "timed out (Ctrl-C stops them)",
    )
    g.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="local provider: llama.cpp threads of each model process (default: the cores, "
        "at most 4, shared out among the processes); not part of the cache key",
    )
    g.add_argument(
        "--context",
        type=int,
        metavar="TOKENS",
        help="local provider: the model's context in tokens (default 8192, the embedded "
        "model's trained length); more lets a longer prompt run, on positions the model "
        "was not trained on; part of the cache key",
    )
    g.add_argument("--retries", type=int, default=4, help="retries per call (default 4)")
    g.add_argument(
        "--retry-delay",
        type=float,
        default=0.5,
        help="first backoff delay in seconds, doubling per retry (default 0.5)",
    )
    g.add_argument(
        "--concurrency",
        type=int,
        help="model calls at once; for a run, cases at once (default: provider's: 8 for "
        "servers; for the local model one process per core of one thread each, and above "
        "that, requests decoded together in a batch)",
    )
    g.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (default 0)"
    )
    if cache_mode:
        g.add_argument(
            "--cache-mode", default="read-write", help="read-write, replay-only, off, refresh"
        )
    add_cache_flag(g)


def model_options(args: argparse.Namespace, *, cache_mode: str | None = None) -> ModelOptions:
    """The model flags of ``args`` as one ``ModelOptions`` (``cache_mode`` overrides the
    flag, for a command without one)."""
    from hy_eval.llm import ModelOptions

    return ModelOptions(
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        structured=args.structured,
        timeout=args.timeout,
        retries=args.retries,
        retry_base_delay=args.retry_delay,
        concurrency=args.concurrency,
        temperature=args.temperature,
        threads=args.threads,
        context=args.context,
        cache_mode=cache_mode or args.cache_mode,
        cache_path=cache_path(args),
    )


def make_llm(options: ModelOptions) -> LLMClient:
    """The ``LLMClient`` of ``options``; a configuration problem is a ``UserError``."""
    from hy_eval.llm import ConfigError

    try:
        return options.client()
    except ConfigError as exc:
        raise UserError(str(exc)) from None
