"""The runner's case loop: a pool of workers takes (case, repeat) items from a bounded
queue, each case's record comes from the result cache or from running it through the
system under test, and every record is appended to ``cases.jsonl`` as it finishes
(rule E2). ``Runner`` (``_runner.py``) sets a run up and reports it; this is the part in
between, a base class of it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from hy_eval._exitcodes import InterruptedRun
from hy_eval.harness.datasets import CaseRef, Suite
from hy_eval.harness.run._batch import case_waits
from hy_eval.harness.run._casestep import run_case
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._pool import gather_until_sigint, interrupter, tick_every_second
from hy_eval.harness.run._progress import Progress, case_weight
from hy_eval.harness.run._reuse import RecordCache, case_record_key
from hy_eval.harness.runlog import RecordWriter
from hy_eval.harness.scoring import Judge
from hy_eval.harness.systems import ExternalRun, MemorySystem, OwnPipeline
from hy_eval.llm import LLMClient, PriceTable, RunStopped
from hy_eval.llm.batch import BatchServe
from hy_eval.memory import PromptLibrary

#: A queue item: the case's reference, its dataset line, the repeat.
Item = tuple[CaseRef, str, int]


@dataclass
class _Pool:
    """What the workers of one run share."""

    suite: Suite
    llm: LLMClient
    prompts: PromptLibrary
    prices: PriceTable
    queue: asyncio.Queue[Item | None]
    stop: asyncio.Event
    progress: Progress
    writer: RecordWriter
    #: The people of the prompt's examples per language, read by the first worker that
    #: needs them (``OwnPipeline``).
    people: dict[str, tuple[str, ...]] = field(default_factory=dict)


class CaseLoop:
    """The case loop of ``Runner``; the attributes are the runner's."""

    config: RunConfig
    llm: LLMClient | None
    judge: Judge | None
    records_reused: int
    cases_waiting: int
    _reuse: RecordCache | None
    _reuse_read: bool
    _identity: str
    _external: ExternalRun | None
    _batch_serve: BatchServe | None

    def answer_client(self) -> LLMClient | None:
        """The client that asked the run's model: the run's own, or for an external
        system the one behind its model server (None before a run)."""
        return self._external.server.client if self._external is not None else self.llm

    def _label(self, case_id: str, repeat: int) -> str:
        """A running case as the status line names it."""
        return case_id if self.config.repeats == 1 else f"{case_id} repeat {repeat}"

    def _weights(self, suite: Suite, todo: dict[str, list[int]]) -> dict[str, float]:
        """Each (case, repeat) still to run by its label, weighed by its line
        (``case_weight``), for the ETA: one read of the lines, nothing kept but numbers."""
        out = {}
        for ref, text in suite.iter_lines(set(todo)):
            weight = case_weight(text)
            for repeat in todo[ref.id]:
                out[self._label(ref.id, repeat)] = weight
        return out

    async def _run_cases(
        self,
        suite: Suite,
        todo: dict[str, list[int]],
        llm: LLMClient,
        prompts: PromptLibrary,
        prices: PriceTable,
        records: Path,
        already: int,
    ) -> None:
        """Run every (case, repeat) of ``todo`` with a pool of workers, appending each
        record to ``cases.jsonl`` as it finishes. SIGINT stops the pool; the records
        written so far are kept."""
        total = sum(len(r) for r in todo.values())
        workers = max(1, min(llm.concurrency, total))
        progress = Progress(
            total + already,
            already,
            self.answer_client() or llm,  # an external system's calls go through its server
            enabled=self.config.progress,
            concurrency=workers,
            weights=self._weights(suite, todo) if self.config.progress else None,
        )
        # Bounded: cases are parsed as workers need them, so memory does not grow with
        # the suite. None tells a worker to stop.
        pool = _Pool(
            suite,
            llm,
            prompts,
            prices,
            asyncio.Queue(maxsize=2 * workers),
            asyncio.Event(),
            progress,
            RecordWriter(records),
        )
        clients = [llm]
        if self.judge is not None and self.judge.llm is not llm:
            clients.append(self.judge.llm)
        tasks = [asyncio.create_task(self._worker(pool)) for _ in range(workers)]
        producer = asyncio.create_task(_produce(pool, suite, todo, workers))
        tasks.append(producer)
        ticker = asyncio.create_task(tick_every_second(progress)) if progress.tty else None
        try:
            interrupt = interrupter(producer, pool.queue, workers, clients)
            await gather_until_sigint(tasks, pool.stop, interrupt)
        finally:
            if ticker is not None:
                ticker.cancel()
            pool.writer.close()
            progress.close()
            for client in clients:
                await client.aclose()
        if pool.stop.is_set():
            raise InterruptedRun  # the handler said so; _execute says what is kept

    async def _worker(self, pool: _Pool) -> None:
        """One worker: a system under test of its own, cases until the queue says stop."""
        system = self._system(pool)
        try:
            await self._work(pool, system)
        finally:
            await system.close()

    async def _work(self, pool: _Pool, system: MemorySystem) -> None:
        progress = pool.progress
        while not pool.stop.is_set():
            item = await pool.queue.get()
            if item is None or pool.stop.is_set():
                return
            ref, _, repeat = item
            label = self._label(ref.id, repeat)
            progress.start(label)
            progress.draw()
            reused = self.records_reused
            spooled = self._batch_serve.provider.misses if self._batch_serve else 0
            try:
                line, error, waits = await self._case_line(pool, item, system, spooled)
            except RunStopped:
                if pool.stop.is_set():  # interrupted: no record, a resume runs the case
                    return
                raise
            if waits:
                # Its model calls wait in the batch folder: the next round runs it. A case
                # whose system swallowed the 502 of a kept call and finished waits too: its
                # record would lack that call's answer (hy_memory does so for some calls).
                self.cases_waiting += 1
                progress.finish(label, error, reused=False)
                continue
            pool.writer.write_line(line)
            progress.finish(label, error, reused=self.records_reused > reused)
            progress.draw()

    def _system(self, pool: _Pool) -> MemorySystem:
        """The system under test for one of the pool's workers."""
        if self._external is not None:
            return self._external.system()
        cfg = self.config
        return OwnPipeline(
            pool.llm,
            pool.prompts,
            pool.prices,
            cfg.guard,
            temperature=cfg.temperature,
            people=pool.people,
        )

    async def _case_line(
        self, pool: _Pool, item: Item, system: MemorySystem, spooled: int
    ) -> tuple[str, bool, bool]:
        """One case's record line, whether it is a provider error, and whether the case
        waits for answers in the batch folder (a request was kept while it ran): the line
        of an earlier run with the same inputs (from the result cache, byte for byte), or
        the line of the case run now (kept for reuse unless it errs or waits)."""
        ref, text, repeat = item
        cfg = self.config
        # Keyed by the case's line as written: any edit to it runs it again.
        key = case_record_key(self._identity, text, repeat)
        reuse = self._reuse
        line = reuse.get_record(key) if reuse is not None and self._reuse_read else None
        if line is not None:
            self.records_reused += 1
            # Only records without a provider error are kept.
            return line, False, self._waits(spooled)
        case = pool.suite.parse_case(ref, text)
        record = await run_case(
            case,
            pool.llm,
            pool.prompts,
            pool.prices,
            cfg.guard,
            repeat=repeat,
            temperature=cfg.temperature,
            matcher=cfg.matcher,
            judge=self.judge,
            system=system,
        )
        line = record.to_line()  # redacted once, before cases.jsonl and the cache
        error = record.status == "error"
        waits = self._waits(spooled)
        if reuse is not None and not error and not waits:
            reuse.put_record(key, line)
        return line, error, waits

    def _waits(self, spooled: int) -> bool:
        return self._batch_serve is not None and case_waits(self._batch_serve, spooled)


async def _produce(pool: _Pool, suite: Suite, todo: dict[str, list[int]], workers: int) -> None:
    """Put every (case, repeat) to run on the queue, then a stop for each worker."""
    for ref, text in suite.iter_lines(set(todo)):
        for repeat in todo[ref.id]:
            await pool.queue.put((ref, text, repeat))
    for _ in range(workers):
        await pool.queue.put(None)
