"""What a run through an external system starts once: the system's environment (made
on first use), and ``hy-eval serve`` on 127.0.0.1 in front of the run's model settings,
so the system's model calls go through our cache, cassette, retries and accounting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hy_eval.harness.systems._external import ExternalSystem, WorkerSettings
from hy_eval.harness.systems._venv import ensure_venv
from hy_eval.llm import EMBEDDING_MODEL, LLMClient, LLMServer, ModelOptions, PriceTable, Usage


class ExternalRun:
    """The model server and the worker settings of one run through system ``name``.
    Raises ``SystemInstallError`` when the environment cannot be made and the LLM layer's
    ``ConfigError`` when the model cannot be set up; :meth:`stop` ends the server."""

    def __init__(
        self,
        name: str,
        options: ModelOptions,
        prices: PriceTable,
        workdir: Path,
        *,
        case_timeout: float,
        client: LLMClient | None = None,
    ) -> None:
        python = ensure_venv(name)
        self.prices = prices
        # ``client``: a client of the caller's (``--batch-dir``: serve's cache-or-spool mode).
        self.server = LLMServer(options, prices=prices, client=client).start()
        self._counted = Usage()
        self.settings = WorkerSettings(
            name,
            python,
            self.server.url,
            self.server.model,
            embed_model=EMBEDDING_MODEL,
            workdir=workdir,
            case_timeout=case_timeout,
            token=self.server.token,
        )

    def system(self) -> ExternalSystem:
        """A system with a worker of its own (one per case running at once)."""
        return ExternalSystem(self.settings, lambda: self.server.first_miss, self.spent)

    def spent(self) -> dict[str, Any]:
        """A case record's ``tokens`` and ``cost_usd``: what the server counted since the
        last case ended, for all the run's workers together (they share one event loop).
        Exact with one case at a time; with several at once, the calls of cases running
        beside it are counted in whichever ends first, so only the run's total is exact."""
        client = self.server.client
        total = client.stats.usage
        used = Usage(
            total.input_tokens - self._counted.input_tokens,
            total.output_tokens - self._counted.output_tokens,
        )
        self._counted = total
        return {
            "tokens": {"input": used.input_tokens, "output": used.output_tokens},
            "cost_usd": self.prices.cost(client.provider.model, used),
        }

    def stop(self) -> None:
        self.server.stop()
