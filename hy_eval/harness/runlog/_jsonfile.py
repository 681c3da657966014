"""What every JSON file of a run has in common (rule E2): a pydantic model that writes
exactly the fields its writer set, in the order of the model, and a reader that turns a
file that is not one into a one-line :class:`RunFolderError`.

A model validates what it reads and gives it back unchanged: a field holding a count
takes the number as it was written (``Number``: ``1`` stays ``1``, ``1.0`` stays ``1.0``),
and a field nobody set is left out of the file, not written as its default. So a file
read and written again comes out byte for byte as it was, and old files, which lack
fields added since, still read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from hy_eval._files import replace_file
from hy_eval._json import MAX_DEPTH, JsonTextError, loads_untrusted
from hy_eval._redact import redact

#: The form of the files this code writes: ``manifest.json``, ``cases.jsonl``,
#: ``summary.json``, ``perturb.json``, ``gates.json``, a baseline and a comparison. A
#: file without the field was written before it existed and has the same form as
#: version 1.
SCHEMA_VERSION = 1

#: A count or a ratio as it was written: an ``int`` stays an ``int`` and a ``float`` a
#: ``float`` (a plain ``float`` field would write ``0`` back as ``0.0``).
Number = StrictInt | StrictFloat

#: A file of a run nests a few levels of its own around values from cases and answers.
FILE_MAX_DEPTH = 2 * MAX_DEPTH


class RunFolderError(ValueError):
    """A run folder, or a file of one (a summary, a baseline, ``perturb.json``), that
    cannot be read; the message is one line naming the file and the problem."""


class FilePart(BaseModel):
    """A part of a run file. Fields it does not name are kept (a file written by a newer
    version still reads); :meth:`to_data` writes the fields that were set."""

    model_config = ConfigDict(extra="allow")

    def to_data(self) -> dict[str, Any]:
        """The part as JSON data: the fields that were set, in the model's order, then
        the ones it does not name."""
        return self.model_dump(exclude_unset=True)


class RunFile(FilePart):
    """A whole file of a run, with the ``schema_version`` of its form (always written)."""

    schema_version: int = Field(
        default=SCHEMA_VERSION, description="Form of the file (SCHEMA_VERSION)."
    )

    def to_data(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, **super().to_data()}


M = TypeVar("M", bound=BaseModel)


def first_problem(exc: ValidationError) -> tuple[str, str]:
    """The first thing pydantic refused: the field's dotted path (``json`` for the whole)
    and its message without the input it quotes (which can be any length)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "json"
    if first["type"] == "missing":
        return where, "missing"
    return where, str(first["msg"]).rstrip(".").lower()


def parse_file_data(path: Path, data: Any, model: type[M], what: str) -> M:
    """``data`` (read from ``path``) as ``model``; ``RunFolderError`` naming the first
    field that is not what the model says."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where, problem = first_problem(exc)
        raise RunFolderError(f"{path}: not a {what} ({where}: {problem})") from None


def read_file_data(path: Path, what: str) -> Any:
    """The JSON of ``path``; ``RunFolderError`` when it is not UTF-8 JSON. ``OSError``
    (no such file) is the caller's."""
    try:
        return loads_untrusted(
            path.read_text(encoding="utf-8"), unique_keys=False, max_depth=FILE_MAX_DEPTH
        )
    except (JsonTextError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path}: not a readable {what} ({exc})") from None


def read_model_file(path: Path, model: type[M], what: str) -> M:
    """``path`` read as ``model`` (``what`` names it in the error)."""
    return parse_file_data(path, read_file_data(path, what), model, what)


def json_text(data: Any, indent: int, *, sort_keys: bool = False) -> str:
    """``data`` as the indented JSON the run's files are written in (not ASCII-escaped)."""
    return json.dumps(data, ensure_ascii=False, indent=indent, sort_keys=sort_keys)


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as redacted, indented JSON through a temporary file and a rename."""
    replace_text(path, redact(json_text(data, indent=2)) + "\n")


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a new temporary file and a rename: a
    reader, or a crash halfway, never sees half a file, and a symbolic link at ``path`` is
    replaced, not followed (``hy_eval._files``)."""
    replace_file(path, text)
