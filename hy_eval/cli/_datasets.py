"""``datasets ACTION``: checks of the labelled dataset files.

A new action is a ``cmd_datasets_<action>`` function here (the work done in the harness,
the printing here) and one entry in :func:`register`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError, at_least

_MB = 1024 * 1024


def cmd_datasets_validate(args: argparse.Namespace) -> int:
    from hy_eval.harness import DatasetError, load_suite
    from hy_eval.harness.datasets import DATASETS_DIR

    targets = (
        [args.target]
        if args.target
        # A suite is a folder with a suite.toml; datasets/matcher_pairs holds judged pairs.
        else sorted(p.name for p in DATASETS_DIR.iterdir() if (p / "suite.toml").is_file())
    )
    problems: list[str] = []
    for target in targets:
        try:
            suite = load_suite(target)
        except DatasetError as exc:
            problems.extend(exc.problems)
        else:
            cases = suite.cases  # each access parses every case again
            langs = {lang: sum(c.lang == lang for c in cases) for lang in ("en", "zh")}
            echo(f"{suite.name}: {len(cases)} cases ok ({langs['en']} en, {langs['zh']} zh)")
            if suite.kind == "memory":
                from hy_eval.harness.datasets import check_suite_merges
                from hy_eval.harness.scoring import check_suite_gold

                problems.extend(check_suite_gold(suite))
                if not args.no_merges:
                    problems.extend(check_suite_merges(suite))
    for line in problems:
        echo(line, err=True)
    return ExitCode.USAGE if problems else ExitCode.OK


def cmd_datasets_import_locomo(args: argparse.Namespace) -> int:
    from hy_eval.harness.datasets import Limits, LocomoError, import_locomo

    limits = Limits()
    if args.max_input_mb is not None:
        at_least("--max-input-mb", args.max_input_mb, 1)
        limits.max_input_bytes = args.max_input_mb * _MB
    if args.max_output_mb is not None:
        at_least("--max-output-mb", args.max_output_mb, 1)
        limits.max_output_bytes = args.max_output_mb * _MB
    if args.max_seconds is not None:
        at_least("--max-seconds", args.max_seconds, 0.01)
        limits.max_seconds = args.max_seconds
    try:
        stats = import_locomo(
            Path(args.path), Path(args.out), history_chars=args.history_chars, limits=limits
        )
    except LocomoError as exc:
        raise UserError(str(exc)) from None
    echo(stats.text)
    return ExitCode.OK


def cmd_datasets_stats(args: argparse.Namespace) -> int:
    from hy_eval.harness import DatasetError, load_suite
    from hy_eval.harness.analysis import format_stats, suite_stats

    try:
        rates = Path(args.rates) if args.rates else None
        stats = suite_stats(load_suite(args.suite), args.discordance, rates)
    except DatasetError as exc:
        raise UserError(exc.problems) from None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    echo(json.dumps(stats.as_dict(), indent=1) if args.json else format_stats(stats))
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``datasets`` sub-command and its actions."""
    datasets = sub.add_parser("datasets", help="check dataset files").add_subparsers(
        dest="datasets_command", metavar="ACTION", required=True
    )
    p = datasets.add_parser("validate", help="report every problem as file:line: field: message")
    p.add_argument("target", nargs="?", help="suite name, folder or .jsonl file (default: all)")
    p.add_argument(
        "--no-merges",
        action="store_true",
        help="skip the check that every untouched memory can catch a cross-subject merge",
    )
    p.set_defaults(func=cmd_datasets_validate)
    p = datasets.add_parser("import-locomo", help="LoCoMo conversations as a suite folder")
    p.add_argument("path", help="LoCoMo zip, folder of conversation JSON files, or a JSON list")
    p.add_argument("--out", required=True, help="suite folder to write (locomo.jsonl)")
    p.add_argument(
        "--history-chars",
        type=int,
        default=6000,
        help="characters of earlier turns per case as history (whole session parts; 0: none)",
    )
    # Unset: the limits of hy_eval/harness/datasets/_locomo_limits.py, which says why each is what
    # it is (the help repeats them; a test checks that it does so correctly).
    p.add_argument(
        "--max-input-mb",
        type=int,
        help="MB of JSON read at most, zip members once inflated (default: 32)",
    )
    p.add_argument("--max-output-mb", type=int, help="MB of suite written at most (default: 512)")
    p.add_argument(
        "--max-seconds", type=float, help="seconds the import may take at most (default: 600)"
    )
    p.set_defaults(func=cmd_datasets_import_locomo)
    p = datasets.add_parser("stats", help="what a suite can measure: counts, duplicates, power")
    p.add_argument("suite", help="suite name, folder or .jsonl file")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument(
        "--discordance",
        type=float,
        help="share of units two variants disagree on, for the MDE (default: 2p(1-p))",
    )
    p.add_argument(
        "--rates",
        metavar="RUN",
        help="a run folder, summary.json or baseline whose metric values the MDE assumes "
        "(default: the suite's baseline), e.g. a real model's run",
    )
    p.set_defaults(func=cmd_datasets_stats)
