"""The harness: labelled datasets, the runner, scoring, statistics and reports (E1-E3,
E6-E7)."""

from hy_eval.harness._casestep import run_case
from hy_eval.harness._compare import CompareError
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
from hy_eval.harness._gate import GateConfigError, load_gates
from hy_eval.harness._gating import GateVerdict, apply_gates
from hy_eval.harness._matrix import MatrixEntry, MatrixResult, run_matrix, run_suite
from hy_eval.harness._perturb import parse_perturbations
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
