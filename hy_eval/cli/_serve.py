"""``hy-eval serve``: our LLM layer as an OpenAI-compatible endpoint on 127.0.0.1."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any, NoReturn

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError
from hy_eval.cli._model import add_model_flags, model_options


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _one_line_error(message: str) -> NoReturn:
    """A bad flag of ``serve``: one line and exit 2 (no usage block)."""
    echo(f"hy-eval: error: serve: {message}", err=True)
    sys.exit(ExitCode.USAGE)


def cmd_serve(args: argparse.Namespace) -> int:
    from hy_eval.llm import EMBEDDING_MODEL, ConfigError, LLMServer, PriceTable

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be from 0 to 65535 (got {args.port})")
    options = model_options(args)
    try:
        server = LLMServer(
            options,
            host=args.host,
            port=args.port,
            allow_remote=args.allow_remote,
            prices=PriceTable.load(args.prices),
            log=lambda line: echo(line, err=True),
        )
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    provider = server.client.provider
    cache = (
        f"cache {options.cache_mode} {options.cache_path}"
        if options.cache_mode != "off"
        else "cache off"
    )
    # The URL first and the token third: a script reads them from the first line.
    echo(
        f"{server.url}  token {server.token}  (the API key every request must send)  "
        f"model {provider.name}:{server.model}, {cache}, embeddings "
        f"{EMBEDDING_MODEL} (a stand-in, not a model); Ctrl-C stops",
        flush=True,
    )
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        summary = server.stop()
    echo(f"hy-eval serve: {summary.line()}", flush=True)
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``serve`` sub-command."""
    p = sub.add_parser(
        "serve",
        help="an OpenAI-compatible endpoint in front of the model flags' provider",
        description="Serve POST /v1/chat/completions, POST /v1/embeddings (a hashed "
        "n-gram stand-in) and GET /v1/models on 127.0.0.1, every chat call through the "
        "answer cache, retries and token accounting of the model flags (docs/llm.md, "
        "'Serving our LLM layer to other programs'). Ctrl-C stops and prints a summary.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen on an address that is not loopback (the token, sent in clear HTTP, "
        "is then the only guard)",
    )
    p.add_argument("--prices", help="TOML file extending the price table")
    add_model_flags(p)
    p.set_defaults(func=cmd_serve)
    _one_line_errors(p)


def _one_line_errors(p: argparse.ArgumentParser) -> None:
    """Make a bad flag of ``serve`` one line and exit 2: a bad value (the parser's own
    error) and a flag it does not know (else the top-level parser's, with its usage)."""
    parse = p.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> Any:
        found, extras = parse(args, namespace)
        if extras:
            _one_line_error(f"unrecognized arguments: {' '.join(extras)}")
        return found, extras

    p.error = _one_line_error  # type: ignore[method-assign]
    p.parse_known_args = parse_known_args  # type: ignore[method-assign]
