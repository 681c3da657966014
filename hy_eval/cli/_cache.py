"""``cache stats``, ``cache explain`` and ``cassette record/import``: the answer cache."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError
from hy_eval.cli._model import add_cache_flag, add_model_flags, cache_path, model_options


def _existing_cache(args: argparse.Namespace) -> Any:
    from hy_eval.llm import AnswerCache

    path = cache_path(args)
    if not Path(path).exists():
        raise UserError(f"{path}: no cache file")
    return AnswerCache(path)


def cmd_cache_stats(args: argparse.Namespace) -> int:
    stats = _existing_cache(args).stats()
    echo(f"cache {stats['path']}: {stats['answers']} answers, {stats['bytes']:,} bytes")
    for row in stats["by_model"]:
        echo(f"  {row['provider']}:{row['model']}  {row['answers']}")
    return ExitCode.OK


def cmd_cache_explain(args: argparse.Namespace) -> int:
    cache = _existing_cache(args)
    try:
        rows = cache.explain(args.key)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not rows:
        raise UserError(f"no cached answer whose key starts with {args.key!r} in {cache.path}")
    echo(json.dumps(rows, ensure_ascii=False, indent=2))
    return ExitCode.OK


def cmd_cassette_record(args: argparse.Namespace) -> int:
    """Run the suite with the read-write cache and export the answers it used."""
    from hy_eval.harness.run import RunError, record_cassette

    system = "" if args.system == "hy_eval" else f"{args.system}."
    sample = "" if args.sample is None else f".sample{args.sample}"
    out_path = Path(
        args.file
        or f"tests/cassettes/{args.suite}.{system}{args.variant}.{args.provider}{sample}.jsonl"
    )
    try:
        answers, cases = record_cassette(
            model_options(args, cache_mode="read-write"),
            args.suite,
            args.variant,
            out_path,
            system=args.system,
            sample=args.sample,
            case_filter=args.filter,
        )
    except RunError as exc:
        raise UserError(str(exc), exc.exit_code) from None
    echo(f"cassette written: {out_path} ({answers} answers, {cases} cases)")
    return ExitCode.OK


#: Differing answers listed by ``cassette agree`` (the rest counted).
AGREE_SHOWN = 20


def _cassette_rows(path: Path) -> dict[str, dict[str, Any]]:
    """A cassette's rows by key (``UserError`` naming the line that is not one)."""
    from hy_eval.llm.cache import cassette_rows

    try:
        return {str(row["key"]): row for _, row in cassette_rows(path)}
    except OSError as exc:
        raise UserError(f"{path}: cannot read the cassette ({exc.strerror})") from None
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _first_user_text(request: Any) -> str:
    """The start of a request's last user message, to tell a differing answer's case."""
    messages = request.get("messages") if isinstance(request, dict) else None
    users = [m.get("content") for m in messages or [] if isinstance(m, dict)]
    text = str(users[-1]) if users else ""
    return " ".join(text.split())[:70]


def cmd_cassette_agree(args: argparse.Namespace) -> int:
    """A cache's answers against a cassette's, key for key, and the two machines: exit 0
    when every shared answer is equal, 1 when some differ."""
    from hy_eval.harness.runlog import RunFolderError, read_manifest
    from hy_eval.llm.cache import machine_info, machines_match, read_sidecar

    cassette = Path(args.cassette)
    recorded = _cassette_rows(cassette)
    cache = _existing_cache(args)
    shared, differ = 0, []
    for key, _request, completion in cache.rows():
        row = recorded.get(key)
        if row is None:
            continue
        shared += 1
        if json.loads(completion).get("text") != row["completion"].get("text"):
            differ.append((key, row))
    echo(
        f"{shared} answers of {cache.path} were asked in {cassette}: "
        f"{shared - len(differ)} equal, {len(differ)} differ"
    )
    for key, row in differ[:AGREE_SHOWN]:
        request = row.get("request") or {}
        stage = request.get("schema_name") or "?"
        echo(f"  {key[:12]}  {stage:<12} {_first_user_text(request)}")
    if len(differ) > AGREE_SHOWN:
        echo(f"  ... and {len(differ) - AGREE_SHOWN} more")
    ours = machine_info()  # without threads: the cache's run may have used any count
    if args.run:
        try:
            ours = read_manifest(Path(args.run)).machine or ours
        except RunFolderError as exc:
            raise UserError(str(exc)) from None
    theirs = read_sidecar(cassette)
    if theirs is None:
        echo(
            "machines: the cassette does not say which machine recorded it (no "
            f"{cassette.name}.machine.json; recorded before machines were kept)"
        )
    else:
        same, keys = machines_match(ours, theirs)
        if same:
            echo("machines: the same llama.cpp features, kernels and threads as the recording")
        else:
            for k in keys:
                echo(f"machines differ in {k}: here {ours.get(k)!r}, recorded {theirs.get(k)!r}")
    if differ:
        echo(
            "Answers of the embedded model repeat on one machine, not across machines whose "
            "CPU features or kernels differ (llama.cpp sums floats in another order): there "
            "the committed cassette's replay is the reference (docs/ci.md)."
        )
    return ExitCode.GATE if differ else ExitCode.OK


def cmd_cassette_import(args: argparse.Namespace) -> int:
    from hy_eval.llm import AnswerCache, import_cassette

    path = cache_path(args)
    try:
        n = import_cassette(args.file, AnswerCache(path))
    except FileNotFoundError:
        raise UserError(f"{args.file}: file not found") from None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    echo(f"imported {n} answers into {path}")
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``cache`` and ``cassette`` sub-commands."""
    cache = sub.add_parser("cache", help="inspect the answer cache").add_subparsers(
        dest="cache_command", metavar="ACTION", required=True
    )
    p = cache.add_parser("stats", help="answers stored, per provider and model")
    add_cache_flag(p)
    p.set_defaults(func=cmd_cache_stats)
    p = cache.add_parser("explain", help="show what went into a key (to debug misses)")
    p.add_argument("key", help="a key or its first characters (at least 6)")
    add_cache_flag(p)
    p.set_defaults(func=cmd_cache_explain)


def register_cassette(sub: Any) -> None:
    """The ``cassette`` sub-command: record a suite's answers, or load them."""
    cassette = sub.add_parser("cassette", help="record or import cached answers").add_subparsers(
        dest="cassette_command", metavar="ACTION", required=True
    )
    p = cassette.add_parser("record", help="run a suite and write the answers it used")
    p.add_argument("--suite", default="multi_speaker")
    p.add_argument("--variant", default="default")
    p.add_argument("--system", default="hy_eval", help="memory system under test (run --system)")
    p.add_argument("--sample", type=int, help="N cases spread over the suite (run --sample)")
    p.add_argument(
        "--filter",
        help="the cases to record, as run --filter (id=@FILE: a committed sample's ids)",
    )
    p.add_argument(
        "--file",
        help="cassette path (default tests/cassettes/<suite>.[<system>.]<variant>.<provider>"
        "[.sample<N>].jsonl)",
    )
    # The recording always reads and writes the cache: no --cache-mode.
    add_model_flags(p, cache_mode=False)
    p.set_defaults(func=cmd_cassette_record)
    p = cassette.add_parser("import", help="load a cassette into the answer cache")
    p.add_argument("file")
    add_cache_flag(p)
    p.set_defaults(func=cmd_cassette_import)
    p = cassette.add_parser(
        "agree",
        help="which answers of a cache differ from a cassette's, and whether the machines "
        "match (exit 1 when some differ)",
    )
    p.add_argument(
        "--cassette",
        default="tests/cassettes/multi_speaker.default.local.jsonl",
        help="the cassette (default: the committed multi_speaker one)",
    )
    p.add_argument("--run", help="a run folder whose manifest names the machine of the cache")
    add_cache_flag(p)
    p.set_defaults(func=cmd_cassette_agree)
