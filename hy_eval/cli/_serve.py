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


def batch_dir_options(args: argparse.Namespace) -> Any:
    """The model options of a command with ``--batch-dir`` (nothing is sent: a
    placeholder key if none is given); a ``UserError`` for flags a folder cannot serve."""
    import dataclasses

    from hy_eval.harness.run import FOLDER_KEY

    if args.provider != "openai":
        raise UserError("--batch-dir writes OpenAI Batch files: it needs --provider openai")
    if args.structured == "auto" or (args.structured is None and args.base_url):
        raise UserError("--batch-dir asks no server, so none can be probed: give --structured")
    if args.cache_mode != "read-write":
        raise UserError("--batch-dir needs --cache-mode read-write (its answers go to the cache)")
    options = model_options(args)
    return options if options.api_key else dataclasses.replace(options, api_key=FOLDER_KEY)


def cmd_serve(args: argparse.Namespace) -> int:
    from hy_eval.llm import EMBEDDING_MODEL, ConfigError, LLMServer, PriceTable

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be from 0 to 65535 (got {args.port})")
    options = batch_dir_options(args) if args.batch_dir else model_options(args)
    batch = None
    try:
        if args.batch_dir:
            batch = _batch_serve(options, args.batch_dir)
        server = LLMServer(
            options,
            host=args.host,
            port=args.port,
            allow_remote=args.allow_remote,
            prices=PriceTable.load(args.prices),
            log=lambda line: echo(line, err=True),
            client=batch.client if batch is not None else None,
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
        waiting = batch.flush() if batch is not None else None  # before the cache closes
        summary = server.stop()
        if batch is not None:
            batch.close()
    echo(f"hy-eval serve: {summary.line()}", flush=True)
    if waiting is not None:
        echo(
            f"hy-eval serve: {waiting.requests} "
            f"request{' waits' if waiting.requests == 1 else 's wait'} in "
            f"{', '.join(waiting.files)}; "
            'answer them (docs/llm.md, "Offline batches"), then serve again with the same flags',
            err=True,
        )
        return ExitCode.BATCH_WAITING
    return ExitCode.OK


def _batch_serve(options: Any, folder: str) -> Any:
    """Serve's cache-or-spool mode on ``folder``: the answers placed there read into the
    cache first (its kept requests and batches in ``folder/.serve``)."""
    from pathlib import Path

    from hy_eval.llm.batch import BatchServe

    def say(line: str) -> None:
        echo(f"hy-eval serve: batch {line}", err=True)

    batch = BatchServe(options, Path(folder), Path(folder) / ".serve", say=say)
    report = batch.collect()
    if report.outcomes or report.ignored_count:
        say(f"read the answers placed in {folder}: {report.line()}")
        for key, outcome, reason in report.failures:
            say(f"  {outcome}: request {key[:16]}: {reason} (kept to be asked again)")
        for key, why in report.ignored:
            say(f"  ignored output line (custom_id {key[:20]!r}): {why}")
    return batch


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
    p.add_argument(
        "--batch-dir",
        metavar="DIR",
        help="answer from the cache only; every other call gets an error answer and is "
        "written to DIR as an OpenAI Batch file when serve stops (exit 5); the answers "
        "placed there are read the next time (openai provider; docs/llm.md)",
    )
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
