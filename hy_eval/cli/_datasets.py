"""``datasets ACTION``: checks of the labelled dataset files.

A new action is a ``cmd_datasets_<action>`` function here (the work done in the harness,
the printing here) and one entry in :func:`register`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hy_eval._exitcodes import ExitCode


def cmd_datasets_validate(args: argparse.Namespace) -> int:
    from hy_eval.harness import DatasetError, load_suite
    from hy_eval.harness._dataset import DATASETS_DIR

    targets = (
        [args.target]
        if args.target
        else sorted(p.name for p in DATASETS_DIR.iterdir() if p.is_dir())
    )
    problems: list[str] = []
    for target in targets:
        try:
            suite = load_suite(target)
        except DatasetError as exc:
            problems.extend(exc.problems)
        else:
            langs = {lang: sum(c.lang == lang for c in suite.cases) for lang in ("en", "zh")}
            print(f"{suite.name}: {len(suite.cases)} cases ok ({langs['en']} en, {langs['zh']} zh)")
    for line in problems:
        print(line, file=sys.stderr)
    return ExitCode.USAGE if problems else ExitCode.OK


def register(sub: Any) -> None:
    """The ``datasets`` sub-command and its actions."""
    datasets = sub.add_parser("datasets", help="check dataset files").add_subparsers(
        dest="datasets_command", metavar="ACTION", required=True
    )
    p = datasets.add_parser("validate", help="report every problem as file:line: field: message")
    p.add_argument("target", nargs="?", help="suite name, folder or .jsonl file (default: all)")
    p.set_defaults(func=cmd_datasets_validate)
