"""Reading the project's TOML files (price tables, gates) with one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def read_toml(path: str | Path, what: str, error: type[Exception] = ValueError) -> dict[str, Any]:
    """The parsed file; a missing file or bad TOML raises ``error`` with a one-line message
    naming the file (``what`` says which kind of file it is)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: invalid TOML: {exc}") from None
    return data
