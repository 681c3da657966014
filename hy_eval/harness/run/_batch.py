"""``run --batch``: the model's answers fetched through the vendor's batch
endpoints first, then the normal run, which finds every answer in the cache.

Which requests a case makes is found by running the case itself with a collecting
client: its answers come from the cache, and at the first answer missing the case stops
and the request is kept (``CollectingClient``). Round 1 so finds every case's extraction
request; once those answers are in the cache, round 2 finds the reconcile requests of
the cases that need one (a case whose extraction found no fact makes none). The rounds
go on until no case needs a request no batch has held. The requests and their cache keys
are therefore exactly those the normal run makes. With ``--matcher judge`` and a judge on
the run's own model, the judge's requests are collected the same way once a case's
pipeline answers are in the cache (all its pairs in one round).

``--batch-dir DIR`` makes the vendor a folder (``llm/batch/_folder.py``): a round writes
its requests as an OpenAI Batch file and the process ends with exit code 5, saying how
many requests wait, where, and the command that continues; that command reads the
answers placed in the folder and writes the next round's requests. Once every case's
requests are answered (or their attempts spent) the normal run scores the cases from the
cache, asking nothing.
"""

from __future__ import annotations

import asyncio
import signal
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from hy_eval._exitcodes import ExitCode, InterruptedRun
from hy_eval._redact import redact
from hy_eval._terminal import echo
from hy_eval.harness.run._casestep import run_case
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._plan import RunError, RunPlan
from hy_eval.harness.scoring import Judge
from hy_eval.llm import Completion, ConfigError, LLMClient, PriceTable, ProviderError, Request
from hy_eval.llm.batch import (
    ROUNDS_LIMIT,
    SPOOL_NAME,
    STATE_NAME,
    BatchEngine,
    BatchesWaiting,
    BatchServe,
    BatchState,
    FolderBatches,
    RequestSpool,
    RoundReport,
)
from hy_eval.llm.cache import cache_key, canonical_json
from hy_eval.llm.core import short_text
from hy_eval.memory import MemoryStore

#: Batch prices are half the interactive ones at both vendors.
BATCH_PRICE_FACTOR = 0.5
#: Extraction, then reconcile; more rounds only if a pipeline ever asks more.
MAX_ROUNDS = 4


class CollectingClient(LLMClient):
    """``llm``'s provider, options and cache, but a request missing from the cache is
    written to ``spool`` and fails its case instead of being sent."""

    def __init__(self, llm: LLMClient, spool: RequestSpool) -> None:
        super().__init__(
            llm.provider,
            cache=llm.cache,
            cache_mode="read-write",
            options=llm.options,
            stop_after=0,
        )
        self.spool = spool

    async def _call_with_retries(self, request: Request) -> Completion:
        fields = self.key_fields(request)
        canonical = canonical_json(fields)
        self.spool.add(cache_key(fields, canonical), canonical, fields)
        raise ProviderError("other", "answer left for a batch")


async def collect_requests(
    cfg: RunConfig,
    plan: RunPlan,
    todo: dict[str, list[int]],
    llm: LLMClient,
    spool: RequestSpool,
    judge: Judge | None = None,
) -> None:
    """Write to ``spool`` (emptied first) the requests the cases of ``todo`` would send
    next; with ``judge`` (one asking ``llm``'s model) the judge's too."""
    spool.reset()
    client = CollectingClient(llm, spool)
    collecting_judge = Judge(client, judge.prompts) if judge is not None else None
    store = MemoryStore()
    free = PriceTable({})
    for ref, text in plan.suite.iter_lines(set(todo)):
        case = plan.suite.parse_case(ref, text)
        for repeat in todo[ref.id]:
            await run_case(
                case,
                client,
                plan.prompts,
                free,
                cfg.guard,
                repeat=repeat,
                temperature=cfg.temperature,
                store=store,
                matcher="judge" if collecting_judge is not None else "strict",
                judge=collecting_judge,
            )


def fill_cache_by_batches(
    cfg: RunConfig,
    plan: RunPlan,
    todo: dict[str, list[int]],
    resume: str,
    llm: LLMClient,
    judge: Judge | None = None,
) -> dict[str, int]:
    """Run the batch rounds for ``todo``; return the folder's batch totals (for the
    summary's ``calls.batch``). On SIGINT leave the batches running (or cancel them with
    ``--batch-cancel-on-interrupt``) and raise ``InterruptedRun`` (the user is told). With
    ``--batch-dir``, a round whose requests wait for answers is a ``RunError`` with exit
    code 5 naming the files and the command that continues."""
    try:
        # A client of its own: its HTTP connections belong to this phase's event loop.
        batch_llm = cfg.model_options().client()
        vendor = None
        if cfg.batch_dir:
            vendor = FolderBatches(batch_llm.provider, Path(cfg.batch_dir))
        engine = BatchEngine(
            batch_llm,
            BatchState(plan.run_dir / STATE_NAME),
            poll_interval=cfg.batch_poll_interval,
            say=_say if cfg.progress else None,
            vendor=vendor,
        )
    except ConfigError as exc:
        raise RunError(str(exc)) from None
    if batch_llm.options != llm.options:
        raise RunError("--batch: the batch client's structured-output mode differs from the run's")
    if judge is not None and judge.llm is not llm:
        if cfg.batch_dir:
            raise RunError(
                "--batch-dir: the judge must be the run's own model (--judge-provider, "
                "--judge-model and --judge-base-url left out): its requests go in the same files"
            )
        judge = None  # a judge of another model is asked interactively by the normal run
    try:
        interrupted = asyncio.run(_rounds(cfg, plan, todo, engine, judge))
    except BatchesWaiting as exc:
        raise waiting_error(exc, resume) from None
    except ProviderError as exc:
        # A refused key, a batch endpoint that answers nonsense: the run cannot go on
        # by batches. What was submitted is kept in batches.json for a resume.
        raise RunError(
            f"--batch: {short_text(str(exc), 300)}; resume with: {resume}", ExitCode.PROVIDER
        ) from None
    if interrupted:
        where = plan.run_dir / STATE_NAME
        if cfg.batch_cancel_on_interrupt:
            what = "the pending batches were cancelled (what they finished is kept)"
        else:
            what = (
                "the remote batches are left running (--batch-cancel-on-interrupt cancels "
                "them on Ctrl-C instead)"
            )
        echo(
            f"\nhy-eval: interrupted; {what}; their ids are kept in {where}. Resume with: {resume}",
            err=True,
        )
        raise InterruptedRun
    return engine.state.totals()


async def _rounds(
    cfg: RunConfig,
    plan: RunPlan,
    todo: dict[str, list[int]],
    engine: BatchEngine,
    judge: Judge | None = None,
) -> bool:
    """The rounds; True when SIGINT stopped them."""
    task = asyncio.current_task()
    stopped = False

    def on_sigint() -> None:
        nonlocal stopped
        if stopped:
            return  # already stopping (a cancel takes a few requests)
        stopped = True
        if task is not None:
            task.cancel()

    remove = _on_sigint(on_sigint)
    spool = RequestSpool(plan.run_dir / SPOOL_NAME)
    try:
        for round_no in range(1, MAX_ROUNDS + 1):
            await collect_requests(cfg, plan, todo, engine.llm, spool, judge)
            if not set(spool) - engine.settled_keys() and not engine.state.pending():
                break
            report = await engine.run_round(spool, round_no)
            _tell(engine, round_no, report)
    except asyncio.CancelledError:
        if not stopped:
            raise
        uncancel = getattr(task, "uncancel", None)  # 3.11+: later awaits are not cancelled
        if uncancel is not None:
            uncancel()
        if cfg.batch_cancel_on_interrupt:
            ids = await engine.cancel_pending()
            _say(f"cancelled {len(ids)} batch{'es' if len(ids) != 1 else ''}: {', '.join(ids)}")
    finally:
        remove()
        spool.close()
        await engine.llm.aclose()
    return stopped


def waiting_error(exc: BatchesWaiting, command: str) -> RunError:
    """The exit-5 error of requests waiting in a batch folder: how many, where, and the
    one command that continues."""
    more = f" and {len(exc.files) - 3} more" if len(exc.files) > 3 else ""
    return RunError(
        f"{exc.requests} request{' waits' if exc.requests == 1 else 's wait'} in "
        f"{', '.join(exc.files[:3])}{more}; "
        f'answer them (docs/llm.md, "Offline batches"), then run: {command}',
        ExitCode.BATCH_WAITING,
    )


def start_batch_serve(cfg: RunConfig, run_dir: Path) -> BatchServe:
    """``--batch-dir`` with an external system: the model server's client in serve's
    cache-or-spool mode, its kept requests and batches in ``run_dir``, with the answers
    placed in the batch folder since the last round read into the cache."""
    assert cfg.batch_dir is not None
    serve = BatchServe(cfg.model_options(), Path(cfg.batch_dir), run_dir, say=_say)
    if serve.engine.state.pending():
        _tell(serve.engine, serve.rounds, serve.collect())
    return serve


def case_waits(serve: BatchServe, spooled_before: int) -> bool:
    """Whether a case waits for answers: a request was kept while it ran, whether its
    system failed the case or swallowed the kept call's 502 and finished (with cases at
    once, maybe another's: then it runs again next round, which costs a run, never a
    record). After ``ROUNDS_LIMIT`` rounds no case waits any more."""
    return serve.provider.misses > spooled_before and serve.rounds < ROUNDS_LIMIT


def end_serve_round(serve: BatchServe, waiting: int, finished: int, command: str) -> None:
    """Write the requests this round kept to the batch folder; while cases wait, the
    exit-5 ``RunError`` saying how many finished, how many wait, and what to do."""
    exc = serve.flush()
    if waiting == 0:
        if exc is not None:
            _say(f"{exc.requests} requests wait in {', '.join(exc.files)} (no case waits)")
        return
    if exc is None:  # cannot be: a waiting case kept a request with attempts left
        raise RunError(f"{waiting} cases wait, but no request is written; run again")
    cases = f"{finished} case{'' if finished == 1 else 's'} finished, {waiting} wait"
    if serve.rounds >= ROUNDS_LIMIT:
        cases += (
            f" (round {serve.rounds} of {ROUNDS_LIMIT}: the next records them as failed; "
            "a case still waiting after many rounds sends requests that differ each time)"
        )
    error = waiting_error(exc, command)
    raise RunError(f"{cases}; {error}", ExitCode.BATCH_WAITING)


#: ``matchers evaluate --batch-dir``'s kept batches, in the batch folder itself.
EVALUATE_STATE_NAME = "evaluate.batches.json"


def judge_pairs_by_folder(
    judge: Judge, pairs: Sequence[tuple[str, str, str]], folder: Path, command: str
) -> None:
    """``matchers evaluate --matcher judge --batch-dir``: the judge's request of every
    (predicted, gold, lang) pair in one round written to ``folder``. Returns once every
    answer is in the cache (or its attempts are spent); a ``RunError`` with exit code 5
    while requests wait (``command`` continues)."""
    llm = judge.llm
    engine = BatchEngine(
        llm,
        BatchState(folder / EVALUATE_STATE_NAME),
        say=_say,
        vendor=FolderBatches(llm.provider, folder),
    )

    async def rounds() -> None:
        with tempfile.TemporaryDirectory() as scratch:
            spool = RequestSpool(Path(scratch) / SPOOL_NAME)
            try:
                for round_no in range(1, MAX_ROUNDS + 1):
                    spool.reset()
                    collecting = Judge(CollectingClient(llm, spool), judge.prompts)
                    await asyncio.gather(*(collecting.same(p, g, lang) for p, g, lang in pairs))
                    if not set(spool) - engine.settled_keys() and not engine.state.pending():
                        return
                    _tell(engine, round_no, await engine.run_round(spool, round_no))
            finally:
                spool.close()

    try:
        asyncio.run(rounds())
    except BatchesWaiting as exc:
        raise waiting_error(exc, command) from None


def _tell(engine: BatchEngine, round_no: int, report: RoundReport) -> None:
    """The round's line, one line per failed request and per output line ignored."""
    _say(f"round {round_no}: {report.line()}")
    attempts = engine.state.attempts()
    for key, outcome, reason in report.failures:
        if not engine.offline:
            then = "asked interactively next"
        elif attempts[key] < engine.max_attempts:
            then = f"asked again next round, attempt {attempts[key] + 1} of {engine.max_attempts}"
        else:
            then = f"no attempt left of {engine.max_attempts}: its case fails"
        _say(f"  {outcome}: request {key[:16]}: {reason} ({then})")
    for key, why in report.ignored:
        _say(f"  ignored output line (custom_id {key[:20]!r}): {why}")


def _on_sigint(handler: Callable[[], None]) -> Callable[[], None]:
    """Install ``handler`` for SIGINT on the running loop; the function that removes it
    (nothing to remove off the main thread, where tests run runners)."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):
        return lambda: None

    def remove() -> None:
        loop.remove_signal_handler(signal.SIGINT)

    return remove


def _say(line: str) -> None:
    # Batch lines carry the vendor's words (ids, error messages), which may echo the key.
    echo(f"hy-eval: batch {redact(line)}", err=True, flush=True)
