"""What a run prints while its cases run, on stderr: on a terminal one status line
redrawn every second (the cases done and the ETA first, then the phase and the case
running and for how long); otherwise
(CI logs) a line every 10%. ``--quiet`` turns both off."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable, Mapping
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


#: The work of a case that its conversation does not show, in estimated prompt tokens:
#: the system prompt with its examples (about 1,000 to 1,500 tokens in prompts/default) and
#: the answer. Added to every case's weight, so a short case still costs something.
CASE_OVERHEAD_TOKENS = 1200.0


def estimated_tokens(text: str) -> float:
    """Prompt tokens of ``text``, estimated without a tokenizer: a CJK character is about
    one token, other text about four characters a token."""
    cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
    return cjk + (len(text) - cjk) / 4


def case_weight(line: str) -> float:
    """A case's expected work from its dataset line, before it runs: the estimated prompt
    tokens of its conversation and existing memories, plus ``CASE_OVERHEAD_TOKENS``. A
    line that is not a case object weighs the overhead alone (the run reports it)."""
    try:
        case = json.loads(line)
    except ValueError:
        return CASE_OVERHEAD_TOKENS
    if not isinstance(case, dict):
        return CASE_OVERHEAD_TOKENS
    messages, existing = case.get("messages"), case.get("existing")
    messages = messages if isinstance(messages, list) else []
    existing = existing if isinstance(existing, list) else []
    parts = [m.get("content") for m in messages if isinstance(m, dict)]
    parts += [m.get("text") for m in existing if isinstance(m, dict)]
    text = "".join(p for p in parts if isinstance(p, str))
    return CASE_OVERHEAD_TOKENS + estimated_tokens(text)


class Progress:
    """Counts the cases as they start and finish and says where the run is.

    The ETA comes from the work left, not from the cases left: each case's weight
    (``case_weight``: its prompt tokens, estimated from its line before it runs) times the
    seconds per unit of weight measured on the cases finished in this run (records reused
    from the cache left out: they take no time), less what the running cases have already
    spent, divided by the cases run at once; none before the first case has finished.
    Without ``weights`` every case weighs the same. ``clock_s`` and ``stream`` are for
    tests."""

    def __init__(
        self,
        total: int,
        done: int,
        llm: LLMClient,
        *,
        enabled: bool,
        concurrency: int = 1,
        weights: Mapping[str, float] | None = None,
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
        self._weights = dict(weights or {})
        #: The weight of the cases not finished yet (those running included).
        self._left_w = sum(self._weights.values()) if self._weights else float(total - done)
        self._ran_w = 0.0  # the weight of the cases whose time is in ``_ran_s``
        self._drawn = 0  # width of the status line on screen (0: none)
        self.tty = enabled and (stream.isatty() if stream is not None else sys.stderr.isatty())

    def _weight(self, label: str) -> float:
        return self._weights.get(label, 1.0) if self._weights else 1.0

    # -- events ----------------------------------------------------------------------

    def start(self, label: str) -> None:
        self._numbered += 1
        self.running[label] = (self._numbered, self._now())

    def finish(self, label: str, error: bool, *, reused: bool = False) -> None:
        number_started = self.running.pop(label, None)
        self.done += 1
        self.errors += error
        weight = self._weight(label)
        self._left_w = max(0.0, self._left_w - weight)
        if number_started is not None and not reused:
            self._ran_s.append(self._now() - number_started[1])
            self._ran_w += weight
        if (
            not self.tty
            and self.enabled
            and (self.done == self.total or self.done % max(1, self.total // 10) == 0)
        ):
            echo("  " + self.summary_text(), err=True)

    # -- text ------------------------------------------------------------------------

    def eta_s(self) -> float | None:
        """Seconds left: the work left at the measured seconds per unit of work, less what
        the running cases have spent, shared among the cases run at once; ``None`` before
        the first case has finished."""
        if not self._ran_s or self._ran_w <= 0:
            return None
        rate = sum(self._ran_s) / self._ran_w
        now = self._now()
        spent = sum(now - since for _, since in self.running.values())
        return max(0.0, rate * self._left_w - spent) / self.concurrency

    def seconds_per_case(self) -> float | None:
        """Wall-clock seconds per finished case with ``concurrency`` cases at once: each
        case's measured time shared among the cases that ran beside it."""
        if not self._ran_s:
            return None
        return sum(self._ran_s) / len(self._ran_s) / self.concurrency

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

    def head_text(self) -> str:
        """``12/457 cases, ETA 30:12``: what the status line shows first, so that a
        narrow terminal cuts anything but it."""
        eta = self.eta_s()
        return f"{self.done}/{self.total} cases" + (
            f", ETA {clock(eta)}" if eta is not None else ""
        )

    def rest_text(self) -> str:
        """``1:02 elapsed, 2.1 s/case (2 at once), calls ...``: the counts after the head."""
        s = self.llm.stats
        text = f"{clock(self._now() - self.started)} elapsed"
        per_case = self.seconds_per_case()
        if per_case is not None:
            at_once = f" ({self.concurrency} at once)" if self.concurrency > 1 else ""
            text += f", {per_case:.1f} s/case{at_once}"
        tokens = s.usage.input_tokens + s.usage.output_tokens
        return (
            f"{text}, calls {s.calls}, cache hits {s.cache_hits}, tokens {tokens}, "
            f"errors {self.errors}"
        )

    def summary_text(self) -> str:
        """``12/457 cases, ETA 30:12, 1:02 elapsed, 2.1 s/case, calls ...``."""
        return f"{self.head_text()}, {self.rest_text()}"

    def status_text(self) -> str:
        """The head, then the phase (what runs now), then the counts."""
        phase = self.phase_text()
        parts = [self.head_text(), phase, self.rest_text()] if phase else [self.summary_text()]
        return " | ".join(parts)

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
