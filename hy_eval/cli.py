"""Command-line interface: ``hy-eval``, ``python -m hy_eval`` and ``run_eval.py``.

Exit codes (docs/cli.md): 0 success; 1 a gate failed; 2 usage, configuration or input
error (one line on stderr, never a traceback); 3 provider errors above the tolerance;
4 a cache miss in replay-only mode; 130 interrupted.

Heavy modules (pandas, matplotlib, vendor SDKs, llama.cpp) are imported inside the
commands that use them, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_PROVIDER = 3
EXIT_CACHE_MISS = 4
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """An error the user can fix: printed as one line, exit code ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def load_conversation_file(path: str) -> tuple[Any, Any]:
    """Read a JSON list of messages, or ``{"messages": [...], "system": "..."}``."""
    text = _read_input(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if isinstance(data, dict):
        unknown = set(data) - {"messages", "system"}
        if unknown:
            raise UserError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
        if "messages" not in data:
            raise UserError(f"{path}: object without a 'messages' field")
        return data["messages"], data.get("system")
    return data, None


def _normalised(path: str) -> list[Any]:
    from hy_eval.conversation import MessageError, normalise_messages

    messages, system = load_conversation_file(path)
    try:
        return normalise_messages(messages, system=system)
    except MessageError as exc:
        raise UserError(f"{path}: {exc}") from None


def cmd_render(args: argparse.Namespace) -> int:
    from hy_eval.conversation import render_conversation, resolve_user_name

    messages = _normalised(args.file)
    user = resolve_user_name(messages)
    for other in user.conflicts:
        print(
            f"warning: user name {other!r} differs from {user.name!r}; the first one is used",
            file=sys.stderr,
        )
    print(render_conversation(messages, lang=args.lang))
    return EXIT_OK


def cmd_parse_history(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hy_eval.conversation import HistoryError, read_l1_raw

    text = _read_input(args.file)
    try:
        parsed = read_l1_raw(text)
    except HistoryError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    out = [{k: v for k, v in asdict(m).items() if v is not None} for m in parsed.messages]
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return EXIT_OK


#: Sub-command names; anything else as the first argument means ``run``.
COMMANDS = ("run", "render", "parse-history", "cache", "memory", "datasets")


DEFAULT_CACHE = ".hy_eval/cache.sqlite"


def _cache_path(args: argparse.Namespace) -> str:
    import os

    return str(args.cache or os.environ.get("HY_EVAL_CACHE") or DEFAULT_CACHE)


def cmd_cache_stats(args: argparse.Namespace) -> int:
    from hy_eval.llm import AnswerCache

    path = _cache_path(args)
    if not Path(path).exists():
        raise UserError(f"{path}: no cache file")
    stats = AnswerCache(path).stats()
    print(f"cache {stats['path']}: {stats['answers']} answers, {stats['bytes']:,} bytes")
    for row in stats["by_model"]:
        print(f"  {row['provider']}:{row['model']}  {row['answers']}")
    return EXIT_OK


def cmd_cache_explain(args: argparse.Namespace) -> int:
    from hy_eval.llm import AnswerCache

    path = _cache_path(args)
    if not Path(path).exists():
        raise UserError(f"{path}: no cache file")
    try:
        rows = AnswerCache(path).explain(args.key)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not rows:
        raise UserError(f"no cached answer whose key starts with {args.key!r} in {path}")
    print(json.dumps(rows, ensure_ascii=False, indent=2))
    return EXIT_OK


def _add_cache_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", help=f"answer cache file (default $HY_EVAL_CACHE or {DEFAULT_CACHE})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hy-eval",
        description="Evaluate multi-speaker memory prompts. With no sub-command, runs 'run'.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("render", help="print the L1_RAW rendering of a conversation file")
    p.add_argument("file", help="JSON list of messages or {messages, system}; '-' for stdin")
    p.add_argument("--lang", choices=["en", "zh"], help="force the name line's language")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("parse-history", help="print the messages of an L1_RAW text as JSON")
    p.add_argument("file", help="L1_RAW text file; '-' for stdin")
    p.set_defaults(func=cmd_parse_history)

    cache = sub.add_parser("cache", help="inspect the answer cache").add_subparsers(
        dest="cache_command", metavar="ACTION", required=True
    )
    p = cache.add_parser("stats", help="answers stored, per provider and model")
    _add_cache_flag(p)
    p.set_defaults(func=cmd_cache_stats)
    p = cache.add_parser("explain", help="show what went into a key (to debug misses)")
    p.add_argument("key", help="a key or its first characters (at least 6)")
    _add_cache_flag(p)
    p.set_defaults(func=cmd_cache_explain)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list or (args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "run")
    args = parser.parse_args(args_list)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"hy-eval: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("hy-eval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
