"""The harness: labelled datasets, the runner, scoring, statistics and reports (E1-E3,
E6-E7)."""

from hy_eval.harness.analysis._compare import CompareError
from hy_eval.harness.analysis._frame import cases_frame
from hy_eval.harness.analysis._stats import ratio_with_ci
from hy_eval.harness.datasets._perturb import parse_perturbations
from hy_eval.harness.datasets._schema import (
    RULE_IDS,
    Case,
    DatasetError,
    HistoryCase,
    Suite,
    filter_cases,
    load_suite,
)
from hy_eval.harness.gate._apply import GateVerdict, apply_gates
from hy_eval.harness.gate._gate import GateConfigError, load_gates
from hy_eval.harness.report._write import terminal_summary, write_reports
from hy_eval.harness.run._casestep import run_case
from hy_eval.harness.run._matrix import MatrixEntry, MatrixResult, run_matrix, run_suite
from hy_eval.harness.run._plan import RunError
from hy_eval.harness.run._runner import RunConfig, Runner
from hy_eval.harness.runlog._files import (
    CaseRecord,
    RunFolderError,
    RunLog,
    RunManifest,
    read_records,
    read_run,
)
from hy_eval.harness.scoring._score import METRICS, CaseScore, Outcome, score_case

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
