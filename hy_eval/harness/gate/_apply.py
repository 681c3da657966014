"""Applying gates to a finished run: the verdict, also written to ``RUN/gates.json``.

``_gate.py`` decides (thresholds, paired tests against the baseline); this module is the
step the ``run`` command takes after a run: evaluate, keep the verdict beside the run,
hand back the text and whether the gates hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hy_eval.harness.gate._gate import Gates, evaluate, gate_text
from hy_eval.harness.runlog import GatesFile, RunSummary, write_gates_file


@dataclass(frozen=True)
class GateVerdict:
    """The outcome of :func:`apply_gates`."""

    #: No gate failed (warnings allowed).
    passed: bool
    #: The lines for the terminal: failures, warnings and the gates that hold.
    text: str
    #: Where the verdict was written (``RUN/gates.json``).
    path: Path


def apply_gates(
    gates: Gates,
    summary: RunSummary,
    run_dir: Path,
    baseline: str | Path | None,
) -> GateVerdict:
    """Check the run in ``run_dir`` (whose summary is ``summary``, or its JSON data)
    against ``gates`` and, where a gate needs one, the baseline (``baseline``, else the
    gates file's, else ``reports/baselines/<suite>.json``). Raises ``GateConfigError`` or
    ``CompareError`` for a baseline that is missing or cannot be compared."""
    result = evaluate(gates, summary, run_dir, baseline)
    verdict = GatesFile(
        failures=result.failures,
        untested=result.untested,
        warnings=result.warnings,
        comparison=result.comparison,
    )
    path = write_gates_file(run_dir, verdict)
    return GateVerdict(result.ok, gate_text(result), path)
