"""Writing into folders this program did not make, and keeping what it writes private
(docs/reliability.md, "Files and links").

A run folder, a table's ``--out`` or a baseline's folder may come from anyone (a copied
folder, a CI artifact), and may hold symbolic links where this program writes files. The
rules every writer follows, through these functions:

- A whole file is written to a new temporary file in the same folder (made with
  ``O_EXCL``, so no link planted under a temporary name is followed) and renamed over
  its name. A link in its place is replaced by the rename; the file it pointed to is
  left untouched.
- A file that is appended to (``cases.jsonl`` on a resume) cannot be written by a
  rename: it is opened with ``O_NOFOLLOW``, and a link there is refused
  (:class:`LinkRefused`, one line).
- A folder written into is refused when it is a link (the run folder, a perturbation's
  sub-folder), so no rename lands in the folder the link points to.
- What is created is private: folders 0700, files 0600, set explicitly whatever the
  umask (cached answers and records may hold private conversations). A folder or file
  of ours that is wider (made before this rule) is tightened when it is opened again.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import TextIO

#: Modes of what this program creates: read and written by the user only.
DIR_MODE = 0o700
FILE_MODE = 0o600

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LinkRefused(ValueError):
    """A symbolic link where a folder is written into or a file appended to; the message
    is one line naming the path."""


def refuse_link(path: Path, what: str) -> None:
    """``LinkRefused`` when ``path`` is a symbolic link (``what`` names it)."""
    if path.is_symlink():
        raise LinkRefused(
            f"{path}: {what} is a symbolic link (to {os.readlink(path)}); this program "
            "never writes through a link: give the folder or file itself"
        )


def tighten(path: Path, mode: int) -> None:
    """Take group and other permissions from ``path`` if the user owns it and it has
    them (a folder or file made before modes were set); never follows a link."""
    with contextlib.suppress(OSError):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            return
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & mode)


def private_dir(path: Path) -> Path:
    """Make ``path`` (and its missing parents) if need be; ``path`` itself is 0700 (a
    folder that is there already is tightened). ``LinkRefused`` when it is a link."""
    refuse_link(path, "the folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=DIR_MODE)
    except FileExistsError:
        refuse_link(path, "the folder")  # made a link between the check and mkdir
        if not path.is_dir():
            raise
    else:
        os.chmod(path, DIR_MODE)  # the umask may have taken bits from mkdir's mode
    tighten(path, DIR_MODE)
    return path


def replace_file(path: Path, data: str | bytes, *, sync: bool = False) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a new temporary file in the same
    folder and a rename: a reader or a crash never sees half a file, and a link at
    ``path`` is replaced, not followed. The file is 0600. ``sync``: on disk before the
    rename (a file whose loss after a power cut would cost money, like batches.json)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def open_append(path: Path) -> TextIO:
    """``path`` opened to append UTF-8 text, made 0600 if new and tightened if not;
    ``LinkRefused`` when it is a symbolic link (appending cannot be done by a rename)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, FILE_MODE)
    except OSError:
        refuse_link(path, "the file")
        raise
    st = os.fstat(fd)
    if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.getuid():
        os.fchmod(fd, stat.S_IMODE(st.st_mode) & FILE_MODE)
    return os.fdopen(fd, "a", encoding="utf-8")


#: What SQLite makes beside a database file: the WAL, its index and a rollback journal.
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_db_file(path: Path, *, follow: bool = True) -> None:
    """Prepare the SQLite file ``path``: its folder made (0700 when this makes it), the
    file created 0600 before SQLite opens it (SQLite gives its ``-wal``, ``-shm`` and
    journal the database's mode), and an older wider file and its side files tightened.
    ``follow=False``: ``LinkRefused`` when it is a link (a file in a run folder, which
    SQLite would open through the link)."""
    if not follow:
        refuse_link(path, "the database file")
    if not path.parent.exists():
        private_dir(path.parent)
    elif path.parent.name == ".hy_eval":  # ours; a folder the user named is left as it is
        tighten(path.parent, DIR_MODE)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        os.chmod(path, FILE_MODE)
    for name in ("", *SQLITE_SIDE_FILES):
        tighten(path.with_name(path.name + name), FILE_MODE)
