"""``run`` (the default command): a suite, its perturbed runs, a matrix, or the history
suite; then the gates. The work is the harness's; this module reads flags and prints."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hy_eval._exitcodes import ExitCode
from hy_eval._redact import redact
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError
from hy_eval.cli._matchers import add_matcher_flags, matcher_settings
from hy_eval.cli._model import add_model_flags, model_options

if TYPE_CHECKING:  # annotations only: --help imports no harness module
    from hy_eval.harness import RunConfig
    from hy_eval.harness.runlog import RunSummary


def run_config(args: argparse.Namespace) -> RunConfig:
    """The ``RunConfig`` of the ``run`` flags: the model options and the run's own."""
    from hy_eval.harness import RunConfig

    return RunConfig.of(
        model_options(args),
        suite=args.suite or "multi_speaker",
        system=args.system,
        variant=args.variant,
        limit=args.limit,
        sample=args.sample,
        filter=args.filter,
        out=args.out,
        resume=args.resume,
        guard=not args.no_guard,
        reuse=not args.no_reuse,
        max_error_rate=args.max_error_rate,
        case_timeout=args.case_timeout,
        repeats=args.repeats,
        pass_k=args.pass_k,
        prices=args.prices,
        progress=not args.quiet,
        **matcher_settings(args),
        batch=args.batch or args.batch_dir is not None,
        batch_dir=args.batch_dir,
        batch_poll_interval=args.batch_poll_interval,
        batch_cancel_on_interrupt=args.batch_cancel_on_interrupt,
    )


def _load_gates(args: argparse.Namespace) -> Any:
    if not args.gate:
        return None
    from hy_eval.harness import GateConfigError, load_gates

    try:
        return load_gates(args.gate)
    except GateConfigError as exc:
        raise UserError(str(exc)) from None


def _perturbations(args: argparse.Namespace) -> list[str]:
    """The names given to --perturb (none without it); a one-line error for a bad one."""
    if not args.perturb:
        return []
    from hy_eval.harness import parse_perturbations

    try:
        return parse_perturbations(args.perturb)
    except ValueError as exc:
        raise UserError(f"--perturb: {exc}") from None


def _print_perturbations(summary: RunSummary) -> None:
    from hy_eval.harness.report import terminal_lines

    for line in terminal_lines(summary):
        echo(line)


def _loaded_suite(suite: str | None) -> Any:
    """The suite, loaded once here and handed to the runner; None when there is no name
    (a resume) or the suite is broken: the runner then loads it and reports the problem
    after checking the settings."""
    from hy_eval.harness import DatasetError, load_suite

    if not suite:
        return None
    try:
        return load_suite(suite)
    except DatasetError:
        return None


def cmd_run(args: argparse.Namespace) -> int:
    from hy_eval.harness import RunError, run_suite, terminal_summary
    from hy_eval.harness.run import resume_settings

    if args.suite is None and args.resume is None:
        raise UserError("give --suite NAME (for example --suite multi_speaker) or --resume DIR")
    suite = _loaded_suite(args.suite)
    if suite is not None and suite.kind == "history":
        return cmd_history(args)
    if args.batch_dir and (args.variants or args.models or args.systems or args.perturb):
        # Each round ends the process and is continued by --resume of one run folder.
        raise UserError(
            "--batch-dir runs one suite run at a time (no --variants, --models, --systems "
            "or --perturb): run each combination with an --out of its own"
        )
    if args.variants or args.models or args.systems:
        return cmd_matrix(args)
    gates = _load_gates(args)  # a bad gates file fails before any model call
    perturbations = _perturbations(args)
    config = run_config(args)
    try:
        # On a resume, the settings that run (its manifest's): the messages below name them.
        config, _ = resume_settings(config)
        run_dir, summary, code = run_suite(
            config, perturbations, args.perturb_seed, suite=None if args.resume else suite
        )
    except RunError as exc:
        if exc.exit_code == ExitCode.CACHE_MISS:
            hint = _miss_hint(args, config, exc.perturbation)
            raise UserError(f"{exc}. {hint}", exc.exit_code) from None
        if exc.exit_code == ExitCode.BATCH_WAITING:
            echo(f"hy-eval: {exc}", err=True)  # a step of the round loop, not an error
            return ExitCode.BATCH_WAITING
        raise UserError(str(exc), exc.exit_code) from None
    echo(terminal_summary(summary, run_dir))
    _print_perturbations(summary)
    if code == ExitCode.PROVIDER:
        rate = summary.metrics["error_rate"].value
        echo(
            f"hy-eval: error: {rate:.1%} of cases failed with provider errors "
            f"(tolerance {config.max_error_rate:.1%}){_error_cause(run_dir)}",
            err=True,
        )
        return code
    if gates is not None:
        return _apply_gates(gates, summary, run_dir, args.baseline)
    return code


def _error_cause(run_dir: Path) -> str:
    """``; most often (18 of 20): <error>; every case's error is in cases.jsonl``: the
    commonest error of the run's failed cases, so the cause is read in the terminal."""
    from collections import Counter

    from hy_eval.harness.runlog import RECORDS_NAME, RunFolderError, read_records
    from hy_eval.llm import short_text

    try:
        errors = Counter(
            short_text(r.error, 200) for r in read_records(run_dir / RECORDS_NAME) if r.error
        )
    except (OSError, RunFolderError):
        return ""
    if not errors:
        return ""
    error, count = errors.most_common(1)[0]
    total = sum(errors.values())
    where = run_dir / RECORDS_NAME
    return f"; most often ({count} of {total}): {error}; every case's error is in {where}"


def _miss_hint(args: argparse.Namespace, config: RunConfig, perturbation: str | None) -> str:
    """How to record the answers a replay-only run missed. ``cassette record`` records the
    unperturbed suite only; a perturbed run's answers come from a read-write run."""
    if perturbation is None:
        return (
            "If the prompts or the suite changed on purpose, re-record with: hy-eval "
            f"cassette record --suite {config.suite} --variant {config.variant}"
        )
    flags = [f"--suite {config.suite}", f"--variant {config.variant}"]
    if args.provider != "local" or args.model:
        flags.append(
            f"--provider {args.provider}" + (f" --model {args.model}" if args.model else "")
        )
    if args.base_url:
        flags.append(f"--base-url {redact(args.base_url)}")  # a URL may hold a key
    flags += [f"--perturb {args.perturb}", f"--perturb-seed {args.perturb_seed}"]
    flags.append(f"--cache {config.cache_path}")
    return (
        f"The answers of the perturbed run ({perturbation}, seed {args.perturb_seed}) are not "
        "in the cache; `cassette record` records the unperturbed suite only. Record them "
        "into the cache with a read-write run: python run_eval.py " + " ".join(flags)
    )


def _apply_gates(gates: Any, summary: RunSummary, run_dir: Any, baseline: str | None) -> int:
    from hy_eval.harness import CompareError, GateConfigError, apply_gates

    try:
        verdict = apply_gates(gates, summary, run_dir, baseline)
    except (GateConfigError, CompareError) as exc:
        raise UserError(str(exc)) from None
    echo(verdict.text, err=not verdict.passed)
    return ExitCode.OK if verdict.passed else ExitCode.GATE


def cmd_matrix(args: argparse.Namespace) -> int:
    """Every case under every (model, variant) combination, then the comparisons."""
    from pathlib import Path

    from hy_eval.harness import MatrixEntry, RunError, run_matrix, terminal_summary
    from hy_eval.llm import ConfigError, ModelSpec

    perturbations = _perturbations(args)  # a bad name fails before any model call
    variants = [v for v in (args.variants or args.variant).split(",") if v]
    try:
        models = [ModelSpec.parse(m) for m in (args.models or args.provider).split(",") if m]
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    if args.resume:
        raise UserError("--resume takes a single run folder; resume each combination's folder")

    def show(entry: MatrixEntry) -> None:
        echo(f"== {entry.name}\n{terminal_summary(entry.summary, entry.run_dir)}")
        _print_perturbations(entry.summary)

    try:
        result = run_matrix(
            run_config(args),
            models,
            variants,
            Path(args.out) if args.out else None,
            perturbations=perturbations,
            seed=args.perturb_seed,
            on_run=show,
            systems=[s for s in (args.systems or "").split(",") if s],
            on_skip=lambda name, why: echo(f"hy-eval: {name} not run: {why}", err=True),
        )
    except RunError as exc:
        raise UserError(str(exc), exc.exit_code) from None
    echo(result.text)
    echo(f"matrix report: {result.report}")
    for page in result.pages:
        echo(f"comparison page: {page}")
    return result.code


def cmd_history(args: argparse.Namespace) -> int:
    from hy_eval.harness.datasets import run_history_suite

    try:
        report = run_history_suite(args.suite or "history")
    except ValueError as exc:
        raise UserError(str(exc)) from None
    echo(report.text)
    return ExitCode.OK if report.passed == report.total else ExitCode.GATE


def register(sub: Any) -> None:
    """The ``run`` sub-command (also what a command line without one runs)."""
    p = sub.add_parser("run", help="run a suite through the pipeline and score it (default)")
    _add_selection_flags(p)
    _add_output_flags(p)
    _add_repeat_and_matrix_flags(p)
    _add_batch_flags(p)
    add_model_flags(p)
    add_matcher_flags(p)
    p.set_defaults(func=cmd_run)


def _add_selection_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", help="suite name under datasets/, a folder or a .jsonl file")
    p.add_argument(
        "--system",
        default="hy_eval",
        help="memory system under test: hy_eval (this package's pipeline, default), "
        "hy_memory (Hy Memory's SDK) or mem0; the last two run in virtualenvs of their own, "
        "made on first use (docs/systems.md)",
    )
    p.add_argument(
        "--case-timeout",
        type=float,
        metavar="SECONDS",
        help="with --system hy_memory or mem0: seconds the system's worker may take for one "
        "case before the case fails and a new worker takes the next (default: 10 x --timeout, "
        "at least 600)",
    )
    p.add_argument("--variant", default="default", help="prompt variant (default: default)")
    p.add_argument(
        "--limit",
        type=int,
        help="run only the first N cases in file order (after --filter); in multi_speaker "
        "these are all English: --sample N is the quick look",
    )
    p.add_argument(
        "--sample",
        type=int,
        help="run N cases spread evenly over every file of the suite (after --filter): a "
        "fixed subset of both languages, the quick look",
    )
    p.add_argument("--filter", help="lang=zh,tag=adversarial,rule=A2,id=... (all must hold)")
    p.add_argument("--no-guard", action="store_true", help="switch the cross-subject guard off")
    p.add_argument(
        "--no-reuse",
        action="store_true",
        help="run every case even if its finished record is in the cache (answers still "
        "come from the cache)",
    )


def _add_output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="run folder (default reports/<time>-<suite>-<model>-<variant>)")
    p.add_argument(
        "--resume",
        metavar="DIR",
        help="finish an interrupted run in DIR (with the run's --provider, --model, --base-url)",
    )
    p.add_argument(
        "--max-error-rate",
        type=float,
        default=0.1,
        help="exit 3 when more cases than this fail with provider errors (default 0.1)",
    )
    p.add_argument("--prices", help="TOML file extending the price table")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--gate", help="gates TOML: fail (exit 1) when a gated metric regresses")
    p.add_argument("--baseline", help="baseline file (default reports/baselines/<suite>.json)")


def _add_batch_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--batch",
        action="store_true",
        help="send the requests through the vendor's batch endpoints first (half price, "
        "answers within 24 h; openai and anthropic; docs/llm.md)",
    )
    p.add_argument(
        "--batch-dir",
        metavar="DIR",
        help="implies --batch: the batch vendor is the folder DIR: each round's requests are "
        "written to it as an OpenAI Batch file (exit 5), answered by any tool (vllm "
        "run-batch, ...) into DIR/<id>.results.jsonl, and read back by the command it prints "
        '(openai provider; docs/llm.md, "Offline batches")',
    )
    p.add_argument(
        "--batch-poll-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="with --batch: seconds between two polls of the batches (default 30)",
    )
    p.add_argument(
        "--batch-cancel-on-interrupt",
        action="store_true",
        help="with --batch: Ctrl-C cancels the remote batches (default: they are left "
        "running and --resume collects them)",
    )


def _add_repeat_and_matrix_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run each case N times (distinct cache keys; use --temperature > 0)",
    )
    p.add_argument(
        "--pass-k",
        type=int,
        help="with --repeats: a case passes when K of its N repeats pass (default N)",
    )
    p.add_argument("--variants", help="matrix run: comma-separated prompt variants")
    p.add_argument(
        "--systems",
        help="matrix run: comma-separated memory systems (hy_eval,hy_memory,mem0); one that "
        "cannot be installed is said in one line and the others run (exit 2 at the end)",
    )
    p.add_argument("--models", help="matrix run: local,openai:gpt-4o-mini,anthropic:MODEL")
    p.add_argument(
        "--perturb",
        help="also run the suite perturbed (rename,swap_perspective,anthropic,name_line,order)"
        " into RUN/perturb/<name>/ and report consistency (docs/metrics.md)",
    )
    p.add_argument("--perturb-seed", type=int, default=0, help="seed of the perturbations")
