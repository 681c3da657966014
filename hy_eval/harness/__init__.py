"""The harness: labelled datasets, the runner, scoring, statistics and reports (E1-E3,
E6-E7)."""

from hy_eval.harness._casestep import run_case
from hy_eval.harness._dataset import (
    RULE_IDS,
    Case,
    DatasetError,
    HistoryCase,
    Suite,
    filter_cases,
    load_suite,
)
from hy_eval.harness._frame import cases_frame
from hy_eval.harness._plan import RunError
from hy_eval.harness._report import terminal_summary, write_reports
from hy_eval.harness._runlog import (
    CaseRecord,
    RunFolderError,
    RunLog,
    RunManifest,
    read_records,
    read_run,
)
from hy_eval.harness._runner import RunConfig, Runner
from hy_eval.harness._scoring import METRICS, CaseScore, Outcome, score_case
from hy_eval.harness._stats import ratio_with_ci

__all__ = [
    "METRICS",
    "RULE_IDS",
    "Case",
    "CaseRecord",
    "CaseScore",
    "DatasetError",
    "HistoryCase",
    "Outcome",
    "RunConfig",
    "RunError",
    "RunFolderError",
    "RunLog",
    "RunManifest",
    "Runner",
    "Suite",
    "cases_frame",
    "filter_cases",
    "load_suite",
    "ratio_with_ci",
    "read_records",
    "read_run",
    "run_case",
    "score_case",
    "terminal_summary",
    "write_reports",
]
