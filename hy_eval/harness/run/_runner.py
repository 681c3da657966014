"""Running a suite: every case through the real pipeline, one record per case appended to
``cases.jsonl`` as it finishes (rule E2), then the summary and reports.

A run is a folder. ``manifest.json`` says what ran; ``cases.jsonl`` grows one line per
finished case, so a killed run keeps what it finished and ``--resume`` does the rest.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import time
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode, InterruptedRun
from hy_eval._files import LinkRefused, private_dir, refuse_link
from hy_eval._redact import redact_tree
from hy_eval._terminal import echo
from hy_eval.harness.datasets import DatasetError, Suite
from hy_eval.harness.report import write_reports
from hy_eval.harness.run._batch import (
    BATCH_PRICE_FACTOR,
    end_serve_round,
    fill_cache_by_batches,
    start_batch_serve,
)
from hy_eval.harness.run._caseloop import CaseLoop
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._folder import FolderLock, lock_folder, model_mismatch, resume_command
from hy_eval.harness.run._plan import RunError, RunPlan, SystemUnavailable, plan_run
from hy_eval.harness.run._progress import structured_note
from hy_eval.harness.run._reuse import (
    RecordCache,
    identity_settings,
    record_identity,
)
from hy_eval.harness.runlog import (
    RECORDS_NAME,
    CallCounts,
    RunManifest,
    RunSummary,
    git_state,
    package_versions,
    record_key,
    repair_records,
    write_manifest,
)
from hy_eval.harness.scoring import Judge, build_judge
from hy_eval.harness.systems import (
    ExternalRun,
    SystemInstallError,
)
from hy_eval.llm import (
    CacheMiss,
    ConfigError,
    LLMClient,
    PriceTable,
    RunStopped,
    Usage,
)
from hy_eval.llm.batch import BatchServe, OfflineProvider
from hy_eval.llm.cache import machine_info
from hy_eval.memory._prompts import PromptError


def local_machine(llm: LLMClient) -> dict[str, Any] | None:
    """The machine as the embedded model's answers depend on it, for a local run's
    manifest; None for a remote model, whose machine is not ours to know."""
    provider = llm.provider
    if provider.name != "local":
        return None
    threads = getattr(provider, "threads", None)
    processes = getattr(provider, "processes", None)
    return machine_info(threads=threads, processes=processes)


class Runner(CaseLoop):
    """Runs (or resumes) one suite with one model and writes its run folder and reports.
    ``suite``, when given, is the suite ``config.suite`` names, already loaded."""

    def __init__(self, config: RunConfig, suite: Suite | None = None) -> None:
        self.config = config
        self._suite = suite
        self._folder_lock: FolderLock | None = None
        #: The run folder this run made (not a resumed one), removed if no case reached it.
        self._made_folder: Path | None = None
        self.llm: LLMClient | None = None
        #: The judge of a ``--matcher judge`` run (its client may be the pipeline's).
        self.judge: Judge | None = None
        self._reuse: RecordCache | None = None
        self._reuse_read = False
        self._identity = ""
        self._external: ExternalRun | None = None
        #: ``--batch-dir`` with an external system: serve's cache-or-spool mode.
        self._batch_serve: BatchServe | None = None
        #: Cases of this round whose model calls wait in the batch folder (no record).
        self.cases_waiting = 0
        #: Case records taken whole from the result cache in this run.
        self.records_reused = 0
        #: With ``--batch``: the run folder's batch totals (``calls.batch``).
        self.batch_totals: dict[str, int] | None = None

    # -- setting up ------------------------------------------------------------------

    def _build_client(self) -> LLMClient:
        cfg = self.config
        try:
            return cfg.model_options().client()
        except ConfigError as exc:
            raise RunError(str(exc)) from None

    def _client(self, plan: RunPlan) -> LLMClient:
        """The model client; on a resume, only the model the run was started with."""
        previous, cfg = plan.previous, self.config
        if previous is not None and previous.provider != cfg.provider:
            # Refused before a provider is made: a key is never sent to the manifest's URL.
            mismatch = model_mismatch(
                plan.run_dir, previous, cfg.provider, cfg.model or "default", ""
            )
            raise RunError(str(mismatch))
        llm = self._build_client()
        if cfg.batch_dir:
            # Answers come from the batch folder only: a miss is an error, never a call.
            llm.provider = OfflineProvider(llm.provider, Path(cfg.batch_dir))
        self.llm = llm
        if previous is not None:
            p = llm.provider
            problem = model_mismatch(plan.run_dir, previous, p.name, p.model, p.base_url)
            if problem:
                raise RunError(problem)
        return llm

    def _manifest(self, plan: RunPlan, llm: LLMClient) -> RunManifest:
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        previous = plan.previous
        manifest = {
            "suite": plan.suite.name,
            "dataset_files": [str(f) for f in plan.suite.files],
            "dataset_hash": plan.suite.hash,
            "prompt_hashes": plan.prompts.file_hashes(),
            "provider": llm.provider.name,
            "model": llm.provider.model,
            "base_url": llm.provider.base_url or None,
            # The openai provider's structured-output mode and how it was chosen.
            "structured_output": getattr(llm.provider, "structured_choice", None),
            "params": self.config.params(),
            "machine": local_machine(llm),
            "git": git_state(),
            "packages": package_versions(),
            "started": previous.started if previous and previous.started else now,
            "resumed": [*previous.resumed, now] if previous else [],
            "finished": None,
        }
        # Redacted: a URL with credentials, for one.
        return RunManifest.model_validate(redact_tree(manifest))

    def _open_folder(self, run_dir: Path, manifest: RunManifest) -> None:
        """Make (0700) and lock the run folder and write its manifest. The folder, and
        ``cases.jsonl`` (appended to, so not written by a rename), are refused when they
        are symbolic links: a copied folder could point them anywhere."""
        if not run_dir.exists() and not self.config.resume:
            self._made_folder = run_dir  # removed again if no case reaches it
        try:
            private_dir(run_dir)
            refuse_link(run_dir / RECORDS_NAME, "the case records")
        except LinkRefused as exc:
            raise RunError(str(exc)) from None
        self._folder_lock, problem = lock_folder(run_dir)
        if self._folder_lock is None:
            # Another run holds the folder (it may have made it a moment after this run
            # looked): never remove it, or the winner loses its folder mid-write.
            self._made_folder = None
            raise RunError(str(problem))
        if not self.config.resume and (run_dir / RECORDS_NAME).exists():
            # Checked again under the lock: a run that started with this one may have
            # finished in between.
            raise RunError(f"{run_dir}: already holds a run; use --resume {run_dir}")
        write_manifest(run_dir, manifest)

    def _open_reuse(
        self, plan: RunPlan, llm: LLMClient, prices: PriceTable, manifest: RunManifest
    ) -> None:
        """The result cache and this run's record identity (see ``_reuse.py``)."""
        cfg = self.config
        cached = cfg.cache_mode in ("read-write", "refresh")
        reuse = RecordCache(cfg.cache_path) if cached and cfg.cache_path else None
        # Every setting that can change a record (``_reuse.RECORD_SETTINGS``; the system
        # among them, so a run of another system never takes this pipeline's records).
        settings = identity_settings(cfg)
        if self.judge is not None:
            settings["judge"] = self.judge.identity()
        self._identity = record_identity(
            settings,
            plan.prompts.file_hashes(),
            {
                "provider": llm.provider.name,
                "model": llm.provider.model,
                "base_url": llm.provider.base_url or None,
                "options": llm.options,
            },
            prices.cost(llm.provider.model, Usage(1_000_000, 1_000_000)),
            manifest.packages,
        )
        self._reuse = reuse
        self._reuse_read = cfg.cache_mode == "read-write" and cfg.reuse
        self.records_reused = 0

    # -- running ---------------------------------------------------------------------

    def run(self) -> tuple[Path, RunSummary, ExitCode]:
        """Run (or resume) and report. Returns the run folder, the summary and the exit
        code (0 ok, 3 provider errors above the tolerance, 4 a replay-only cache miss)."""
        self._folder_lock = None
        self._made_folder = None
        try:
            return self._run()
        except RunError as exc:
            # A new run that fails before its first case leaves no folder behind; one
            # whose requests wait in a batch folder is resumed from it.
            if exc.exit_code == ExitCode.BATCH_WAITING:
                raise
            if self._folder_lock is not None:
                self._folder_lock.release()
                self._folder_lock = None
            self._remove_if_empty()
            raise
        finally:
            if self._folder_lock is not None:
                self._folder_lock.release()

    def _remove_if_empty(self) -> None:
        """Remove the run folder this run made when no case record reached it: nothing in
        it is worth keeping (its manifest describes a run that did not happen)."""
        run_dir = self._made_folder
        if run_dir is None:
            return
        records = run_dir / RECORDS_NAME
        if records.exists() and records.stat().st_size > 0:
            return
        shutil.rmtree(run_dir, ignore_errors=True)

    def _run(self) -> tuple[Path, RunSummary, ExitCode]:
        plan = plan_run(self.config, self._suite)
        cfg = self.config = plan.config  # a resume's: the manifest's settings taken
        llm = self._client(plan)
        try:
            prices = PriceTable.load(cfg.prices)
            if cfg.batch:
                prices = prices.scaled(BATCH_PRICE_FACTOR)  # the batch price: half
        except ConfigError as exc:
            raise RunError(str(exc)) from None
        self.judge = None
        if cfg.matcher == "judge":
            try:
                self.judge = build_judge(cfg.model_options(), llm, cfg.judge_settings())
            except (ConfigError, PromptError) as exc:
                raise RunError(f"judge: {exc}") from None
        manifest = self._manifest(plan, llm)
        self._open_folder(plan.run_dir, manifest)
        self._open_reuse(plan, llm, prices, manifest)
        records = plan.run_dir / RECORDS_NAME
        done = repair_records(records)
        # Case id -> repeats still to run. Cases themselves are parsed one at a time later.
        todo: dict[str, list[int]] = {}
        for ref in plan.cases:
            pending = [r for r in range(cfg.repeats) if record_key(ref.id, r) not in done]
            if pending:
                todo[ref.id] = pending
        self._announce(plan, llm, len(done))
        if cfg.batch and todo and cfg.system == "hy_eval":
            resume = resume_command(plan.run_dir, manifest)
            self.batch_totals = fill_cache_by_batches(cfg, plan, todo, resume, llm, self.judge)
        summary = self._execute(plan, todo, llm, prices, manifest, len(done))
        manifest.finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        write_manifest(plan.run_dir, manifest)
        error_rate = summary.metrics["error_rate"].value or 0.0
        code = ExitCode.PROVIDER if error_rate > cfg.max_error_rate else ExitCode.OK
        return plan.run_dir, summary, code

    def _announce(self, plan: RunPlan, llm: LLMClient, done: int) -> None:
        cfg = self.config
        repeats = (
            f", {cfg.repeats} repeats at temperature {cfg.temperature:g}" if cfg.repeats > 1 else ""
        )
        if cfg.perturb:
            repeats = f", perturbation {cfg.perturb} (seed {cfg.perturb_seed})" + repeats
        system = "" if cfg.system == "hy_eval" else f"system {cfg.system}, "
        if cfg.context is not None and llm.provider.name == "local":
            system += f"context {cfg.context}, "
        echo(
            f"hy-eval: {plan.suite.name}: {len(plan.cases)} cases ({done} already done), "
            f"{system}provider {llm.provider.name}, model {llm.provider.model}, "
            f"variant {cfg.variant}, "
            f"cache {cfg.cache_mode}" + structured_note(llm) + repeats,
            err=True,
        )

    def _execute(
        self,
        plan: RunPlan,
        todo: dict[str, list[int]],
        llm: LLMClient,
        prices: PriceTable,
        manifest: RunManifest,
        done: int,
    ) -> RunSummary:
        """Run the cases still to do, then write the reports; return the summary. A
        replay-only cache miss, a bad dataset line or a stopped model is a ``RunError``
        naming what was kept and how to resume."""
        cfg = self.config
        records = plan.run_dir / RECORDS_NAME
        saved = manifest.model_copy(deep=True)  # as it stands before the run ends
        resume = resume_command(plan.run_dir, manifest)
        started = time.perf_counter()
        miss: CacheMiss | None = None
        self._external = self._start_external(plan, prices) if todo else None
        try:
            try:
                asyncio.run(
                    self._run_cases(plan.suite, todo, llm, plan.prompts, prices, records, done)
                )
                if self._batch_serve is not None:
                    finished = len(repair_records(records))
                    end_serve_round(self._batch_serve, self.cases_waiting, finished, resume)
            except CacheMiss as exc:
                miss = exc
            except DatasetError as exc:
                raise RunError(
                    "dataset error: " + "; ".join(exc.problems[:5]) + f" (finished cases are "
                    f"kept in {records}; resume with {resume})"
                ) from None
            except RunStopped as exc:
                # A native crash of the model library, or a server refusing every call the
                # same way: the finished cases are on disk.
                kept = len(repair_records(records))
                raise RunError(
                    f"{exc.describe()}; {kept} case{'' if kept == 1 else 's'} kept in {records}"
                    + (f"; finish with {resume}" if exc.resumable else ""),
                    exit_code=ExitCode.PROVIDER,
                ) from None
            calls = (self.answer_client() or llm).stats.as_dict()
            stats = {**calls, "records_reused": self.records_reused}
            if self.judge is not None and self.judge.llm is not llm:
                stats["judge_calls"] = self.judge.llm.stats.as_dict()
            if self.batch_totals is not None:
                stats["batch"] = self.batch_totals
            wall = time.perf_counter() - started
            summary = write_reports(
                plan.run_dir,
                saved,
                CallCounts.model_validate(stats),
                wall,
                {c.id for c in plan.cases},
                pass_k=cfg.pass_k,
            )
        except KeyboardInterrupt as exc:
            # Said once: a Ctrl-C caught by the run's handler has printed "interrupted".
            told = isinstance(exc, InterruptedRun)
            echo(
                ("hy-eval: " if told else "\nhy-eval: interrupted; ")
                + f"finished cases are kept in {records}. Resume with: {resume} "
                f"(or write their reports now: hy-eval report {plan.run_dir})",
                err=True,
            )
            raise InterruptedRun from None
        finally:
            if self._external is not None:
                self._external.stop()
            if self._batch_serve is not None:
                self._batch_serve.close()
            if self._reuse is not None:
                self._reuse.close()
        if miss is not None:
            raise RunError(str(miss), exit_code=ExitCode.CACHE_MISS)
        return summary

    def _start_external(self, plan: RunPlan, prices: PriceTable) -> ExternalRun | None:
        """The model server and worker settings of an external system; None for ours."""
        cfg = self.config
        if cfg.system == "hy_eval":
            return None
        try:
            if cfg.batch_dir:
                self._batch_serve = start_batch_serve(cfg, plan.run_dir)
            return ExternalRun(
                cfg.system,
                cfg.model_options(),
                prices,
                plan.run_dir / "system",
                case_timeout=cfg.worker_case_timeout(),
                client=self._batch_serve.client if self._batch_serve else None,
            )
        except (SystemInstallError, ConfigError) as exc:
            raise SystemUnavailable(str(exc)) from None
