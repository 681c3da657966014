"""The runner's pool of case workers under Ctrl-C: what a first and a second SIGINT do,
and the status line's clock."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.harness.run._progress import Progress
from hy_eval.llm import LLMClient

#: Seconds a first Ctrl-C leaves the cases in progress to end (a remote call in flight
#: may still bring its answer, which is cached) before they are cancelled.
INTERRUPT_GRACE_S = 1.0


async def gather_until_sigint(
    tasks: list[asyncio.Task[None]], stop: asyncio.Event, interrupt: Callable[[], None]
) -> None:
    """Wait for ``tasks``. A first SIGINT sets ``stop``, says so once and calls
    ``interrupt`` (no new case; model calls abandoned where they can be); the tasks still
    running :data:`INTERRUPT_GRACE_S` later are cancelled. A second SIGINT ends the
    process at once (exit 130): records and answers are written as they come, so nothing
    received is lost. ``stop`` is checked by the workers too: Python 3.10-3.11's
    ``wait_for`` can lose a cancellation that lands as a call completes."""
    loop = asyncio.get_running_loop()

    def cancel_all() -> None:
        for t in tasks:
            t.cancel()

    def on_sigint() -> None:
        if stop.is_set():
            interrupt()  # the local model's process again, in case it was restarted
            echo("hy-eval: Ctrl-C again: quitting now", err=True, flush=True)
            os._exit(ExitCode.INTERRUPTED)
        stop.set()
        # No "Ctrl-C again" hint: the run is usually over before anyone could press it,
        # and a hint printed after the prompt is back reads as a question left open.
        echo(
            f"\nhy-eval: interrupted: no new case starts; a case still running stops within "
            f"{INTERRUPT_GRACE_S:g} s and its unfinished model answer is discarded (a resume "
            "runs that case again); every answer received is kept",
            err=True,
            flush=True,
        )
        interrupt()
        loop.call_later(INTERRUPT_GRACE_S, cancel_all)

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        handles_sigint = True
    except (NotImplementedError, RuntimeError, ValueError):
        handles_sigint = False  # not the main thread (tests run runners in threads)
    try:
        # Not gather: the producer, cancelled by ``interrupt``, must not end the wait
        # before the workers' grace period; a task's exception still ends it at once.
        pending: set[asyncio.Task[None]] = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                error = None if t.cancelled() else t.exception()
                if error is not None:
                    raise error
    except asyncio.CancelledError:
        if not stop.is_set():
            raise
    finally:
        if handles_sigint:
            loop.remove_signal_handler(signal.SIGINT)
        cancel_all()
        await asyncio.gather(*tasks, return_exceptions=True)


def interrupter(
    producer: asyncio.Task[None],
    queue: asyncio.Queue[Any],
    workers: int,
    clients: Sequence[LLMClient],
) -> Callable[[], None]:
    """What a first Ctrl-C does to the pool: no new case (the producer stops, queued
    cases are dropped, idle workers are told to stop), and the clients abandon what they
    can (the local model's process is killed)."""

    def interrupt() -> None:
        producer.cancel()
        while not queue.empty():
            queue.get_nowait()
        for _ in range(workers):
            queue.put_nowait(None)
        for client in clients:
            client.interrupt()

    return interrupt


async def tick_every_second(progress: Progress) -> None:
    """Redraw the status line every second: its clocks move while a call takes minutes."""
    while True:
        progress.draw()
        await asyncio.sleep(1.0)
