"""Running a suite: the config, the plan, the runner and its case step, the batch path,
run-folder locking and resume, record reuse, progress, perturbed and matrix runs."""

from hy_eval.harness.run._batch import judge_pairs_by_folder
from hy_eval.harness.run._casestep import run_case
from hy_eval.harness.run._cassette import record_cassette
from hy_eval.harness.run._config import FOLDER_KEY, RunConfig
from hy_eval.harness.run._folder import LOCK_NAME
from hy_eval.harness.run._matrix import (
    MatrixEntry,
    MatrixResult,
    combination_name,
    flipped_sections,
    metric_table,
    run_matrix,
    tabulate_runs,
)
from hy_eval.harness.run._perturbed import run_with_perturbations
from hy_eval.harness.run._plan import RunError, resume_settings
from hy_eval.harness.run._progress import Progress, clock
from hy_eval.harness.run._runner import Runner
from hy_eval.harness.run._suite import run_suite

__all__ = [
    "FOLDER_KEY",
    "LOCK_NAME",
    "MatrixEntry",
    "MatrixResult",
    "Progress",
    "RunConfig",
    "RunError",
    "Runner",
    "clock",
    "combination_name",
    "flipped_sections",
    "judge_pairs_by_folder",
    "metric_table",
    "record_cassette",
    "resume_settings",
    "run_case",
    "run_matrix",
    "run_suite",
    "run_with_perturbations",
    "tabulate_runs",
]
