"""Regression gates: the gate file, the paired tests against a baseline, blessing a
baseline, and the verdict written beside a run."""

from hy_eval.harness.gate._apply import GateVerdict, apply_gates
from hy_eval.harness.gate._gate import (
    GateConfigError,
    Gates,
    bless,
    default_baseline_path,
    evaluate_outcomes,
    load_gates,
)

__all__ = [
    "GateConfigError",
    "GateVerdict",
    "Gates",
    "apply_gates",
    "bless",
    "default_baseline_path",
    "evaluate_outcomes",
    "load_gates",
]
