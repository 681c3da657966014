"""What a run prints while its cases run, on stderr: on a terminal one status line
redrawn every second (the phase, the case running and for how long, the ETA); otherwise
(CI logs) a line every 10%. ``--quiet`` turns both off."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

from hy_eval._terminal import echo, neutralise
from hy_eval.llm import LLMClient


def structured_note(llm: LLMClient) -> str:
    """ ", structured output json_object_schema (probe)" for the start line, when the
    provider has a mode to tell (openai)."""
    choice = getattr(llm.provider, "structured_choice", None)
    return f", structured output {choice['mode']} ({choice['chosen_by']})" if choice else ""


def clock(seconds: float) -> str:
    """``42 s``, ``3:07``, ``1:02:03``: a duration for the status line."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class Progress:
    """Counts the cases as they start and finish and says where the run is.

    The ETA is the mean time of the cases finished in this run (records reused from the
    cache left out: they take no time) times the cases left, divided by the cases run at
    once; there is none before the first case has finished. ``clock_s`` and ``stream``
    are for tests."""

    def __init__(
        self,
        total: int,
        done: int,
        llm: LLMClient,
        *,
        enabled: bool,
        concurrency: int = 1,
        stream: TextIO | None = None,
        clock_s: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.total, self.done, self.llm = total, done, llm
        self.errors = 0
        self.enabled = enabled
        self.concurrency = max(1, concurrency)
        self._stream = stream
        self._now = clock_s
        self.started = clock_s()
        #: Running cases: label -> (its number in the run, when it started).
        self.running: dict[str, tuple[int, float]] = {}
        self._numbered = done
        self._ran_s: list[float] = []
        self._drawn = 0  # width of the status line on screen (0: none)
        self.tty = enabled and (stream.isatty() if stream is not None else sys.stderr.isatty())

    # -- events ----------------------------------------------------------------------

    def start(self, label: str) -> None:
        self._numbered += 1
        self.running[label] = (self._numbered, self._now())

    def finish(self, label: str, error: bool, *, reused: bool = False) -> None:
        number_started = self.running.pop(label, None)
        self.done += 1
        self.errors += error
        if number_started is not None and not reused:
            self._ran_s.append(self._now() - number_started[1])
        if (
            not self.tty
            and self.enabled
            and (self.done == self.total or self.done % max(1, self.total // 10) == 0)
        ):
            echo("  " + self.summary_text(), err=True)

    # -- text ------------------------------------------------------------------------

    def eta_s(self) -> float | None:
        """Seconds left, from the measured mean per case; ``None`` before the first."""
        if not self._ran_s:
            return None
        mean = sum(self._ran_s) / len(self._ran_s)
        return mean * (self.total - self.done) / self.concurrency

    def phase_text(self) -> str:
        """``loading the model (12 s), case 1 of 457: ms-0001 (12 s)``: what runs now."""
        now = self._now()
        parts = []
        status = getattr(self.llm.provider, "status", None)
        phase = status() if status is not None else None
        if phase:
            parts.append(phase)
        if self.running:
            label, (number, since) = min(self.running.items(), key=lambda kv: kv[1][1])
            more = len(self.running) - 1
            parts.append(
                f"case {number} of {self.total}: {label} ({clock(now - since)})"
                + (f" and {more} more" if more else "")
            )
        elif self.done < self.total:
            parts.append("starting")
        return ", ".join(parts)

    def summary_text(self) -> str:
        """``12/457 cases, 1:02 elapsed, 4.1 s/case, ETA 30:12, calls ...``."""
        s = self.llm.stats
        text = f"{self.done}/{self.total} cases, {clock(self._now() - self.started)} elapsed"
        eta = self.eta_s()
        if eta is not None:
            mean = sum(self._ran_s) / len(self._ran_s)
            text += f", {mean:.1f} s/case, ETA {clock(eta)}"
        tokens = s.usage.input_tokens + s.usage.output_tokens
        return (
            f"{text}, calls {s.calls}, cache hits {s.cache_hits}, tokens {tokens}, "
            f"errors {self.errors}"
        )

    def status_text(self) -> str:
        phase = self.phase_text()
        return f"{phase} | {self.summary_text()}" if phase else self.summary_text()

    # -- the terminal line -----------------------------------------------------------

    def draw(self) -> None:
        """Redraw the status line in place (a terminal only), cut to the terminal's
        width so that it never wraps (a wrapped line could not be redrawn)."""
        if not self.tty:
            return
        width = shutil.get_terminal_size((100, 20)).columns - 1
        line = neutralise(self.status_text(), keep="")[:width]
        self._write("\r" + line.ljust(self._drawn))
        self._drawn = len(line)

    def close(self) -> None:
        """Clear the status line, so that what follows starts on a clean line."""
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _write(self, text: str) -> None:
        echo(text, err=True, keep="\r", end="", flush=True, stream=self._stream)
