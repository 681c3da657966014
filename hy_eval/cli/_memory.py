"""``memory add``, ``memory search`` and ``memory show``: the pipeline by hand."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo, neutralise
from hy_eval.cli._conversation import load_conversation_file
from hy_eval.cli._errors import UserError, at_least
from hy_eval.cli._model import add_model_flags, make_llm, model_options


def cmd_memory_add(args: argparse.Namespace) -> int:
    import asyncio

    from hy_eval.conversation import MessageError
    from hy_eval.llm import CacheMiss, ModelProcessDied, ProviderError
    from hy_eval.memory import MemoryClient, MemoryStore, PromptError, PromptLibrary

    messages, system = load_conversation_file(args.file)
    try:
        prompts = PromptLibrary(args.variant)
    except PromptError as exc:
        raise UserError(str(exc)) from None
    options = model_options(args)
    llm = make_llm(options)
    client = MemoryClient(
        llm,
        MemoryStore(args.db),
        prompts,
        guard=not args.no_guard,
        temperature=options.temperature,
    )
    echo(f"model: {llm.provider.name}:{llm.provider.model}", err=True)

    async def go() -> Any:
        try:
            return await client.add(messages, args.user_id, args.session_id, system=system)
        finally:
            await llm.aclose()

    try:
        result = asyncio.run(go())
    except MessageError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    except PromptError as exc:
        raise UserError(str(exc)) from None
    except CacheMiss as exc:
        raise UserError(str(exc), ExitCode.CACHE_MISS) from None
    except ProviderError as exc:
        raise UserError(f"provider error: {exc}", ExitCode.PROVIDER) from None
    except ModelProcessDied as exc:  # nothing was written to the store
        raise UserError(str(exc), ExitCode.PROVIDER) from None
    echo(json.dumps(_added(result), ensure_ascii=False, indent=2))
    return ExitCode.OK


def _added(result: Any) -> dict[str, Any]:
    """What ``memory add`` prints: the facts, operations, profile changes and usage."""
    return {
        "facts": result.facts,
        "operations_raw": [o.as_dict() for o in result.reconciliation.raw],
        "operations_applied": [o.as_dict() for o in result.reconciliation.applied],
        "guard_events": [g.as_dict() for g in result.reconciliation.guard_events],
        "fallback": result.reconciliation.fallback,
        "parse_error": result.extraction.parse_error,
        "profile_changes": result.profile_changes,
        "profile_issues": result.extraction.profile_issues,
        "l1_raw_id": result.l1_raw_id,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
        },
    }


def cmd_memory_search(args: argparse.Namespace) -> int:
    from hy_eval.memory import MemoryStore

    at_least("--limit", args.limit, 1)
    store = MemoryStore(args.db)
    for m in store.search(args.query, args.user_id, args.limit):
        # One row per memory, tab-separated: a tab or line break inside a field is escaped.
        echo("\t".join(neutralise(v, keep="") for v in (m.id, m.owner, m.text)), keep="\t")
    return ExitCode.OK


def cmd_memory_show(args: argparse.Namespace) -> int:
    from hy_eval.memory import MemoryStore

    store = MemoryStore(args.db)
    snap = store.snapshot(args.user_id)
    for m in snap["memories"]:
        m["history"] = store.history(m["id"])
    echo(json.dumps(snap, ensure_ascii=False, indent=2))
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``memory`` sub-command and its actions."""
    memory = sub.add_parser("memory", help="try the memory pipeline by hand").add_subparsers(
        dest="memory_command", metavar="ACTION", required=True
    )
    p = memory.add_parser("add", help="add a conversation file for a user")
    p.add_argument("file", help="JSON list of messages or {messages, system}; '-' for stdin")
    p.add_argument("--user-id", required=True)
    p.add_argument("--session-id")
    p.add_argument("--db", required=True, help="SQLite store file")
    p.add_argument("--variant", default="default", help="prompt variant (default: default)")
    p.add_argument("--no-guard", action="store_true", help="switch the cross-subject guard off")
    add_model_flags(p)
    p.set_defaults(func=cmd_memory_add)
    p = memory.add_parser("search", help="full-text search of a user's memories")
    p.add_argument("query")
    p.add_argument("--user-id", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--limit", type=int, default=5)
    p.set_defaults(func=cmd_memory_search)
    p = memory.add_parser("show", help="a user's memories with history, profile and L1_RAW")
    p.add_argument("--user-id", required=True)
    p.add_argument("--db", required=True)
    p.set_defaults(func=cmd_memory_show)
