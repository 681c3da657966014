"""The process exit codes of every command (README, docs/ci.md), shared by CLI and harness."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``hy-eval`` / ``run_eval.py`` process returns."""

    #: Success.
    OK = 0
    #: A gate failed (regression, threshold, consistency) or a history suite case failed.
    GATE = 1
    #: Usage, configuration or input error: one line on stderr, never a traceback.
    USAGE = 2
    #: Provider errors above the tolerance, or the model stopped the run.
    PROVIDER = 3
    #: A cache miss in replay-only mode.
    CACHE_MISS = 4
    #: ``--batch-dir``: a round's requests were written to the batch folder and wait for
    #: their answers; the message names the files and the command that continues.
    BATCH_WAITING = 5
    #: Interrupted (SIGINT).
    INTERRUPTED = 130


class InterruptedRun(KeyboardInterrupt):
    """Ctrl-C that the code which caught it has already told the user about (what was kept,
    how to resume): the command line exits 130 without a line of its own."""
