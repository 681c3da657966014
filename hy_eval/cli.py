"""Command-line interface: ``hy-eval``, ``python -m hy_eval`` and ``run_eval.py``.

Exit codes (README, docs/ci.md): 0 success; 1 a gate failed; 2 usage, configuration or input
error (one line on stderr, never a traceback); 3 provider errors above the tolerance;
4 a cache miss in replay-only mode; 130 interrupted.

Heavy modules (pandas, matplotlib, vendor SDKs, llama.cpp) are imported inside the
commands that use them, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode

EXIT_OK = ExitCode.OK
EXIT_GATE = ExitCode.GATE
EXIT_USAGE = ExitCode.USAGE
EXIT_PROVIDER = ExitCode.PROVIDER
EXIT_CACHE_MISS = ExitCode.CACHE_MISS
EXIT_INTERRUPTED = ExitCode.INTERRUPTED


class UserError(Exception):
    """An error the user can fix: printed as one line, exit code ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def load_conversation_file(path: str) -> tuple[Any, Any]:
    """Read a JSON list of messages, or ``{"messages": [...], "system": "..."}``."""
    text = _read_input(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except (RecursionError, ValueError):  # issue 14: nested too deeply, or a huge integer
        raise UserError(f"{path}: JSON nested too deeply or with a number too long") from None
    if isinstance(data, dict):
        unknown = set(data) - {"messages", "system"}
        if unknown:
            raise UserError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
        if "messages" not in data:
            raise UserError(f"{path}: object without a 'messages' field")
        return data["messages"], data.get("system")
    return data, None


def _normalised(path: str) -> list[Any]:
    from hy_eval.conversation import MessageError, normalise_messages

    messages, system = load_conversation_file(path)
    try:
        return normalise_messages(messages, system=system)
    except MessageError as exc:
        raise UserError(f"{path}: {exc}") from None


def cmd_render(args: argparse.Namespace) -> int:
    from hy_eval.conversation import render_conversation, resolve_user_name

    messages = _normalised(args.file)
    user = resolve_user_name(messages)
    for other in user.conflicts:
        print(
            f"warning: user name {other!r} differs from {user.name!r}; the first one is used",
            file=sys.stderr,
        )
    print(render_conversation(messages, lang=args.lang))
    return EXIT_OK


def cmd_parse_history(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from hy_eval.conversation import HistoryError, read_l1_raw

    text = _read_input(args.file)
    try:
        parsed = read_l1_raw(text)
    except HistoryError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    out = [{k: v for k, v in asdict(m).items() if v is not None} for m in parsed.messages]
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return EXIT_OK


#: Sub-command names; anything else as the first argument means ``run``.
COMMANDS = (
    "run",
    "render",
    "parse-history",
    "cache",
    "memory",
    "datasets",
    "compare",
    "baseline",
    "cassette",
)


DEFAULT_CACHE = ".hy_eval/cache.sqlite"


def _cache_path(args: argparse.Namespace) -> str:
    import os

    return str(args.cache or os.environ.get("HY_EVAL_CACHE") or DEFAULT_CACHE)


def cmd_cache_stats(args: argparse.Namespace) -> int:
    from hy_eval.llm import AnswerCache

    path = _cache_path(args)
    if not Path(path).exists():
        raise UserError(f"{path}: no cache file")
    stats = AnswerCache(path).stats()
    print(f"cache {stats['path']}: {stats['answers']} answers, {stats['bytes']:,} bytes")
    for row in stats["by_model"]:
        print(f"  {row['provider']}:{row['model']}  {row['answers']}")
    return EXIT_OK


def cmd_cache_explain(args: argparse.Namespace) -> int:
    from hy_eval.llm import AnswerCache

    path = _cache_path(args)
    if not Path(path).exists():
        raise UserError(f"{path}: no cache file")
    try:
        rows = AnswerCache(path).explain(args.key)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not rows:
        raise UserError(f"no cached answer whose key starts with {args.key!r} in {path}")
    print(json.dumps(rows, ensure_ascii=False, indent=2))
    return EXIT_OK


def _add_cache_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache", help=f"answer cache file (default $HY_EVAL_CACHE or {DEFAULT_CACHE})")


def add_model_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--provider", default="local", help="local (default), openai or anthropic")
    g.add_argument("--model", help="model id, or a GGUF path for local (default: embedded)")
    g.add_argument("--base-url", help="endpoint of an OpenAI-compatible or Anthropic server")
    g.add_argument("--api-key", help="API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY)")
    g.add_argument(
        "--structured",
        choices=["json_schema", "json_object_schema", "tools", "json_object", "text", "auto"],
        help="openai provider: how to ask for JSON (default: auto with --base-url, which "
        "probes the server once; json_schema for OpenAI). See docs/llm.md",
    )
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per call (default 120)")
    g.add_argument("--retries", type=int, default=4, help="retries per call (default 4)")
    g.add_argument(
        "--retry-delay",
        type=float,
        default=0.5,
        help="first backoff delay in seconds, doubling per retry (default 0.5)",
    )
    g.add_argument(
        "--cache-mode", default="read-write", help="read-write, replay-only, off, refresh"
    )
    _add_cache_flag(g)  # type: ignore[arg-type]


def _at_least(flag: str, value: float, low: float, *, above: bool = False) -> None:
    """A meaningless number (a negative count, a zero timeout) is a usage error (issue 14)."""
    if value < low or (above and value == low):
        raise UserError(f"{flag} must be {'above' if above else 'at least'} {low:g} (got {value})")


def make_llm(args: argparse.Namespace, concurrency: int | None = None) -> Any:
    """An ``LLMClient`` from the model flags; configuration problems are ``UserError``."""
    from hy_eval.llm import ConfigError, build_client

    _at_least("--timeout", args.timeout, 0, above=True)
    _at_least("--retries", args.retries, 0)
    options = {"structured": args.structured} if args.structured else None
    if options and args.provider != "openai":
        raise UserError("--structured applies to the openai provider only")
    try:
        return build_client(
            args.provider,
            args.model,
            base_url=args.base_url,
            api_key=args.api_key,
            options=options,
            cache_path=_cache_path(args),
            cache_mode=args.cache_mode,
            concurrency=concurrency,
            timeout=args.timeout,
            retries=args.retries,
        )
    except ConfigError as exc:
        raise UserError(str(exc)) from None


def cmd_memory_add(args: argparse.Namespace) -> int:
    import asyncio

    from hy_eval.conversation import MessageError
    from hy_eval.llm import CacheMiss, ModelProcessDied, ProviderError
    from hy_eval.memory import MemoryClient, MemoryStore, PromptError, PromptLibrary

    messages, system = load_conversation_file(args.file)
    try:
        prompts = PromptLibrary(args.variant)
    except PromptError as exc:
        raise UserError(str(exc)) from None
    llm = make_llm(args)
    client = MemoryClient(llm, MemoryStore(args.db), prompts, guard=not args.no_guard)
    print(f"model: {llm.provider.name}:{llm.provider.model}", file=sys.stderr)

    async def go() -> Any:
        try:
            return await client.add(messages, args.user_id, args.session_id, system=system)
        finally:
            await llm.aclose()

    try:
        result = asyncio.run(go())
    except MessageError as exc:
        raise UserError(f"{args.file}: {exc}") from None
    except PromptError as exc:
        raise UserError(str(exc)) from None
    except CacheMiss as exc:
        raise UserError(str(exc), EXIT_CACHE_MISS) from None
    except ProviderError as exc:
        raise UserError(f"provider error: {exc}", EXIT_PROVIDER) from None
    except ModelProcessDied as exc:  # nothing was written to the store
        raise UserError(str(exc), EXIT_PROVIDER) from None
    out = {
        "facts": result.facts,
        "operations_raw": [o.as_dict() for o in result.reconciliation.raw],
        "operations_applied": [o.as_dict() for o in result.reconciliation.applied],
        "guard_events": [g.as_dict() for g in result.reconciliation.guard_events],
        "fallback": result.reconciliation.fallback,
        "parse_error": result.extraction.parse_error,
        "profile_changes": result.profile_changes,
        "profile_issues": result.extraction.profile_issues,
        "l1_raw_id": result.l1_raw_id,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
        },
    }
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return EXIT_OK


def cmd_memory_search(args: argparse.Namespace) -> int:
    from hy_eval.memory import MemoryStore

    _at_least("--limit", args.limit, 1)
    store = MemoryStore(args.db)
    for m in store.search(args.query, args.user_id, args.limit):
        print(f"{m.id}\t{m.owner}\t{m.text}")
    return EXIT_OK


def cmd_memory_show(args: argparse.Namespace) -> int:
    from hy_eval.memory import MemoryStore

    store = MemoryStore(args.db)
    snap = store.snapshot(args.user_id)
    for m in snap["memories"]:
        m["history"] = store.history(m["id"])
    print(json.dumps(snap, ensure_ascii=False, indent=2))
    return EXIT_OK


def _run_config(args: argparse.Namespace) -> Any:
    from hy_eval.harness import RunConfig

    return RunConfig(
        suite=args.suite or "multi_speaker",
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        structured=args.structured,
        variant=args.variant,
        limit=args.limit,
        filter=args.filter,
        concurrency=args.concurrency,
        cache_mode=args.cache_mode,
        cache_path=_cache_path(args),
        out=args.out,
        resume=args.resume,
        guard=not args.no_guard,
        reuse=not getattr(args, "no_reuse", False),
        timeout=args.timeout,
        retries=args.retries,
        retry_base_delay=args.retry_delay,
        max_error_rate=args.max_error_rate,
        repeats=getattr(args, "repeats", 1),
        temperature=getattr(args, "temperature", 0.0),
        pass_k=getattr(args, "pass_k", None),
        prices=args.prices,
        progress=not args.quiet,
    )


def _load_gates(args: argparse.Namespace) -> Any:
    if not args.gate:
        return None
    from hy_eval.harness._gate import GateConfigError, load_gates

    try:
        return load_gates(args.gate)
    except GateConfigError as exc:
        raise UserError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from hy_eval.harness import RunError, terminal_summary

    if args.suite is None and args.resume is None:
        raise UserError("give --suite NAME (for example --suite multi_speaker) or --resume DIR")
    if args.suite and _is_history_suite(args.suite):
        return cmd_history(args)
    if args.variants or args.models:
        return cmd_matrix(args)
    gates = _load_gates(args)  # a bad gates file fails before any model call
    _perturbations(args)
    config = _run_config(args)
    try:
        run_dir, summary, code = _run_one(config, args)
    except RunError as exc:
        if exc.exit_code == EXIT_CACHE_MISS:
            raise UserError(
                f"{exc}. If the prompts or the suite changed on purpose, re-record with: "
                f"hy-eval cassette record --suite {config.suite} --variant {config.variant}",
                exc.exit_code,
            ) from None
        raise UserError(str(exc), exc.exit_code) from None
    print(terminal_summary(summary, run_dir))
    _print_perturbations(summary)
    if code == EXIT_PROVIDER:
        rate = summary["metrics"]["error_rate"]["value"]
        print(
            f"hy-eval: error: {rate:.1%} of cases failed with provider errors "
            f"(tolerance {config.max_error_rate:.1%})",
            file=sys.stderr,
        )
        return code
    if gates is not None:
        return _apply_gates(gates, summary, run_dir, args.baseline)
    return code


def _perturbations(args: argparse.Namespace) -> list[str]:
    """The names given to --perturb (none without it); a one-line error for a bad one."""
    if not getattr(args, "perturb", None):
        return []
    from hy_eval.harness._perturb import parse_perturbations

    try:
        return parse_perturbations(args.perturb)
    except ValueError as exc:
        raise UserError(f"--perturb: {exc}") from None


def _run_one(config: Any, args: argparse.Namespace) -> tuple[Path, dict[str, Any], int]:
    """A run, and its perturbed runs when --perturb is given (issue 20)."""
    from hy_eval.harness import Runner

    names = _perturbations(args)
    if not names:
        return Runner(config).run()
    from hy_eval.harness._metamorphic import run_with_perturbations

    return run_with_perturbations(config, names, args.perturb_seed)


def _print_perturbations(summary: dict[str, Any]) -> None:
    from hy_eval.harness._metamorphic import terminal_lines

    for line in terminal_lines(summary):
        print(line)


def _apply_gates(gates: Any, summary: dict[str, Any], run_dir: Path, baseline: str | None) -> int:
    from hy_eval.harness._compare import CompareError
    from hy_eval.harness._gate import GateConfigError, evaluate, gate_text

    try:
        result = evaluate(gates, summary, run_dir, baseline)
    except (GateConfigError, CompareError) as exc:
        raise UserError(str(exc)) from None
    (run_dir / "gates.json").write_text(
        json.dumps(
            {
                "failures": result.failures,
                "warnings": result.warnings,
                "comparison": result.comparison,
            },
            ensure_ascii=False,
            indent=1,
        )
    )
    print(gate_text(result), file=sys.stderr if result.failures else sys.stdout)
    return EXIT_OK if result.ok else EXIT_GATE


def cmd_matrix(args: argparse.Namespace) -> int:
    """Every case under every (model, variant) combination, one sub-folder each, sharing
    the cache; then each combination compared with the first, Holm-corrected."""
    import datetime as dt

    from hy_eval.harness import RunError, terminal_summary
    from hy_eval.harness._compare import compare, comparison_text, holm
    from hy_eval.harness._compare import run_outcomes as load_run
    from hy_eval.llm import ConfigError, ModelSpec

    _perturbations(args)  # a bad name fails before any model call

    variants = [v for v in (args.variants or args.variant).split(",") if v]
    try:
        models = [ModelSpec.parse(m) for m in (args.models or args.provider).split(",") if m]
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    if args.resume:
        raise UserError("--resume takes a single run folder; resume each combination's folder")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    root = Path(args.out or f"reports/{stamp}-{args.suite}-matrix")
    combos = []
    worst = EXIT_OK
    for spec in models:
        for variant in variants:
            sub = argparse.Namespace(**vars(args))
            sub.provider, sub.model, sub.variant = spec.provider, spec.model or args.model, variant
            if spec.provider != args.provider:
                sub.base_url = None
            name = f"{str(spec).replace(':', '_').replace('/', '_')}--{variant}"
            sub.out = str(root / name)
            try:
                run_dir, summary, code = _run_one(_run_config(sub), sub)
                worst = max(worst, code)
            except RunError as exc:
                raise UserError(f"{name}: {exc}", exc.exit_code) from None
            print(f"== {name}\n{terminal_summary(summary, run_dir)}")
            _print_perturbations(summary)
            combos.append((name, run_dir, summary))
    base = load_run(combos[0][1])
    results = [compare(base, load_run(d)) for _, d, _ in combos[1:]]
    if len(results) > 1:
        for r, p in zip(results, holm([r["mcnemar"]["p_value"] for r in results]), strict=True):
            r["p_holm"] = p
    lines = [
        "| metric | " + " | ".join(n for n, _, _ in combos) + " |",
        "|---" * (len(combos) + 1) + "|",
    ]
    from hy_eval.harness._scoring import METRICS

    for metric in METRICS:
        cells = []
        for _, _, s in combos:
            v = s["metrics"][metric]["value"]
            cells.append("n/a" if v is None else f"{v:.3f}")
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    tokens = [
        f"{(s['tokens']['input'] + s['tokens']['output']) / max(1, s['cases']):.0f}"
        for _, _, s in combos
    ]
    lines.append("| tokens per case | " + " | ".join(tokens) + " |")
    text = (
        "\n".join(lines)
        + "\n\n"
        + "\n\n".join("```\n" + comparison_text(r) + "\n```" for r in results)
    )
    flips = []
    for (name, _, _), r in zip(combos[1:], results, strict=True):
        base_name = combos[0][0]
        flips.append(f"\n### Flipped cases: {name} against {base_name}\n")
        flips.append(
            f"Side by side, with a fact-level diff: [compare-{name}.html](compare-{name}.html)\n"
        )
        flips.append("| case | change | drill-down | what changed |\n|---|---|---|---|")
        for f in r["flipped"]:
            links = f"[A]({base_name}/report.html#{f['id']}) / [B]({name}/report.html#{f['id']})"
            changed = ", ".join(sorted(f["diff"])) or "-"
            flips.append(f"| {f['id']} | {f['change']} | {links} | {changed} |")
    (root / "matrix.md").write_text(text + "\n" + "\n".join(flips) + "\n", encoding="utf-8")
    from hy_eval.harness._compare_page import write_compare_page

    for (name, run_dir, _), r in zip(combos[1:], results, strict=True):
        write_compare_page(root / f"compare-{name}.html", r, combos[0][1], run_dir)
    (root / "matrix.json").write_text(
        json.dumps(
            {"combinations": [n for n, _, _ in combos], "comparisons": results},
            ensure_ascii=False,
            indent=1,
        ),
        encoding="utf-8",
    )
    print(text)
    print(f"matrix report: {root / 'matrix.md'}")
    return worst


def cmd_compare(args: argparse.Namespace) -> int:
    from hy_eval.harness._compare import CompareError, compare, comparison_text
    from hy_eval.harness._compare import run_outcomes as load_run

    try:
        result = compare(load_run(args.run_a), load_run(args.run_b), common_only=args.common_only)
    except CompareError as exc:
        raise UserError(str(exc)) from None
    print(comparison_text(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, ensure_ascii=False, indent=1))
    if args.html:
        from hy_eval.harness._compare_page import write_compare_page

        try:
            page = write_compare_page(args.html, result, args.run_a, args.run_b)
        except OSError as exc:
            raise UserError(f"{args.html}: cannot write the page ({exc.strerror})") from None
        print(f"comparison page: {page}")
    return EXIT_OK


def cmd_baseline_bless(args: argparse.Namespace) -> int:
    from hy_eval.harness._compare import CompareError
    from hy_eval.harness._gate import GateConfigError, bless

    try:
        path = bless(args.run_dir, args.out)
    except (GateConfigError, CompareError) as exc:
        raise UserError(str(exc)) from None
    print(f"baseline written: {path}")
    return EXIT_OK


def cmd_cassette_record(args: argparse.Namespace) -> int:
    """Run the suite with the read-write cache and export the answers it used."""
    import tempfile

    from hy_eval.harness import RunError, Runner
    from hy_eval.llm import AnswerCache, export_cassette

    args.cache_mode = "read-write"
    args.no_reuse = True  # every answer must be asked of the cache, to be exported
    out_path = Path(
        args.file or f"tests/cassettes/{args.suite}.{args.variant}.{args.provider}.jsonl"
    )
    with tempfile.TemporaryDirectory() as tmp:
        args.out = str(Path(tmp) / "run")
        runner = Runner(_run_config(args))
        try:
            _, summary, code = runner.run()
        except RunError as exc:
            raise UserError(str(exc), exc.exit_code) from None
    if code != EXIT_OK or runner.llm is None:
        raise UserError("the recording run had provider errors; nothing written", EXIT_PROVIDER)
    n = export_cassette(AnswerCache(_cache_path(args)), runner.llm.keys_used, out_path)
    print(f"cassette written: {out_path} ({n} answers, {summary['cases']} cases)")
    return EXIT_OK


def cmd_cassette_import(args: argparse.Namespace) -> int:
    from hy_eval.llm import AnswerCache, import_cassette

    try:
        n = import_cassette(args.file, AnswerCache(_cache_path(args)))
    except FileNotFoundError:
        raise UserError(f"{args.file}: file not found") from None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    print(f"imported {n} answers into {_cache_path(args)}")
    return EXIT_OK


def _is_history_suite(suite: str) -> bool:
    from hy_eval.harness._dataset import DatasetError, resolve_suite, suite_kind

    try:
        return suite_kind(resolve_suite(suite)[0]) == "history"
    except DatasetError:
        return False  # the run reports the unknown suite


def cmd_history(args: argparse.Namespace) -> int:
    from hy_eval.harness._history import run_history_suite

    try:
        report = run_history_suite(args.suite or "history")
    except ValueError as exc:
        raise UserError(str(exc)) from None
    print(report.text)
    return EXIT_OK if report.passed == report.total else EXIT_GATE


def cmd_datasets_validate(args: argparse.Namespace) -> int:
    from hy_eval.harness import DatasetError, load_suite
    from hy_eval.harness._dataset import DATASETS_DIR

    targets = (
        [args.target]
        if args.target
        else sorted(p.name for p in DATASETS_DIR.iterdir() if p.is_dir())
    )
    problems: list[str] = []
    for target in targets:
        try:
            suite = load_suite(target)
        except DatasetError as exc:
            problems.extend(exc.problems)
        else:
            langs = {lang: sum(c.lang == lang for c in suite.cases) for lang in ("en", "zh")}
            print(f"{suite.name}: {len(suite.cases)} cases ok ({langs['en']} en, {langs['zh']} zh)")
    for line in problems:
        print(line, file=sys.stderr)
    return EXIT_USAGE if problems else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hy-eval",
        description="Evaluate multi-speaker memory prompts. With no sub-command, runs 'run'.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("render", help="print the L1_RAW rendering of a conversation file")
    p.add_argument("file", help="JSON list of messages or {messages, system}; '-' for stdin")
    p.add_argument("--lang", choices=["en", "zh"], help="force the name line's language")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("parse-history", help="print the messages of an L1_RAW text as JSON")
    p.add_argument("file", help="L1_RAW text file; '-' for stdin")
    p.set_defaults(func=cmd_parse_history)

    cache = sub.add_parser("cache", help="inspect the answer cache").add_subparsers(
        dest="cache_command", metavar="ACTION", required=True
    )
    p = cache.add_parser("stats", help="answers stored, per provider and model")
    _add_cache_flag(p)
    p.set_defaults(func=cmd_cache_stats)
    p = cache.add_parser("explain", help="show what went into a key (to debug misses)")
    p.add_argument("key", help="a key or its first characters (at least 6)")
    _add_cache_flag(p)
    p.set_defaults(func=cmd_cache_explain)

    p = sub.add_parser("run", help="run a suite through the pipeline and score it (default)")
    p.add_argument("--suite", help="suite name under datasets/, a folder or a .jsonl file")
    p.add_argument("--variant", default="default", help="prompt variant (default: default)")
    p.add_argument("--limit", type=int, help="run only the first N cases (after --filter)")
    p.add_argument("--filter", help="lang=zh,tag=adversarial,rule=A2,id=... (all must hold)")
    p.add_argument("--concurrency", type=int, help="cases at once (default: provider's)")
    p.add_argument("--out", help="run folder (default reports/<time>-<suite>-<model>-<variant>)")
    p.add_argument(
        "--resume",
        metavar="DIR",
        help="finish an interrupted run in DIR (with the run's --provider, --model, --base-url)",
    )
    p.add_argument("--no-guard", action="store_true", help="switch the cross-subject guard off")
    p.add_argument(
        "--no-reuse",
        action="store_true",
        help="run every case even if its finished record is in the cache (answers still "
        "come from the cache)",
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
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run each case N times (distinct cache keys; use --temperature > 0)",
    )
    p.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (default 0)"
    )
    p.add_argument(
        "--pass-k",
        type=int,
        help="with --repeats: a case passes when K of its N repeats pass (default N)",
    )
    p.add_argument("--variants", help="matrix run: comma-separated prompt variants")
    p.add_argument("--models", help="matrix run: local,openai:gpt-4o-mini,anthropic:MODEL")
    p.add_argument(
        "--perturb",
        help="also run the suite perturbed (rename,swap_perspective,anthropic,name_line,order)"
        " into RUN/perturb/<name>/ and report consistency (docs/metrics.md)",
    )
    p.add_argument("--perturb-seed", type=int, default=0, help="seed of the perturbations")
    add_model_flags(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compare", help="paired comparison of two run folders")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument(
        "--common-only",
        action="store_true",
        help="compare the shared case ids even when the datasets differ",
    )
    p.add_argument("--json", help="also write the comparison as JSON here")
    p.add_argument(
        "--html",
        metavar="OUT",
        help="also write the comparison page here: differences, flipped cases side by side",
    )
    p.set_defaults(func=cmd_compare)

    baseline = sub.add_parser("baseline", help="bless a run as the baseline").add_subparsers(
        dest="baseline_command", metavar="ACTION", required=True
    )
    p = baseline.add_parser("bless", help="write reports/baselines/<suite>.json from a run")
    p.add_argument("run_dir")
    p.add_argument("--out", help="baseline path (default reports/baselines/<suite>.json)")
    p.set_defaults(func=cmd_baseline_bless)

    cassette = sub.add_parser("cassette", help="record or import cached answers").add_subparsers(
        dest="cassette_command", metavar="ACTION", required=True
    )
    p = cassette.add_parser("record", help="run a suite and write the answers it used")
    p.add_argument("--suite", default="multi_speaker")
    p.add_argument("--variant", default="default")
    p.add_argument(
        "--file", help="cassette path (default tests/cassettes/<suite>.<variant>.<provider>.jsonl)"
    )
    for name in (
        "limit",
        "filter",
        "concurrency",
        "resume",
        "prices",
        "gate",
        "baseline",
        "variants",
        "models",
    ):
        p.set_defaults(**{name: None})
    p.set_defaults(no_guard=False, max_error_rate=0.0, quiet=False)
    add_model_flags(p)
    p.set_defaults(func=cmd_cassette_record)
    p = cassette.add_parser("import", help="load a cassette into the answer cache")
    p.add_argument("file")
    _add_cache_flag(p)
    p.set_defaults(func=cmd_cassette_import)

    datasets = sub.add_parser("datasets", help="check dataset files").add_subparsers(
        dest="datasets_command", metavar="ACTION", required=True
    )
    p = datasets.add_parser("validate", help="report every problem as file:line: field: message")
    p.add_argument("target", nargs="?", help="suite name, folder or .jsonl file (default: all)")
    p.set_defaults(func=cmd_datasets_validate)

    memory = sub.add_parser("memory", help="try the memory pipeline by hand").add_subparsers(
        dest="memory_command", metavar="ACTION", required=True
    )
    p = memory.add_parser("add", help="add a conversation file for a user")
    p.add_argument("file", help="JSON list of messages or {messages, system}; '-' for stdin")
    p.add_argument("--user-id", required=True)
    p.add_argument("--session-id")
    p.add_argument("--db", required=True, help="SQLite store file")
    p.add_argument("--variant", default="default", help="prompt variant (default: default)")
    p.add_argument("--no-guard", action="store_true", help="switch the cross-subject guard off")
    add_model_flags(p)
    p.set_defaults(func=cmd_memory_add)
    p = memory.add_parser("search", help="full-text search of a user's memories")
    p.add_argument("query")
    p.add_argument("--user-id", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--limit", type=int, default=5)
    p.set_defaults(func=cmd_memory_search)
    p = memory.add_parser("show", help="a user's memories with history, profile and L1_RAW")
    p.add_argument("--user-id", required=True)
    p.add_argument("--db", required=True)
    p.set_defaults(func=cmd_memory_show)
    return parser


def _enable_faulthandler() -> None:
    """A native crash (a model library's segfault) prints where it happened on stderr."""
    if faulthandler.is_enabled():
        return
    with contextlib.suppress(AttributeError, OSError, ValueError):  # stderr without a fd
        faulthandler.enable()


def main(argv: Sequence[str] | None = None) -> int:
    _enable_faulthandler()
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list or (args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help")):
        args_list.insert(0, "run")
    args = parser.parse_args(args_list)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"hy-eval: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("hy-eval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
