"""Vendors' batch APIs: the engine that submits rounds and keeps their state (``_engine``),
the OpenAI and Anthropic Files and Batches endpoints (``_vendors``), a folder standing in
for a vendor (``_folder``), the spool of requests a round collects (``_spool``) and the
batch path behind ``hy-eval serve`` (``_serve``). Above ``providers``."""

from hy_eval.llm.batch._engine import (
    STATE_NAME,
    BatchEngine,
    BatchesWaiting,
    BatchState,
    RoundReport,
)
from hy_eval.llm.batch._folder import FolderBatches, OfflineProvider
from hy_eval.llm.batch._serve import ROUNDS_LIMIT, BatchServe
from hy_eval.llm.batch._spool import SPOOL_NAME, RequestSpool

__all__ = [
    "ROUNDS_LIMIT",
    "SPOOL_NAME",
    "STATE_NAME",
    "BatchEngine",
    "BatchServe",
    "BatchState",
    "BatchesWaiting",
    "FolderBatches",
    "OfflineProvider",
    "RequestSpool",
    "RoundReport",
]
