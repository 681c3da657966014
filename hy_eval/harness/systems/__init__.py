"""The memory systems a run can score (docs/systems.md): this package's own pipeline, and
external systems (Hy Memory's SDK, mem0) each in a virtualenv of its own, spoken to by a
worker process in JSON lines. Sits above ``gate`` and below ``run``."""

from hy_eval.harness.systems._base import (
    LOCAL_CONTEXT,
    SYSTEM_NAMES,
    CaseFailed,
    MemorySystem,
    SystemRun,
)
from hy_eval.harness.systems._external import ExternalSystem, WorkerSettings
from hy_eval.harness.systems._launch import ExternalRun
from hy_eval.harness.systems._own import OwnPipeline
from hy_eval.harness.systems._storediff import not_measured, store_run
from hy_eval.harness.systems._venv import (
    SystemInstallError,
    ensure_venv,
    requirements_file,
    worker_script,
)

__all__ = [
    "LOCAL_CONTEXT",
    "SYSTEM_NAMES",
    "CaseFailed",
    "ExternalRun",
    "ExternalSystem",
    "MemorySystem",
    "OwnPipeline",
    "SystemInstallError",
    "SystemRun",
    "WorkerSettings",
    "ensure_venv",
    "not_measured",
    "requirements_file",
    "store_run",
    "worker_script",
]
