"""``render`` and ``parse-history``: a conversation file to L1_RAW text and back."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError


def read_input(path: str) -> str:
    """The text of ``path``, or of stdin for ``-``; a missing or unreadable file is a
    ``UserError``."""
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
    text = read_input(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except (RecursionError, ValueError):  # nested too deeply, or a huge integer
        raise UserError(f"{path}: JSON nested too deeply or with a number too long") from None
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
        echo(
            f"warning: user name {other!r} differs from {user.name!r}; the first one is used",
            err=True,
        )
    echo(render_conversation(messages, lang=args.lang))
    return ExitCode.OK


def cmd_parse_history(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hy_eval.conversation import HistoryError, read_l1_raw

    text = read_input(args.file)
    try:
        parsed = read_l1_raw(text)
    except HistoryError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    out = [{k: v for k, v in asdict(m).items() if v is not None} for m in parsed.messages]
    echo(json.dumps(out, ensure_ascii=False, indent=2))
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``render`` and ``parse-history`` sub-commands."""
    p = sub.add_parser("render", help="print the L1_RAW rendering of a conversation file")
    p.add_argument("file", help="JSON list of messages or {messages, system}; '-' for stdin")
    p.add_argument("--lang", choices=["en", "zh"], help="force the name line's language")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("parse-history", help="print the messages of an L1_RAW text as JSON")
    p.add_argument("file", help="L1_RAW text file; '-' for stdin")
    p.set_defaults(func=cmd_parse_history)
