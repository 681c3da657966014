"""Command-line interface: ``hy-eval``, ``python -m hy_eval`` and ``run_eval.py``.

Parsing and printing only; the work is done by the public functions of ``hy_eval.harness``,
``hy_eval.memory`` and ``hy_eval.llm``. One module per command family, each with a
``register(sub)`` that adds its parsers.

Exit codes (``hy_eval._exitcodes.ExitCode``; README, docs/ci.md): 0 success; 1 a gate
failed; 2 usage, configuration or input error (one line on stderr, never a traceback);
3 provider errors above the tolerance; 4 a cache miss in replay-only mode; 130 interrupted.

Heavy modules (pandas, matplotlib, vendor SDKs, llama.cpp) are imported inside the
commands that use them, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import sys
from collections.abc import Sequence

from hy_eval._exitcodes import ExitCode, InterruptedRun
from hy_eval._terminal import echo, echo_lines
from hy_eval.cli import (
    _cache,
    _compare,
    _conversation,
    _datasets,
    _matchers,
    _memory,
    _report,
    _run,
    _serve,
)
from hy_eval.cli._errors import UserError

#: Sub-command names; anything else as the first argument means ``run``.
COMMANDS = (
    "run",
    "render",
    "parse-history",
    "cache",
    "memory",
    "datasets",
    "compare",
    "table",
    "baseline",
    "cassette",
    "matchers",
    "report",
    "serve",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hy-eval",
        description="Evaluate multi-speaker memory prompts. With no sub-command, runs 'run'.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _conversation.register(sub)
    _cache.register(sub)
    _run.register(sub)
    _compare.register(sub)
    _cache.register_cassette(sub)
    _datasets.register(sub)
    _memory.register(sub)
    _matchers.register(sub)
    _report.register(sub)
    _serve.register(sub)
    # ``python run_eval.py --help`` is the run command's help: it names the others too.
    others = ", ".join(c for c in COMMANDS if c != "run")
    sub.choices["run"].epilog = (
        f"Other commands: {others}. 'python run_eval.py COMMAND --help' (or 'hy-eval "
        "COMMAND --help') shows each one's options."
    )
    return parser


def _enable_faulthandler() -> None:
    """A native crash (a model library's segfault) prints where it happened on stderr."""
    if faulthandler.is_enabled():
        return
    with contextlib.suppress(AttributeError, OSError, ValueError):  # stderr without a fd
        faulthandler.enable()


def main(argv: Sequence[str] | None = None) -> int:
    _enable_faulthandler()
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list or (args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "run")
    args = parser.parse_args(args_list)
    try:
        return int(args.func(args))
    except UserError as exc:
        first, *more = exc.lines or ("",)
        echo_lines([f"hy-eval: error: {first}", *more], err=True)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        if not isinstance(exc, InterruptedRun):  # else the run has said what it kept
            echo("hy-eval: interrupted", err=True)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK


__all__ = ["COMMANDS", "UserError", "build_parser", "main"]
