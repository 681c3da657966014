"""The harness: labelled datasets, the runner, scoring, statistics and reports (E1-E3,
E6-E7)."""

from hy_eval.harness.analysis import CompareError, cases_frame, ratio_with_ci
from hy_eval.harness.datasets import (
    RULE_IDS,
    Case,
    DatasetError,
    HistoryCase,
    Suite,
    filter_cases,
    load_suite,
    parse_perturbations,
)
from hy_eval.harness.gate import GateConfigError, GateVerdict, apply_gates, load_gates
from hy_eval.harness.report import terminal_summary, write_reports
from hy_eval.harness.run import (
    MatrixEntry,
    MatrixResult,
    RunConfig,
    RunError,
    Runner,
    run_case,
    run_matrix,
    run_suite,
)
from hy_eval.harness.runlog import (
    CaseRecord,
    RunFolderError,
    RunLog,
    RunManifest,
    read_records,
    read_run,
)
from hy_eval.harness.scoring import METRICS, CaseScore, Outcome, score_case

__all__ = [
    "METRICS",
    "RULE_IDS",
    "Case",
    "CaseRecord",
    "CaseScore",
    "CompareError",
    "DatasetError",
    "GateConfigError",
    "GateVerdict",
    "HistoryCase",
    "MatrixEntry",
    "MatrixResult",
    "Outcome",
    "RunConfig",
    "RunError",
    "RunFolderError",
    "RunLog",
    "RunManifest",
    "Runner",
    "Suite",
    "apply_gates",
    "cases_frame",
    "filter_cases",
    "load_gates",
    "load_suite",
    "parse_perturbations",
    "ratio_with_ci",
    "read_records",
    "read_run",
    "run_case",
    "run_matrix",
    "run_suite",
    "score_case",
    "terminal_summary",
    "write_reports",
]
