"""A run folder's records as ``compare`` (and the gates, bless and the matrix, which read
runs through it) may use them: each ``cases.jsonl`` line checked before it is counted.

:class:`CaseRecord` types the fields a record must have, but leaves ``facts``,
``operations`` and ``score`` loose (their items are dicts of anything), and
``CaseRecord.model_validate_json`` raises pydantic's many-line error. A run folder is
input like any other (copied, edited by hand, cut by a full disk), so here a record that
is not JSON, nests too deep, or lacks a part the comparison reads is
:class:`RunFolderError` with one line: the file, the line number, the field and what is
wrong. A torn last line (a killed run) is skipped, as ``runlog`` skips it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from hy_eval._json import MAX_DEPTH, JsonTextError, loads_untrusted
from hy_eval._terminal import neutralise
from hy_eval.harness.runlog import PERTURB_FILE, CaseRecord, RunFolderError
from hy_eval.harness.scoring import METRICS

#: A record holds a dataset line and model answers (each read at most ``MAX_DEPTH``
#: deep) inside a few levels of its own; anything deeper was not written by a run.
RECORD_MAX_DEPTH = 2 * MAX_DEPTH


def _where(path: Path, number: int) -> str:
    # The path is the user's and goes into a one-line message: no line break from it.
    return f"{neutralise(path, keep='')}:{number}"


def checked_records(path: Path) -> Iterator[CaseRecord]:
    """The complete records of the ``cases.jsonl`` at ``path``, in file order, each
    checked by :func:`check_record_line`; ``RunFolderError`` at the first bad one."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                return  # a torn write: not a record
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RunFolderError(
                    f"{_where(path, number)}: not a case record: not UTF-8 text "
                    f"(byte {exc.start + 1})"
                ) from None
            yield check_record_line(text, path, number)


def check_record_line(text: str, path: Path, number: int) -> CaseRecord:
    """The record on line ``number`` of ``path``, or ``RunFolderError`` naming the field."""
    try:
        data = loads_untrusted(text, unique_keys=False, max_depth=RECORD_MAX_DEPTH)
    except JsonTextError as exc:
        raise _bad(path, number, exc.where, exc.problem) from None
    if not isinstance(data, dict):
        raise _bad(path, number, "json", f"a JSON {type(data).__name__}, not an object")
    try:
        record = CaseRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "json"
        raise _bad(path, number, field, _pydantic_problem(first)) from None
    problem = record_problem(record)
    if problem is not None:
        raise _bad(path, number, *problem)
    return record


def _bad(path: Path, number: int, field: str, problem: str) -> RunFolderError:
    field = neutralise(field, keep="")
    return RunFolderError(f"{_where(path, number)}: not a case record: {field}: {problem}")


def _pydantic_problem(error: Mapping[str, Any]) -> str:
    """pydantic's message without the input it quotes (which can be any length)."""
    if error["type"] == "missing":
        return "missing"
    return str(error["msg"]).rstrip(".").lower()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def record_problem(rec: CaseRecord) -> tuple[str, str] | None:
    """``(field, problem)`` for the first part of a typed record that the comparison
    cannot use, else None. The parts are the ones ``outputs_of``, ``slim_record``,
    ``RecordRows`` and the consistency read."""
    if rec.repeat < 0:
        return "repeat", "negative"
    for i, fact in enumerate(rec.facts):
        for key in ("text", "owner"):
            if not isinstance(fact.get(key), str):
                return f"facts.{i}.{key}", "not a string"
    for i, op in enumerate(rec.operations.get("applied", [])):
        if "op" not in op or "fact" not in op:
            return f"operations.applied.{i}", "an operation needs op and fact"
        if not isinstance(op.get("targets"), list):
            return f"operations.applied.{i}.targets", "not a list"
    return _score_problem(rec.score)


def _score_problem(score: Mapping[str, Any]) -> tuple[str, str] | None:
    if not isinstance(score.get("passed"), bool):
        return "score.passed", "missing" if "passed" not in score else "not true or false"
    checks = score.get("checks")
    if not isinstance(checks, list):
        return "score.checks", "missing" if checks is None else "not a list"
    for i, check in enumerate(checks):
        if not isinstance(check, dict):
            return f"score.checks.{i}", "not an object"
        if not isinstance(check.get("check"), str):
            return f"score.checks.{i}.check", "not a string"
        if not isinstance(check.get("ok"), bool):
            return f"score.checks.{i}.ok", "missing" if "ok" not in check else "not true or false"
    facts = score.get("facts", [])
    if not isinstance(facts, list):
        return "score.facts", "not a list"
    for i, fact in enumerate(facts):
        if not isinstance(fact, dict):
            return f"score.facts.{i}", "not an object"
        for key in ("subject", "owner", "text"):
            if not isinstance(fact.get(key), str):
                return f"score.facts.{i}.{key}", "not a string"
    counts = score.get("counts", {})
    if not isinstance(counts, dict):
        return "score.counts", "not an object"
    for metric in METRICS:
        pair = counts.get(metric, (0, 0))
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            return f"score.counts.{metric}", "not a [numerator, denominator] pair"
        if not all(_is_number(x) and math.isfinite(x) and x >= 0 for x in pair):
            return f"score.counts.{metric}", "not two finite numbers of at least 0"
    return None


def read_perturbation(run_dir: Path) -> dict[str, Any] | None:
    """``perturb.json`` of a perturbed run, as the consistency reads it (``cases`` -> id
    -> ``subjects``, names to names), None when there is none; else ``RunFolderError``."""
    path = run_dir / PERTURB_FILE
    if not path.is_file():
        return None
    where = neutralise(path, keep="")
    try:
        data = loads_untrusted(path.read_text(encoding="utf-8"), unique_keys=False)
    except (JsonTextError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{where}: not a perturbation file ({exc})") from None
    cases = data.get("cases", {}) if isinstance(data, dict) else None
    if not isinstance(cases, dict):
        raise RunFolderError(f"{where}: not a perturbation file (no 'cases' object)")
    for case in cases.values():
        subjects = case.get("subjects") if isinstance(case, dict) else None
        if not isinstance(subjects, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in subjects.items()
        ):
            raise RunFolderError(
                f"{where}: not a perturbation file (a case without a 'subjects' object of names)"
            )
    return cast(dict[str, Any], data)
