"""``report``: the summary and reports of a run folder, finished or not."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError


def cmd_report(args: argparse.Namespace) -> int:
    from hy_eval.harness.report import report_folder, terminal_summary
    from hy_eval.harness.runlog import RunFolderError

    run_dir = Path(args.run_dir)
    try:
        summary = report_folder(run_dir)
    except RunFolderError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"{run_dir}: cannot write the reports ({exc.strerror})") from None
    echo(terminal_summary(summary, run_dir))
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``report`` sub-command."""
    p = sub.add_parser(
        "report",
        help="write summary.json and the reports of a run folder, marked partial if the "
        "run was interrupted",
    )
    p.add_argument("run_dir", help="the run folder (reports/<run>)")
    p.set_defaults(func=cmd_report)
