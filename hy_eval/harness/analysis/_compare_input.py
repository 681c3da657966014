"""A run folder's records as ``compare`` (and the gates, bless and the matrix, which read
runs through it) may use them: each ``cases.jsonl`` line checked before it is counted.

:class:`CaseRecord` types the fields a record must have (its ``score`` whole), but leaves
``facts`` and ``operations`` loose (their items are dicts of anything), and
``CaseRecord.model_validate_json`` raises pydantic's many-line error. A run folder is
input like any other (copied, edited by hand, cut by a full disk), so here a record that
is not JSON, nests too deep, or lacks a part the comparison reads is
:class:`RunFolderError` with one line: the file, the line number, the field and what is
wrong. A torn last line (a killed run) is skipped, as ``runlog`` skips it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from hy_eval._json import MAX_DEPTH, JsonTextError, loads_untrusted
from hy_eval._terminal import neutralise
from hy_eval.harness.runlog import CaseRecord, RunFolderError, ScoreRecord, first_problem
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
        raise _bad(path, number, *first_problem(exc)) from None
    problem = record_problem(record)
    if problem is not None:
        raise _bad(path, number, *problem)
    return record


def _bad(path: Path, number: int, field: str, problem: str) -> RunFolderError:
    field = neutralise(field, keep="")
    return RunFolderError(f"{_where(path, number)}: not a case record: {field}: {problem}")


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


def _score_problem(score: ScoreRecord) -> tuple[str, str] | None:
    """What the model leaves to check: a verdict and checks written (an empty score reads
    as not passed, with nothing checked), and counts that are ratios' parts."""
    for name in ("passed", "checks"):
        if name not in score.model_fields_set:
            return f"score.{name}", "missing"
    for metric in METRICS:
        pair = score.counts.get(metric, (0, 0))
        if not all(math.isfinite(x) and x >= 0 for x in pair):
            return f"score.counts.{metric}", "not two finite numbers of at least 0"
    return None
