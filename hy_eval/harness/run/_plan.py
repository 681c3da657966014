"""What a run will do, decided before any model is asked: the suite and its selected
cases, the prompts, the run folder, and on a resume the manifest it continues. Every
problem found here is a :class:`RunError` and leaves nothing on disk."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

from hy_eval._exitcodes import ExitCode
from hy_eval.harness.datasets import (
    DATASETS_DIR,
    CaseRef,
    DatasetError,
    Suite,
    load_suite,
    perturb_suite,
    select_cases,
)
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.run._folder import (
    endpoint_mismatch,
    folder_problem,
)
from hy_eval.harness.runlog import RECORDS_NAME, RunFolderError, RunManifest, read_manifest
from hy_eval.harness.systems import LOCAL_CONTEXT
from hy_eval.memory import PromptError, PromptLibrary
from hy_eval.memory._prompts import LANGUAGES, STAGES

REPORTS_DIR = Path("reports")


class RunError(Exception):
    """A run that cannot start or go on; ``exit_code`` is the CLI's. ``perturbation``
    names the perturbed run (``--perturb``) it happened in, if one."""

    def __init__(
        self, message: str, exit_code: int = ExitCode.USAGE, perturbation: str | None = None
    ) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.perturbation = perturbation


class SystemUnavailable(RunError):
    """The memory system under test could not be set up (its environment, or the model
    server in front of it): a matrix run goes on with the other systems."""


@dataclass
class RunPlan:
    """What a run is about to do."""

    #: The settings it runs with (a resume's: the manifest's identity and selection).
    config: RunConfig
    suite: Suite
    cases: list[CaseRef]
    prompts: PromptLibrary
    run_dir: Path
    #: The manifest of the run being resumed, or None for a new run.
    previous: RunManifest | None


def resume_settings(cfg: RunConfig) -> tuple[RunConfig, RunManifest | None]:
    """The settings a run of ``cfg`` runs with, and the manifest it resumes: on a
    resume, the manifest's identity and selection taken (``RunConfig.resumed``) and its
    endpoints held to the command line's; else ``cfg`` itself and None. The command line
    calls it too, so that what it prints after a run names the settings that ran."""
    if not cfg.resume:
        return cfg, None
    resume_dir = Path(cfg.resume)
    try:
        previous = read_manifest(resume_dir)
    except RunFolderError as exc:
        raise RunError(str(exc)) from None
    # Provider, model and base URL stay the command line's (checked by the runner).
    try:
        cfg = cfg.resumed(previous.params.saved())
    except ValueError as exc:
        raise RunError(f"{resume_dir}/manifest.json: {exc}") from None
    problem = endpoint_mismatch(resume_dir, previous, cfg)
    if problem:
        raise RunError(problem)
    return cfg, previous


def plan_run(cfg: RunConfig, suite: Suite | None = None) -> RunPlan:
    """The plan of the run ``cfg`` describes (on a resume, with the run's saved settings).
    ``suite`` is the suite ``cfg.suite`` names when the caller has loaded it already."""
    cfg, previous = resume_settings(cfg)
    if previous is not None:
        suite = None  # the suite the manifest names
    elif cfg.context is None and cfg.provider == "local" and cfg.system in LOCAL_CONTEXT:
        # The context the system needs on the embedded model; the manifest records it.
        cfg = cfg.model_copy(update={"context": LOCAL_CONTEXT[cfg.system]})
    problem = cfg.problem()
    if problem:
        raise RunError(f"{cfg.resume}/manifest.json: {problem}" if cfg.resume else problem)
    suite, cases = _select(cfg, _load_suite(cfg, suite))
    prompts = _prompts(cfg.variant)
    if previous is not None and previous.dataset_hash != suite.hash:
        raise RunError(f"{cfg.resume}: the dataset changed since this run started; start a new run")
    if previous is not None and previous.prompt_hashes != prompts.file_hashes():
        raise RunError(f"{cfg.resume}: the prompts changed since this run started")
    run_dir = Path(cfg.resume) if cfg.resume else _new_folder(cfg, suite)
    problem = folder_problem(run_dir, [DATASETS_DIR, *{f.parent for f in suite.files}])
    if problem:
        raise RunError(problem)
    # The folder is made once the model is set up (Runner.run): a bad flag leaves nothing.
    return RunPlan(cfg, suite, cases, prompts, run_dir, previous)


def _load_suite(cfg: RunConfig, suite: Suite | None) -> Suite:
    if suite is not None:
        return suite
    try:
        return load_suite(cfg.suite)
    except DatasetError as exc:
        raise RunError("dataset error: " + "; ".join(exc.problems[:5])) from None


def _select(cfg: RunConfig, suite: Suite) -> tuple[Suite, list[CaseRef]]:
    """The suite's cases this run runs: filtered, sampled, limited, perhaps perturbed."""
    if suite.kind != "memory":
        raise RunError(f"suite {suite.name!r} has no model cases; run it with --suite history")
    try:
        cases = select_cases(suite.refs, cfg.filter, cfg.sample, cfg.limit)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    if cfg.perturb and cases:
        # After the filter and limit: the perturbed run pairs with the base run's cases.
        suite = perturb_suite(suite, cases, cfg.perturb, cfg.perturb_seed)
        cases = list(suite.refs)
    if not cases:
        raise RunError(f"no case of suite {suite.name!r} matches the filter")
    return suite, cases


def _prompts(variant: str) -> PromptLibrary:
    """The variant's prompts, every stage and language rendered once to check them."""
    try:
        prompts = PromptLibrary(variant)
        for stage in STAGES:
            for lang in LANGUAGES:
                prompts.template(stage, lang)
    except PromptError as exc:
        raise RunError(str(exc)) from None
    return prompts


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "model"


def _new_folder(cfg: RunConfig, suite: Suite) -> Path:
    if cfg.out:
        run_dir = Path(cfg.out)
    else:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        model = _slug(cfg.model or cfg.provider)
        system = "" if cfg.system == "hy_eval" else f"{cfg.system}-"
        run_dir = REPORTS_DIR / f"{stamp}-{suite.name}-{system}{model}-{cfg.variant}"
    if (run_dir / RECORDS_NAME).exists():
        raise RunError(f"{run_dir}: already holds a run; use --resume {run_dir}")
    return run_dir
