"""``run_suite``: the entry of every run the command line starts, a plain run or one with
its perturbed runs (``run/_perturbed.py``); matrix runs call it once per combination."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hy_eval.harness.datasets import Suite
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._runner import Runner
from hy_eval.harness.runlog import RunSummary


def run_suite(
    config: RunConfig,
    perturbations: Sequence[str] = (),
    seed: int = 0,
    *,
    suite: Suite | None = None,
) -> tuple[Path, RunSummary, int]:
    """One run and, with ``perturbations``, a run per perturbation under
    ``RUN/perturb/<name>/``. ``suite``: ``config.suite`` already loaded (it is then not
    loaded again). Returns the run folder, its summary (as ``summary.json`` holds it) and
    the exit code; raises ``RunError``."""
    if not perturbations:
        return Runner(config, suite).run()
    from hy_eval.harness.run._perturbed import run_with_perturbations

    return run_with_perturbations(config, list(perturbations), seed)
