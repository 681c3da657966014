"""What a run prints while its cases run: a progress bar on a terminal, a line every 10%
otherwise (CI logs)."""

from __future__ import annotations

import sys
import time
from typing import Any

from hy_eval._terminal import echo
from hy_eval.llm import LLMClient


def structured_note(llm: LLMClient) -> str:
    """ ", structured output json_object_schema (probe)" for the start line, when the
    provider has a mode to tell (openai)."""
    choice = getattr(llm.provider, "structured_choice", None)
    return f", structured output {choice['mode']} ({choice['chosen_by']})" if choice else ""


class Progress:
    """A tqdm bar on a terminal; a line every 10% otherwise (CI logs)."""

    def __init__(self, total: int, done: int, llm: LLMClient, *, enabled: bool) -> None:
        self.total, self.done, self.llm = total, done, llm
        self.initial = done
        self.errors = 0
        self.bar: Any = None
        self.enabled = enabled
        self.started = time.perf_counter()
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, unit="case", dynamic_ncols=True)

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += error
        s = self.llm.stats
        info = {
            "calls": s.calls,
            "hits": s.cache_hits,
            "tok": s.usage.input_tokens + s.usage.output_tokens,
            "err": self.errors,
        }
        if self.bar is not None:
            self.bar.set_postfix(info, refresh=False)
            self.bar.update(1)
        elif self.enabled and (
            self.done == self.total or self.done % max(1, self.total // 10) == 0
        ):
            elapsed = time.perf_counter() - self.started
            ran = self.done - self.initial
            eta = elapsed / ran * (self.total - self.done) if ran else 0.0
            echo(
                f"  {self.done}/{self.total} cases, {elapsed:.0f} s, ETA {eta:.0f} s, "
                f"calls {info['calls']}, "
                f"cache hits {info['hits']}, tokens {info['tok']}, errors {info['err']}",
                err=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
