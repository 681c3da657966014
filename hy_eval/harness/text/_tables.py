"""Tables derived from a package's data files, kept on disk between processes.

Building the strict matcher's CC-CEDICT tables (``scoring._bilingual``) parses 120,000
dictionary lines: 1.3 to 1.4 s of one core, in every run's first cross-language case,
with every other case of the run waiting on the event loop. Read back from a file written
by an earlier process, the same tables take about 0.35 s.

A table's file is named by a digest of everything the table is made from: its data files
(path, size, modification time), the source file of the module that builds it (any edit
to the code rebuilds it), the Python version and the ``marshal`` format. ``marshal``, not
``pickle``: reading it back runs no code. The folder is private (0700, ``HY_EVAL_TABLES``
or ``$XDG_CACHE_HOME/hy_eval/tables``, else ``~/.cache/hy_eval/tables``); a file that
cannot be read or written costs the build, never the run. Files of earlier digests are
left where they are (about 5 MB each); the folder can be removed at any time.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast

T = TypeVar("T")


def tables_dir() -> Path:
    """Where derived tables are kept (module docstring)."""
    explicit = os.environ.get("HY_EVAL_TABLES")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "hy_eval" / "tables"


def _digest(name: str, sources: Iterable[Path | Any], code: Path) -> str:
    h = hashlib.sha256(f"{name}\0{sys.version_info[:3]}\0{marshal.version}\0".encode())
    for source in [*sources, code]:
        st = os.stat(source)
        h.update(f"{os.fspath(source)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    h.update(Path(code).read_bytes())
    return h.hexdigest()[:24]


def cached_table(name: str, sources: Iterable[Path | Any], code: Path, build: Callable[[], T]) -> T:
    """``build()``, or the value an earlier process built from the same ``sources`` and
    ``code`` (the builder's module file). The value must be one ``marshal`` writes
    (dicts, tuples, strings, frozensets...)."""
    try:
        digest = _digest(name, sources, code)
        path = tables_dir() / f"{name}-{digest}.marshal"
    except OSError:
        return build()
    try:
        with path.open("rb") as fh:
            stored = marshal.load(fh)
        # Written as (name, digest, value): a file that reads as anything else is built over.
        if isinstance(stored, tuple) and len(stored) == 3 and stored[:2] == (name, digest):
            return cast(T, stored[2])
    except (OSError, EOFError, ValueError, TypeError):
        pass
    value = build()
    # A file that cannot be written: no cache this time; the value is right all the same.
    with contextlib.suppress(OSError, ValueError):
        _write(path, marshal.dumps((name, digest, cast(Any, value))))
    return value


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file renamed), in a
    folder only this user can read."""
    from hy_eval._files import private_dir

    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
