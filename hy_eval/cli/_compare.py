"""``compare`` and ``baseline bless``: two finished runs side by side, and the run that
later runs are gated against."""

from __future__ import annotations

import argparse
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError


def cmd_compare(args: argparse.Namespace) -> int:
    from hy_eval.harness.analysis import CompareError, compare, run_outcomes
    from hy_eval.harness.report import comparison_text

    # Checked before anything is computed, printed or written: a wrong --label is refused
    # alone, without a comparison on the terminal and a --json file left behind.
    labels = args.label or []
    if labels and len(labels) != 2:
        raise UserError("--label names both runs: give it twice, for A then for B")
    try:
        result = compare(
            run_outcomes(args.run_a),
            run_outcomes(args.run_b),
            common_only=args.common_only,
            mixed_matchers=args.mixed_matchers,
        )
    except CompareError as exc:
        raise UserError(str(exc)) from None
    echo(comparison_text(result))
    if args.json:
        from hy_eval.harness.runlog import write_comparison

        write_comparison(args.json, result)
    if args.html:
        from hy_eval.harness.report import write_compare_page

        try:
            page = write_compare_page(
                args.html,
                result,
                args.run_a,
                args.run_b,
                (labels[0], labels[1]) if labels else None,
            )
        except OSError as exc:
            raise UserError(f"{args.html}: cannot write the page ({exc.strerror})") from None
        echo(f"comparison page: {page}")
    return ExitCode.OK


def cmd_table(args: argparse.Namespace) -> int:
    """Finished runs side by side: the matrix files of runs made apart."""
    from pathlib import Path

    from hy_eval.harness.run import RunError, tabulate_runs

    try:
        result = tabulate_runs([Path(d) for d in args.run_dirs], Path(args.out))
    except RunError as exc:
        raise UserError(str(exc), exc.exit_code) from None
    echo(result.text)
    echo(f"table: {result.report}")
    for page in result.pages:
        echo(f"comparison page: {page}")
    return ExitCode.OK


def cmd_baseline_bless(args: argparse.Namespace) -> int:
    from hy_eval.harness import CompareError, GateConfigError
    from hy_eval.harness.gate import bless
    from hy_eval.harness.runlog import read_baseline

    try:
        path, before = bless(args.run_dir, args.out, force=args.force)
    except (GateConfigError, CompareError) as exc:
        raise UserError(str(exc)) from None
    after = len(read_baseline(path).cases)
    change = "" if before is None else f" (it held {before})"
    echo(f"baseline written: {path}: {after} cases{change}")
    if before is not None and after < before:
        echo(
            f"hy-eval: warning: the baseline shrank from {before} to {after} cases (--force): "
            "gates against it now see only these",
            err=True,
        )
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``compare`` and ``baseline`` sub-commands."""
    p = sub.add_parser("compare", help="paired comparison of two run folders")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument(
        "--common-only",
        action="store_true",
        help="compare the shared case ids even when the datasets differ",
    )
    p.add_argument(
        "--mixed-matchers",
        action="store_true",
        help="compare runs whose facts were matched by different --matcher (refused otherwise)",
    )
    p.add_argument("--json", help="also write the comparison as JSON here")
    p.add_argument(
        "--html",
        metavar="OUT",
        help="also write the comparison page here: differences by language, rule and tag, "
        "every changed case side by side",
    )
    p.add_argument(
        "--label",
        action="append",
        metavar="NAME",
        help="the page's name for A, then (given again) for B; default: the runs' labels, "
        "with their folder names when the labels are the same",
    )
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "table",
        help="finished runs side by side (a matrix of runs made apart, e.g. of several "
        "systems), each compared with the first",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", required=True, help="folder for matrix.md, matrix.json and pages")
    p.set_defaults(func=cmd_table)

    baseline = sub.add_parser("baseline", help="bless a run as the baseline").add_subparsers(
        dest="baseline_command", metavar="ACTION", required=True
    )
    p = baseline.add_parser("bless", help="write reports/baselines/<suite>.json from a run")
    p.add_argument("run_dir")
    p.add_argument("--out", help="baseline path (default reports/baselines/<suite>.json)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace a baseline over more cases, or of another suite or matcher",
    )
    p.set_defaults(func=cmd_baseline_bless)
