"""``hy-eval serve``'s cache-or-spool mode, for programs that are not ours (external
memory systems, ``run --system hy_memory|mem0 --batch-dir DIR``, or ``serve --batch-dir``):
a chat call whose answer is in the cache is answered from it; any other is kept and
answered with an error the caller's SDK sees (HTTP 502, ``upstream_other``, naming the
folder). When serving ends, the kept requests not yet answered are written to the batch
folder as one OpenAI Batch input file (``_folder.py``), and the next time, before
serving, the results files placed beside them are read into the cache, validated as any
batch result is (``_engine.py``). So each round lets the caller get one model call further.

The requests are kept in a SQLite file (``serve_requests.sqlite``) beside the kept batch
ids (``batches.json``): a request is written to the folder once while its file waits, and
again after an unusable answer (up to the retries), as in a run's rounds.

Requests must repeat byte for byte from one round to the next to find their answers (the
external systems' clocks are pinned for that). A request that changes each time (a time
stamp or a random id in a prompt) never finds its answer: ``ROUNDS_LIMIT`` bounds how
many rounds a run waits for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hy_eval.llm.batch._engine import (
    STATE_NAME,
    BatchEngine,
    BatchesWaiting,
    BatchState,
    RoundReport,
)
from hy_eval.llm.batch._folder import FolderBatches
from hy_eval.llm.batch._spool import RequestSpool
from hy_eval.llm.cache import cache_key, canonical_json
from hy_eval.llm.core import Completion, ProviderError, Request
from hy_eval.llm.providers import LLMClient, ModelOptions

SERVE_SPOOL_NAME = "serve_requests.sqlite"
#: Rounds (batch files) after which a run stops waiting for its cases' answers: a case
#: that still misses then has requests that are not the same from one round to the next.
ROUNDS_LIMIT = 8


class SpoolingProvider:
    """The openai provider with sending replaced by keeping: its name, model, base URL and
    structured mode (so its cache keys) are the wrapped provider's."""

    def __init__(self, inner: Any, spool: RequestSpool, folder: Path) -> None:
        self._inner = inner
        self.spool = spool
        self.folder = folder
        #: ``LLMClient.key_fields`` of the client this provider is in (set by it).
        self.key_fields: Callable[[Request], dict[str, Any]] | None = None
        #: Whether a key's attempts are spent (set by :class:`BatchServe`).
        self.spent: Callable[[str], bool] = lambda key: False
        #: Requests kept so far that will be asked (a caller may ask one several times).
        self.misses = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, request: Request, timeout: float) -> Completion:
        assert self.key_fields is not None, "SpoolingProvider used outside its client"
        fields = self.key_fields(request)
        canonical = canonical_json(fields)
        key = cache_key(fields, canonical)
        if self.spent(key):
            raise ProviderError(
                "other",
                f"no usable answer for request {key[:16]} in the batch folder "
                f"{self.folder} after its attempts (the lines of the rounds before say why)",
            )
        with self._lock:
            self.spool.add(key, canonical, fields)
            self.misses += 1
        # The key in the message keeps these errors apart (``_count_refusal``).
        raise ProviderError(
            "other",
            f"no answer yet for request {key[:16]}: it is kept for the batch folder "
            f"{self.folder} (answer the file written there, then run again)",
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class BatchServe:
    """The spooling client of one serve (or one external-system run) and its folder.
    ``collect()`` before serving, ``flush()`` after."""

    def __init__(
        self,
        options: ModelOptions,
        folder: Path,
        home: Path,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.client: LLMClient = options.client()
        self.folder = folder
        self.spool = RequestSpool(home / SERVE_SPOOL_NAME, fresh=False)
        self.provider = SpoolingProvider(self.client.provider, self.spool, folder)
        self.provider.key_fields = self.client.key_fields
        self.client.provider = self.provider
        self.engine = BatchEngine(
            self.client,
            BatchState(home / STATE_NAME),
            say=say,
            vendor=FolderBatches(self.provider, folder),
        )
        self.provider.spent = self._spent

    def _spent(self, key: str) -> bool:
        """Whether ``key`` went in as many files as it may, none of them still waiting."""
        engine = self.engine
        if engine.state.attempts()[key] < engine.max_attempts:
            return False
        return all(key not in b.keys for b in engine.state.pending())

    @property
    def rounds(self) -> int:
        """Request files written so far."""
        return len(self.engine.state.batches)

    def collect(self) -> RoundReport:
        """Read the results files of the waiting request files into the cache."""
        report = RoundReport()
        asyncio.run(self.engine.collect_ended(self.spool, report))
        return report

    def unanswered(self) -> dict[str, Any]:
        """The kept requests whose answers are not in the cache."""
        cache = self.client.cache
        assert cache is not None
        return {k: self.spool[k] for k in self.spool if cache.get(k) is None}

    def flush(self) -> BatchesWaiting | None:
        """Write the kept requests no waiting file holds to a new request file; what
        waits now (``None``: nothing)."""
        try:
            asyncio.run(self.engine.run_round(self.unanswered(), self.rounds + 1))
        except BatchesWaiting as exc:
            return exc
        return None

    def close(self) -> None:
        self.spool.close(remove=False)
