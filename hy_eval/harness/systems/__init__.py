"""The memory systems a run can score (docs/systems.md): this package's own pipeline, and
external systems (Hy Memory's SDK, mem0) each in a virtualenv of its own, spoken to by a
worker process in JSON lines. Sits above ``gate`` and below ``run``."""

from hy_eval.harness.systems._venv import (
    SystemInstallError,
    ensure_venv,
    requirements_file,
    worker_script,
)

__all__ = ["SystemInstallError", "ensure_venv", "requirements_file", "worker_script"]
