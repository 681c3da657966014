"""Running a suite: every case through the real pipeline, one record per case appended to
``cases.jsonl`` as it finishes (rule E2), then the summary and reports.

A run is a folder. ``manifest.json`` says what ran; ``cases.jsonl`` grows one line per
finished case, so a killed run keeps what it finished and ``--resume`` does the rest.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._redact import redact, redact_tree
from hy_eval.conversation import normalise_messages, render_conversation
from hy_eval.harness._dataset import (
    DATASETS_DIR,
    Case,
    CaseRef,
    DatasetError,
    Suite,
    filter_cases,
    load_suite,
)
from hy_eval.harness._perturb import perturb_suite
from hy_eval.harness._plots import PlotWorker
from hy_eval.harness._reuse import ResultCache, case_record_key, record_identity
from hy_eval.harness._runfolder import (
    FolderLock,
    apply_saved,
    folder_problem,
    lock_folder,
    model_mismatch,
    read_manifest,
    resume_command,
    settings_problem,
)
from hy_eval.harness._scoring import Outcome, score_case
from hy_eval.llm import (
    CacheMiss,
    LLMClient,
    ModelOptions,
    ModelProcessDied,
    PriceTable,
    ProviderError,
    RunStopped,
    Usage,
)
from hy_eval.llm._base import short_text
from hy_eval.memory import MemoryClient, MemoryStore, PromptLibrary
from hy_eval.memory._prompts import LANGUAGES, STAGES

REPORTS_DIR = Path("reports")
PACKAGES = (
    "hy_eval",
    "openai",
    "anthropic",
    "llama_cpp_python",
    "jinja2",
    "pydantic",
    "pandas",
    "numpy",
    "matplotlib",
)


class RunError(Exception):
    """A run that cannot start or go on; ``exit_code`` is the CLI's."""

    def __init__(self, message: str, exit_code: int = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class RunConfig:
    """What to run. The model fields carry ``ModelOptions``' names (see :meth:`of`)."""

    suite: str = "multi_speaker"
    provider: str = "local"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never written anywhere
    structured: str | None = None
    variant: str = "default"
    limit: int | None = None
    filter: str | None = None
    concurrency: int | None = None
    cache_mode: str = "read-write"
    cache_path: str = ".hy_eval/cache.sqlite"
    out: str | None = None
    resume: str | None = None
    guard: bool = True
    #: Reuse finished case records and reports from the cache (read-write mode only).
    reuse: bool = True
    timeout: float = 120.0
    retries: int = 4
    #: First backoff delay in seconds (doubles per retry); tests shorten it.
    retry_base_delay: float = 0.5
    max_error_rate: float = 0.1
    prices: str | None = None
    progress: bool = True
    #: Run each case this many times (distinct cache keys per repeat).
    repeats: int = 1
    temperature: float = 0.0
    #: A case passes when at least this many of its repeats pass (default: all).
    pass_k: int | None = None
    #: Run the suite perturbed by this perturbation (issue 20, ``_perturb.py``).
    perturb: str | None = None
    perturb_seed: int = 0

    @classmethod
    def of(cls, options: ModelOptions, **settings: Any) -> RunConfig:
        """A config asking the model that ``options`` describe; ``settings`` the rest."""
        return cls(**{f.name: getattr(options, f.name) for f in fields(ModelOptions)}, **settings)

    def model_options(self) -> ModelOptions:
        """The model this run asks (after a resume has taken the saved settings)."""
        return ModelOptions(**{f.name: getattr(self, f.name) for f in fields(ModelOptions)})

    def params(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("api_key", "progress")}
        return redact_tree(d)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "model"


def git_state() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": dirty if commit else None}


def package_versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Complete records of a ``cases.jsonl``; a torn last line (a killed run) is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # torn write: the case will be redone
            yield json.loads(line)


def record_key(rec: dict[str, Any]) -> str:
    """A record's identity: the case id, and the repeat index when there are repeats."""
    return f"{rec['id']}#{rec.get('repeat', 0)}"


def repair_records(path: Path) -> set[str]:
    """Drop a torn last line and duplicate records; return the keys of finished ones."""
    if not path.exists():
        return set()
    seen: set[str] = set()
    keep: list[str] = []
    changed = False
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                changed = True
                break
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                changed = True
                continue
            if record_key(rec) in seen:
                changed = True
                continue
            seen.add(record_key(rec))
            keep.append(line)
    if changed:
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(keep), encoding="utf-8")
        os.replace(tmp, path)
    return seen


class Runner:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self._folder_lock: FolderLock | None = None
        self.llm: LLMClient | None = None
        self._reuse: ResultCache | None = None
        self._reuse_read = False
        self._identity = ""
        #: Case records taken whole from the result cache in this run.
        self.records_reused = 0

    # -- setting up ------------------------------------------------------------------

    def _prepare(self) -> tuple[Suite, list[CaseRef], PromptLibrary, Path, dict[str, Any]]:
        from hy_eval.memory import PromptError

        cfg = self.config
        manifest: dict[str, Any] = {}
        if cfg.resume:
            saved, problem = read_manifest(Path(cfg.resume))
            if saved is None:
                raise RunError(str(problem))
            manifest = saved
            # Provider, model and base URL stay the command line's (checked in run()).
            apply_saved(cfg, manifest)
        problem = settings_problem(cfg)
        if problem:
            raise RunError(f"{cfg.resume}/manifest.json: {problem}" if cfg.resume else problem)
        try:
            suite = load_suite(cfg.suite)
        except DatasetError as exc:
            raise RunError("dataset error: " + "; ".join(exc.problems[:5])) from None
        if suite.kind != "memory":
            raise RunError(f"suite {suite.name!r} has no model cases; run it with --suite history")
        try:
            cases = filter_cases(suite.refs, cfg.filter)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        if cfg.limit is not None:
            cases = cases[: cfg.limit]
        if cfg.perturb and cases:
            # After the filter and limit: the perturbed run pairs with the base run's cases.
            suite = perturb_suite(suite, cases, cfg.perturb, cfg.perturb_seed)
            cases = list(suite.refs)
        if not cases:
            raise RunError(f"no case of suite {suite.name!r} matches the filter")
        try:
            prompts = PromptLibrary(cfg.variant)
            for stage in STAGES:
                for lang in LANGUAGES:
                    prompts.template(stage, lang)
        except PromptError as exc:
            raise RunError(str(exc)) from None
        if manifest and manifest.get("dataset_hash") != suite.hash:
            raise RunError(
                f"{cfg.resume}: the dataset changed since this run started; start a new run"
            )
        if manifest and manifest.get("prompt_hashes") != prompts.file_hashes():
            raise RunError(f"{cfg.resume}: the prompts changed since this run started")
        if cfg.resume:
            run_dir = Path(cfg.resume)
        else:
            stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            model = _slug(cfg.model or cfg.provider)
            run_dir = (
                Path(cfg.out)
                if cfg.out
                else REPORTS_DIR / (f"{stamp}-{suite.name}-{model}-{cfg.variant}")
            )
            if (run_dir / "cases.jsonl").exists():
                raise RunError(f"{run_dir}: already holds a run; use --resume {run_dir}")
        problem = folder_problem(run_dir, [DATASETS_DIR, *{f.parent for f in suite.files}])
        if problem:
            raise RunError(problem)
        # The folder is made once the model is set up (run()): a bad flag leaves nothing.
        return suite, cases, prompts, run_dir, manifest

    def _manifest(
        self, suite: Suite, prompts: PromptLibrary, llm: LLMClient, previous: dict[str, Any]
    ) -> dict[str, Any]:
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        manifest: dict[str, Any] = {
            "suite": suite.name,
            "dataset_files": [str(f) for f in suite.files],
            "dataset_hash": suite.hash,
            "prompt_hashes": prompts.file_hashes(),
            "provider": llm.provider.name,
            "model": llm.provider.model,
            "base_url": llm.provider.base_url or None,
            # The openai provider's structured-output mode and how it was chosen (issue 22).
            "structured_output": getattr(llm.provider, "structured_choice", None),
            "params": self.config.params(),
            "git": git_state(),
            "packages": package_versions(),
            "started": previous.get("started", now),
            "resumed": [*previous.get("resumed", []), now] if previous else [],
            "finished": None,
        }
        return redact_tree(manifest)  # a URL with credentials, for one

    # -- running ---------------------------------------------------------------------

    def run(self) -> tuple[Path, dict[str, Any], int]:
        """Run (or resume) and report. Returns the run folder, the summary and the exit
        code (0 ok, 3 provider errors above the tolerance, 4 a replay-only cache miss)."""
        self._folder_lock = None
        try:
            return self._run()
        finally:
            if self._folder_lock is not None:
                self._folder_lock.release()

    def _run(self) -> tuple[Path, dict[str, Any], int]:
        from hy_eval.harness._report import write_reports
        from hy_eval.llm import ConfigError

        cfg = self.config
        suite, cases, prompts, run_dir, previous = self._prepare()
        if previous and previous.get("provider") != cfg.provider:
            # Refused before a provider is made: a key is never sent to the manifest's URL.
            raise RunError(
                str(model_mismatch(run_dir, previous, cfg.provider, cfg.model or "default", ""))
            )
        try:
            llm = cfg.model_options().client()
        except ConfigError as exc:
            raise RunError(str(exc)) from None
        self.llm = llm
        if previous:
            p = llm.provider
            problem = model_mismatch(run_dir, previous, p.name, p.model, p.base_url)
            if problem:
                raise RunError(problem)
        try:
            prices = PriceTable.load(cfg.prices)
        except ConfigError as exc:
            raise RunError(str(exc)) from None
        manifest = self._manifest(suite, prompts, llm, previous)
        run_dir.mkdir(parents=True, exist_ok=True)
        self._folder_lock, problem = lock_folder(run_dir)
        if self._folder_lock is None:
            raise RunError(str(problem))
        if not cfg.resume and (run_dir / "cases.jsonl").exists():
            # Checked again under the lock: a run that started with this one may have
            # finished in between.
            raise RunError(f"{run_dir}: already holds a run; use --resume {run_dir}")
        _write_json(run_dir / "manifest.json", manifest)
        # Finished records and reports are kept beside the answers (see _reuse.py).
        reuse = ResultCache(cfg.cache_path) if cfg.cache_mode in ("read-write", "refresh") else None
        identity = record_identity(
            {k: getattr(cfg, k) for k in ("variant", "guard", "temperature", "structured")},
            prompts.file_hashes(),
            {
                "provider": llm.provider.name,
                "model": llm.provider.model,
                "base_url": llm.provider.base_url or None,
                "options": llm.options,
            },
            prices.cost(llm.provider.model, Usage(1_000_000, 1_000_000)),
            manifest["packages"],
        )
        self._reuse = reuse
        self._reuse_read = cfg.cache_mode == "read-write" and cfg.reuse
        self._identity = identity
        self.records_reused = 0
        records = run_dir / "cases.jsonl"
        done = repair_records(records)
        # Case id -> repeats still to run. Cases themselves are parsed one at a time later.
        todo: dict[str, list[int]] = {}
        for ref in cases:
            pending = [r for r in range(cfg.repeats) if f"{ref.id}#{r}" not in done]
            if pending:
                todo[ref.id] = pending
        print(
            f"hy-eval: {suite.name}: {len(cases)} cases ({len(done)} already done), "
            f"provider {llm.provider.name}, model {llm.provider.model}, variant {cfg.variant}, "
            f"cache {cfg.cache_mode}"
            + structured_note(llm)
            + (
                f", {cfg.repeats} repeats at temperature {cfg.temperature:g}"
                if cfg.repeats > 1
                else ""
            ),
            file=sys.stderr,
        )
        # Plots are drawn by a second process that imports matplotlib while cases run
        # (_plots.py); started with the first case that is not reused from the cache.
        self._plotter: PlotWorker | None = None
        started = time.perf_counter()
        miss: CacheMiss | None = None
        try:
            try:
                asyncio.run(self._run_cases(suite, todo, llm, prompts, prices, records, len(done)))
            except CacheMiss as exc:
                miss = exc
            except DatasetError as exc:
                raise RunError(
                    "dataset error: " + "; ".join(exc.problems[:5]) + f" (finished cases are "
                    f"kept in {records}; resume with {resume_command(run_dir, manifest)})"
                ) from None
            except RunStopped as exc:
                # A native crash of the model library, or a server refusing every call the
                # same way (issue 22): the finished cases are on disk.
                kept = len(repair_records(records))
                resume = f"; finish with {resume_command(run_dir, manifest)}"
                raise RunError(
                    f"{exc.describe()}; {kept} case{'' if kept == 1 else 's'} kept in {records}"
                    + (resume if exc.resumable else ""),
                    exit_code=ExitCode.PROVIDER,
                ) from None
            wall = time.perf_counter() - started
            stats = {**llm.stats.as_dict(), "records_reused": self.records_reused}
            summary = write_reports(
                run_dir,
                manifest,
                stats,
                wall,
                {c.id for c in cases},
                pass_k=cfg.pass_k,
                memo=reuse if miss is None else None,
                memo_read=self._reuse_read,
                plotter=self._plotter,
            )
        except KeyboardInterrupt:
            print(
                f"\nhy-eval: interrupted; finished cases are kept in {records}. "
                f"Resume with: {resume_command(run_dir, manifest)}",
                file=sys.stderr,
            )
            raise
        finally:
            if reuse is not None:
                reuse.close()
            if self._plotter is not None:
                self._plotter.close()
        if miss is not None:
            raise RunError(str(miss), exit_code=ExitCode.CACHE_MISS)
        manifest["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        _write_json(run_dir / "manifest.json", manifest)
        error_rate = summary["metrics"]["error_rate"]["value"] or 0.0
        code = 3 if error_rate > cfg.max_error_rate else 0
        return run_dir, summary, code

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
        total = sum(len(r) for r in todo.values())
        progress = _Progress(total + already, already, llm, enabled=self.config.progress)
        workers = max(1, min(llm.concurrency, total))
        # Bounded: cases are parsed as workers need them, so memory does not grow with
        # the suite. None tells a worker to stop.
        queue: asyncio.Queue[tuple[CaseRef, str, int] | None] = asyncio.Queue(maxsize=2 * workers)
        fh = records.open("a", encoding="utf-8")

        async def produce() -> None:
            for ref, text in suite.iter_lines(set(todo)):
                for repeat in todo[ref.id]:
                    await queue.put((ref, text, repeat))
            for _ in range(workers):
                await queue.put(None)

        interrupted = False

        async def worker() -> None:
            # One in-memory store per worker, emptied after each case (MemoryStore.clear):
            # a store's connection keeps its prepared statements from case to case.
            store = MemoryStore()
            while not interrupted:
                item = await queue.get()
                if item is None:
                    return
                ref, text, repeat = item
                # Keyed by the case's line as written: any edit to it runs it again.
                reuse = self._reuse
                key = case_record_key(self._identity, text, repeat)
                line = reuse.get_record(key) if reuse is not None and self._reuse_read else None
                if line is not None:
                    self.records_reused += 1
                    error = False  # only records without a provider error are kept
                else:
                    if self._plotter is None:
                        self._plotter = PlotWorker.start()
                    record = await run_case(
                        suite.parse_case(ref, text),
                        llm,
                        prompts,
                        prices,
                        self.config.guard,
                        repeat=repeat,
                        temperature=self.config.temperature,
                        store=store,
                    )
                    store.clear()
                    # Redacted once, before the line reaches cases.jsonl and the cache.
                    line = redact(json.dumps(record, ensure_ascii=False)) + "\n"
                    error = record["status"] == "error"
                    if reuse is not None and not error:
                        reuse.put_record(key, line)
                fh.write(line)
                fh.flush()
                progress.advance(error)

        tasks = [asyncio.create_task(worker()) for _ in range(workers)]
        tasks.append(asyncio.create_task(produce()))

        def on_sigint() -> None:
            # Our own flag, not only task cancellation: Python 3.10-3.11's wait_for can
            # lose a cancellation that lands as a call completes, and the run would go on.
            nonlocal interrupted
            interrupted = True
            for t in tasks:
                t.cancel()

        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            handles_sigint = True
        except (NotImplementedError, RuntimeError, ValueError):
            handles_sigint = False  # not the main thread (tests run runners in threads)
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            if not interrupted:
                raise
        finally:
            if handles_sigint:
                loop.remove_signal_handler(signal.SIGINT)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            fh.close()
            progress.close()
            await llm.aclose()
        if interrupted:
            raise KeyboardInterrupt


def structured_note(llm: LLMClient) -> str:
    """ ", structured output json_object_schema (probe)" for the start line, when the
    provider has a mode to tell (openai)."""
    choice = getattr(llm.provider, "structured_choice", None)
    return f", structured output {choice['mode']} ({choice['chosen_by']})" if choice else ""


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(redact(json.dumps(data, ensure_ascii=False, indent=2)) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class _Progress:
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
            print(
                f"  {self.done}/{self.total} cases, {elapsed:.0f} s, ETA {eta:.0f} s, "
                f"calls {info['calls']}, "
                f"cache hits {info['hits']}, tokens {info['tok']}, errors {info['err']}",
                file=sys.stderr,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


async def run_case(
    case: Case,
    llm: LLMClient,
    prompts: PromptLibrary,
    prices: PriceTable,
    guard: bool,
    *,
    repeat: int = 0,
    temperature: float = 0.0,
    store: MemoryStore | None = None,
) -> dict[str, Any]:
    """One case through an empty in-memory store (``store``, or a new one): seed history
    and existing memories, add the conversation, score. A provider error marks the case
    failed; a replay-only cache miss stops the run."""
    store = MemoryStore() if store is None else store
    existing_ids: dict[str, int] = {}
    with store.transaction():
        if case.history:
            store.add_l1_raw(case.user_id, render_conversation(normalise_messages(case.history)))
        for mem in case.existing:
            existing_ids[mem.id] = store.insert(case.user_id, mem.text, mem.owner, "seed")
    client = MemoryClient(llm, store, prompts, guard=guard, temperature=temperature)
    started = time.perf_counter()
    record: dict[str, Any] = {
        "id": case.id,
        "repeat": repeat,
        "lang": case.lang,
        "rules": case.rules,
        "tags": case.tags,
        "input": {
            "messages": case.messages,
            "system": case.system,
            "history": case.history,
            "existing": [m.model_dump() for m in case.existing],
            **({"aliases": case.aliases} if case.aliases else {}),
        },
        "expect": case.expect.model_dump(),
    }
    outcome = Outcome(existing_ids=existing_ids)
    try:
        label = case.id if repeat == 0 else f"{case.id} repeat {repeat}"
        result = await client.add(
            case.messages,
            case.user_id,
            system=case.system,
            label=label,
            repeat=repeat,
            aliases=case.aliases,
        )
    except ProviderError as exc:
        outcome.error = f"{exc.kind}: {exc}"
        record.update(status="error", error=outcome.error)
    except ModelProcessDied as exc:
        exc.case_id = label  # the run's failure; its message names the case it was on
        raise
    except (CacheMiss, RunStopped):  # the run's failures, not this case's
        raise
    except Exception as exc:
        # Anything else (a bug, or an answer no check foresaw) costs this case, never the
        # run: the healthy cases are kept and the reason is in the record (issue 14).
        outcome.error = f"internal error: {type(exc).__name__}: {short_text(str(exc))}"
        record.update(status="error", error=outcome.error)
    else:
        ext, rec = result.extraction, result.reconciliation
        outcome.facts = result.facts
        outcome.raw_ops = [o.as_dict() for o in rec.raw]
        outcome.applied_ops = [o.as_dict() for o in rec.applied]
        outcome.reconcile_ran = rec.prompt is not None
        outcome.fallback = rec.fallback
        outcome.parse_failed = bool(ext.parse_error or rec.parse_error)
        snap = store.snapshot(case.user_id)
        outcome.memories_after = {m["id"]: m for m in snap["memories"]}
        outcome.profile = snap["profile"]
        truncated = dict(result.truncated)
        stages: dict[str, Any] = {
            "extract": _stage(ext.prompt, ext.completion, ext.parse_error, truncated),
        }
        if rec.prompt is not None:
            stages["reconcile"] = _stage(rec.prompt, rec.completion, rec.parse_error, truncated)
            stages["reconcile"]["short_ids"] = rec.short_ids
        usage = result.usage
        cost = prices.cost(llm.provider.model, usage)
        record.update(
            status="ok",
            error=None,
            rendered=result.rendered,
            stages=stages,
            facts=result.facts,
            basic_info=ext.basic_info,
            profile_issues=ext.profile_issues,
            operations={"raw": outcome.raw_ops, "applied": outcome.applied_ops},
            guard_events=[g.as_dict() for g in rec.guard_events],
            # Operations the guard added because a subject could not be told (issue 15).
            guard_undecided=rec.undecided,
            fallback=rec.fallback,
            store_after=snap,
            existing_ids=existing_ids,
            warnings=result.warnings,
            truncated=truncated,
            round_trips=result.round_trips,
            tokens={"input": usage.input_tokens, "output": usage.output_tokens},
            cost_usd=cost,
        )
    score = score_case(case, outcome)
    record["latency_s"] = round(time.perf_counter() - started, 4)
    record["score"] = score.as_dict()
    return record


#: The most characters of a raw answer kept in a case record: far above what
#: ``max_tokens`` lets a model write, far below what fills a disk (issue 14).
RAW_ANSWER_LIMIT = 32_000


def _stage(
    prompt: Any, completion: Any, parse_error: str | None, truncated: dict[str, int]
) -> dict[str, Any]:
    """A stage's part of the record; a raw answer over ``RAW_ANSWER_LIMIT`` characters is
    cut, its full length kept as ``raw_chars`` and counted in ``truncated``."""
    out: dict[str, Any] = {
        "template": prompt.template,
        "prompt_sha256": hashlib.sha256((prompt.system + "\0" + prompt.user).encode()).hexdigest(),
        "system": prompt.system,
        "user": prompt.user,
        "parse_error": parse_error,
    }
    if completion is not None:
        raw = completion.text
        if len(raw) > RAW_ANSWER_LIMIT:
            out["raw_chars"] = len(raw)
            raw = raw[:RAW_ANSWER_LIMIT] + "…"
            truncated["raw_answers_cut"] = truncated.get("raw_answers_cut", 0) + 1
        out.update(
            raw=raw,
            finish_reason=completion.finish_reason,
            cached=completion.cached,
            retries=completion.retries,
            latency_s=round(completion.latency_s, 4),
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
        )
    return out
