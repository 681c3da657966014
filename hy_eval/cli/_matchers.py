"""``matchers evaluate`` (each matcher against pairs people judged) and the ``run`` flags
that choose a matcher and the judge's model (docs/metrics.md, "Matchers")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hy_eval._exitcodes import ExitCode
from hy_eval._files import replace_file
from hy_eval._terminal import echo
from hy_eval.cli._errors import UserError
from hy_eval.cli._model import add_model_flags, model_options

#: ``hy_eval.harness.scoring._matching.MATCHERS``, spelled out so that ``--help`` imports nothing.
MATCHER_CHOICES = ("strict", "keyword", "fuzzy", "judge")


def add_matcher_flags(p: argparse.ArgumentParser) -> None:
    """``run``'s ``--matcher`` and the judge's model flags."""
    g = p.add_argument_group("matching")
    g.add_argument(
        "--matcher",
        choices=MATCHER_CHOICES,
        default="strict",
        help="how predicted facts are paired with gold facts (default strict; docs/metrics.md)",
    )
    g.add_argument(
        "--judge-provider", help="--matcher judge: the judge's provider (default the run's)"
    )
    g.add_argument("--judge-model", help="--matcher judge: the judge's model (default the run's)")
    g.add_argument("--judge-base-url", help="--matcher judge: the judge's endpoint")
    g.add_argument(
        "--judge-variant",
        default="default",
        help="--matcher judge: the prompt variant whose judge.<lang>.j2 is used",
    )


def matcher_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ``RunConfig`` fields of the matching flags."""
    return {
        "matcher": args.matcher,
        "judge_provider": args.judge_provider,
        "judge_model": args.judge_model,
        "judge_base_url": args.judge_base_url,
        "judge_variant": args.judge_variant,
    }


def _matcher_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in MATCHER_CHOICES]
    if bad or not names:
        raise UserError(
            f"--matcher: unknown {', '.join(bad) or 'empty list'} "
            f"(expected {', '.join(MATCHER_CHOICES)})"
        )
    return names


def cmd_matchers_evaluate(args: argparse.Namespace) -> int:
    from hy_eval.harness.analysis import (
        PairFileError,
        decide_all,
        evaluate,
        evaluation_text,
        read_pairs,
    )

    names = _matcher_names(args.matcher)
    try:
        pairs = read_pairs(args.file)
    except PairFileError as exc:
        raise UserError(exc.problems[:20]) from None

    judges: list[Any] = []  # the judge made, for --record

    def make_judge() -> Any:
        from hy_eval.harness.scoring import JudgeSettings, build_judge
        from hy_eval.llm import ConfigError
        from hy_eval.memory import PromptError

        # The judge is the model the flags name, built as a run builds its judge.
        options = model_options(args)
        try:
            made = build_judge(options, options.client(), JudgeSettings(variant=args.judge_variant))
        except (ConfigError, PromptError) as exc:
            raise UserError(f"judge: {exc}") from None
        judges.append(made)
        return made

    if args.split:
        pairs = [p for p in pairs if p.split == args.split]
        if not pairs:
            raise UserError(f"{args.file}: no pair of split {args.split!r}")
    if args.batch_dir:
        judge = _judge_by_folder(args, names, pairs)
        if judge is None:
            return ExitCode.BATCH_WAITING

        def make_judge() -> Any:
            judges.append(judge)
            return judge

    from hy_eval.llm import CacheMiss

    try:
        result = evaluate(pairs, decide_all(pairs, names, make_judge))
    except CacheMiss as exc:  # --cache-mode replay-only: one line, exit 4, as in a run
        raise UserError(str(exc), ExitCode.CACHE_MISS) from None
    if args.record:
        _record_judge(judges, Path(args.record))
    echo(evaluation_text(result))
    if args.json:
        replace_file(Path(args.json), json.dumps(result, ensure_ascii=False, indent=1))
    if args.quality:
        from hy_eval.harness.analysis import quality_figures

        part = f"the {args.split} part of " if args.split else ""
        quality = quality_figures(result, f"{part}{Path(args.file).as_posix()}")
        replace_file(Path(args.quality), json.dumps(quality, ensure_ascii=False, indent=1) + "\n")
        echo(
            f"wrote each matcher's precision and recall per language, pooled and per source, "
            f"to {args.quality}"
        )
    return ExitCode.OK


def _record_judge(judges: list[Any], path: Path) -> None:
    """``--record FILE``: the judge's answers this command used, as a cassette that
    ``cassette import`` loads (CI replays the judge on the benchmark from it)."""
    from hy_eval.llm import export_cassette

    if not judges or judges[0].llm.cache is None:
        raise UserError("--record needs --matcher judge and an answer cache (not --cache-mode off)")
    llm = judges[0].llm
    count = export_cassette(llm.cache, sorted(llm.keys_used), path)
    echo(f"cassette written: {path} ({count} judge answers)")


def _judge_by_folder(args: argparse.Namespace, names: list[str], pairs: list[Any]) -> Any:
    """``--batch-dir``: the judge's requests of all pairs written to the folder in one
    round, their answers read back on the same command. The judge, answering from the
    cache only, once every answer is in; ``None`` (said in one line) while requests wait."""
    from pathlib import Path

    from hy_eval.cli._serve import batch_dir_options
    from hy_eval.harness.run import RunError, judge_pairs_by_folder
    from hy_eval.harness.scoring import JudgeSettings, build_judge
    from hy_eval.llm import ConfigError
    from hy_eval.llm.batch import OfflineProvider
    from hy_eval.memory import PromptError

    if "judge" not in names:
        raise UserError("--batch-dir is for --matcher judge (the other matchers ask no model)")
    options = batch_dir_options(args)  # nothing is sent: no key needed
    try:
        judge = build_judge(options, options.client(), JudgeSettings(variant=args.judge_variant))
    except (ConfigError, PromptError) as exc:
        raise UserError(f"judge: {exc}") from None
    folder = Path(args.batch_dir)
    judge.llm.provider = OfflineProvider(judge.llm.provider, folder)
    asked = [(p.predicted, p.gold, p.lang) for p in pairs]
    try:
        judge_pairs_by_folder(judge, asked, folder, _evaluate_command(args))
    except RunError as exc:
        if exc.exit_code != ExitCode.BATCH_WAITING:
            raise UserError(str(exc), exc.exit_code) from None
        echo(f"hy-eval: {exc}", err=True)
        return None
    return judge


def _evaluate_command(args: argparse.Namespace) -> str:
    """The ``matchers evaluate`` command line that continues a ``--batch-dir`` round."""
    import shlex

    from hy_eval._redact import redact

    parts = ["python", "run_eval.py", "matchers", "evaluate", args.file, "--matcher", args.matcher]
    for flag, value in (
        ("--split", args.split),
        ("--judge-variant", None if args.judge_variant == "default" else args.judge_variant),
        ("--json", args.json),
        ("--quality", args.quality),
        ("--record", args.record),
        ("--provider", args.provider),
        ("--model", args.model),
        ("--base-url", args.base_url),
        ("--structured", args.structured),
        ("--cache", args.cache),
        ("--batch-dir", args.batch_dir),
    ):
        if value:
            parts += [flag, str(value)]
    return redact(" ".join(shlex.quote(p) for p in parts))


#: What a drawn pair's id may start with: letters, digits, ``-`` and ``_``.
_PREFIX_RE = r"[A-Za-z][A-Za-z0-9_-]*"


def _draw_origin(args: argparse.Namespace, models: set[str]) -> tuple[str, str, str]:
    """The model, source and id prefix ``matchers draw`` records: ``--model`` or the
    runs' one model, ``--source`` or the source that fits that model, ``--prefix`` or
    ``p`` for the embedded model's pairs and ``c`` for a capable model's."""
    import re

    from hy_eval.harness.scoring import source_for_model

    model = args.model
    if model is None:
        if len(models) != 1:
            raise UserError(
                f"the runs are of {len(models)} models ({', '.join(sorted(models))}): "
                "name the one to record with --model"
            )
        model = next(iter(models))
    source = args.source or source_for_model(model)
    prefix = args.prefix or ("p" if source == "embedded_run" else "c")
    if not re.fullmatch(_PREFIX_RE, prefix):
        raise UserError(f"--prefix {prefix!r}: a letter, then letters, digits, - or _")
    return model, source, prefix


def cmd_matchers_draw(args: argparse.Namespace) -> int:
    from hy_eval.harness.analysis import blind_rows, draw, pair_rows
    from hy_eval.harness.runlog import RunFolderError, read_run

    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit {args.limit}: give a positive number of pairs")
    records: list[Any] = []
    models: set[str] = set()
    for run_dir in args.runs:
        try:
            run = read_run(run_dir)
            records.extend(run.records())
        except (RunFolderError, OSError) as exc:
            raise UserError(str(exc)) from None
        models.add(run.manifest.model)
    model, source, prefix = _draw_origin(args, models)
    chosen = draw(records, args.limit, args.seed, even_langs=args.even_langs)
    if not chosen:
        raise UserError("no pairs: no case of these runs has a gold fact text and a prediction")
    rows = pair_rows(chosen, prefix=prefix, source=source, model=model)
    _write(Path(args.out), rows)
    related = sum(c.related for c in chosen)
    unrelated = len(chosen) - related
    echo(
        f"wrote {len(chosen)} pairs ({related} related, {unrelated} unrelated; source "
        f"{source}, model {model}, ids {rows[0]['pair']}...) to {args.out}"
    )
    if args.blind:
        _write(Path(args.blind), blind_rows(rows))
        echo(f"wrote the judges' copy (no keywords, no case ids, no source) to {args.blind}")
    return ExitCode.OK


def _write(path: Path, rows: Any) -> None:
    from hy_eval.harness.analysis import write_rows

    try:
        write_rows(path, rows)
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror})") from None


def cmd_matchers_agree(args: argparse.Namespace) -> int:
    from hy_eval.harness.analysis import (
        VerdictFileError,
        agreement,
        agreement_text,
        read_verdicts,
        settled_rows,
    )

    try:
        first, second = read_verdicts(Path(args.first)), read_verdicts(Path(args.second))
        result = agreement(first, second)
    except VerdictFileError as exc:
        raise UserError(str(exc)) from None
    echo(agreement_text(result))
    if args.json:
        try:
            replace_file(Path(args.json), json.dumps(result, ensure_ascii=False, indent=1))
        except OSError as exc:
            raise UserError(f"{args.json}: cannot write ({exc.strerror})") from None
    if args.out:
        if not args.drawn:
            raise UserError("--out needs --drawn, the file 'matchers draw' wrote")
        try:
            settled = read_verdicts(Path(args.settled)) if args.settled else {}
            rows = settled_rows(Path(args.drawn), first, second, settled)
        except VerdictFileError as exc:
            raise UserError(str(exc)) from None
        _write(Path(args.out), rows)
        echo(f"wrote {len(rows)} judged pairs to {args.out}")
    return ExitCode.OK


def register(sub: Any) -> None:
    """The ``matchers`` sub-command."""
    matchers = sub.add_parser(
        "matchers", help="measure the fact matchers against pairs people judged"
    ).add_subparsers(dest="matchers_command", metavar="ACTION", required=True)
    p = matchers.add_parser(
        "evaluate",
        help="each matcher's precision and recall (Wilson CIs) on a JSONL of judged pairs, "
        "per kind and language, pooled and per source (format: docs/metrics.md)",
    )
    p.add_argument(
        "file",
        help="JSONL of {predicted, gold, lang, same, kind[, keywords, names, split, source]}",
    )
    p.add_argument(
        "--matcher",
        default="strict,keyword,fuzzy",
        help="comma-separated matchers to measure (default strict,keyword,fuzzy; judge asks "
        "the model of the model flags, one call per pair, cached)",
    )
    p.add_argument(
        "--split",
        choices=("dev", "test"),
        help="only the pairs of this part (rules are tuned on dev; test is for reporting)",
    )
    p.add_argument(
        "--judge-variant", default="default", help="prompt variant of the judge's templates"
    )
    p.add_argument("--json", help="also write the results as JSON here")
    p.add_argument(
        "--quality",
        help="also write the precision and recall per language, pooled and per source, that "
        "runs report beside their fact metrics (datasets/matcher_pairs/quality.json)",
    )
    p.add_argument(
        "--record",
        metavar="FILE",
        help="--matcher judge: also write the judge's answers this command used as a "
        "cassette (cassette import loads it; CI replays the judge from it)",
    )
    p.add_argument(
        "--batch-dir",
        metavar="DIR",
        help="--matcher judge: write every pair's judge request to DIR as an OpenAI Batch "
        "file (exit 5) and read the answers back on the same command (openai provider; "
        'docs/llm.md, "Offline batches")',
    )
    add_model_flags(p)
    p.set_defaults(func=cmd_matchers_evaluate)

    p = matchers.add_parser(
        "draw",
        help="draw (predicted, gold) pairs from run folders for people to judge "
        "(docs/metrics.md, 'Measuring the matchers')",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders to draw from")
    p.add_argument("--out", required=True, help="JSONL of the drawn pairs (same and kind empty)")
    p.add_argument("--blind", help="also write the judges' copy: the two facts and names only")
    p.add_argument(
        "--limit",
        type=int,
        help="at most N pairs: related ones first, unrelated ones fill the rest",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the order and the fill (0)")
    p.add_argument(
        "--even-langs",
        action="store_true",
        help="take the related pairs under --limit from each language in turn (half each)",
    )
    p.add_argument(
        "--source",
        choices=("capable_run", "embedded_run"),
        help="the benchmark source recorded on the pairs (default: embedded_run for the "
        "embedded model's runs, capable_run for any other model's)",
    )
    p.add_argument(
        "--model",
        help="the model recorded on the pairs (default: the runs' model, when they share one)",
    )
    p.add_argument(
        "--prefix",
        help="the pair ids' prefix, so that another draw's ids do not collide in the "
        "benchmark (default p for embedded_run, c for capable_run)",
    )
    p.set_defaults(func=cmd_matchers_draw)

    p = matchers.add_parser(
        "agree",
        help="how far two judges' verdict files agree (Cohen's kappa) and where they differ",
    )
    p.add_argument("first", help="JSONL of {pair, same, kind[, note]} by one judge")
    p.add_argument("second", help="the same pairs judged by another")
    p.add_argument("--json", help="also write the result as JSON here")
    p.add_argument("--drawn", help="the pairs file 'matchers draw' wrote (for --out)")
    p.add_argument(
        "--settled", help="a third judge's verdicts on the pairs the two judged differently"
    )
    p.add_argument(
        "--out", help="write the judged pairs: the drawn pairs with the agreed or settled verdicts"
    )
    p.set_defaults(func=cmd_matchers_agree)
