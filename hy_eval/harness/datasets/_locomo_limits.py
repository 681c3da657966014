"""What the LoCoMo importer reads at most, and the bounded reading itself.

The input is a file somebody downloaded; it may be damaged or made to hurt. Every bound
here is checked before the work it bounds (a file's size before it is read, a zip
member's declared size and ratio before it is opened) and again while reading (a zip
header can lie), so a hostile input costs at most what the limit allows and is refused
with one line naming the limit. The defaults are far above LoCoMo itself (ten
conversations, a few MB of JSON, 886 cases); a larger input of one's own can raise the
size and time limits with the command's flags.
"""

from __future__ import annotations

import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

#: Bytes of JSON read in all (files, or zip members once decompressed): a document is
#: parsed whole, so this bounds the memory of reading (Python objects take several
#: times the text's size). LoCoMo's release is a few MB; ``--max-input-mb`` raises it.
MAX_INPUT_BYTES = 32 * 1024 * 1024
#: Bytes written to the suite file in all: each case repeats earlier turns as history,
#: so the output can be many times the input; a suite this size is already slow to load
#: and to run. LoCoMo's suite is 8.5 MB (docs/datasets.md); ``--max-output-mb`` raises it.
MAX_OUTPUT_BYTES = 512 * 1024 * 1024
#: Seconds an import may take. Reading and cutting are linear in the input, so LoCoMo
#: imports in about 10 s; this only ends an import that something unforeseen slows down.
#: ``--max-seconds`` raises it.
MAX_SECONDS = 600.0
#: Decompressed size over compressed size of one zip member. JSON text deflates about
#: 5 to 10 times; a zip bomb (a few hundred KB that inflate to gigabytes) is refused
#: from its header, and, as headers can lie, while it is read.
MAX_ZIP_RATIO = 100
#: JSON files in a folder or members in a zip (LoCoMo has ten): each is opened, so a
#: folder or zip of a million tiny files would take long before any size limit is met.
MAX_DOCUMENTS = 10_000
#: Characters of one turn's text, image caption or observation. LoCoMo's are a few
#: sentences; 20,000 characters alone fill most of the embedded model's 8,192-token
#: context, and a case line (200,000 bytes) must also hold the part's other turns, its
#: history and facts.
MAX_TEXT_CHARS = 20_000
#: Characters of a speaker's name: a name is a few words, and every message of every
#: case repeats it.
MAX_NAME_CHARS = 100
#: Digits of the N of ``session_N`` (LoCoMo has at most 35 sessions). Python refuses to
#: convert an integer of more than 4,300 digits, and none needs more than a few.
MAX_SESSION_DIGITS = 6
#: Observations in one case. A session is cut into parts of at most MAX_FACTS (8)
#: observations, but not between turns that one observation cites together; a part
#: left with more than this could never be recalled by an answer of 8 facts, and
#: choosing keywords compares each of its facts with every other one.
MAX_CASE_OBSERVATIONS = 64

_READ_CHUNK = 1024 * 1024
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class LocomoError(ValueError):
    """Input that is not LoCoMo data: one line naming the file and the field. Control
    characters (a newline in a file or speaker name) are shown escaped, so the message
    stays one line."""

    def __init__(self, message: str) -> None:
        super().__init__(_CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], message))


@dataclass
class Limits:
    """The bounds of one import; :meth:`start` begins its clock."""

    max_input_bytes: int = MAX_INPUT_BYTES
    max_output_bytes: int = MAX_OUTPUT_BYTES
    max_seconds: float = MAX_SECONDS
    read: int = 0
    written: int = 0
    _deadline: float = field(default=float("inf"), repr=False)

    def start(self) -> Limits:
        self._deadline = time.monotonic() + self.max_seconds
        return self

    def check_time(self, where: str) -> None:
        if time.monotonic() > self._deadline:
            raise LocomoError(
                f"{where}: the import took more than {self.max_seconds:g} seconds "
                "(raise it with --max-seconds)"
            )

    def check_fits(self, size: int, where: str) -> None:
        """Refuse ``size`` more bytes to read if they would pass ``max_input_bytes``."""
        if self.read + size > self.max_input_bytes:
            raise LocomoError(
                f"{where}: {self.read + size:,} bytes of JSON to read, over the input limit "
                f"of {self.max_input_bytes:,} (raise it with --max-input-mb)"
            )

    def count_read(self, size: int, where: str) -> None:
        self.check_fits(size, where)
        self.read += size

    def count_written(self, size: int, where: str) -> None:
        self.written += size
        if self.written > self.max_output_bytes:
            raise LocomoError(
                f"{where}: the suite would be over the output limit of "
                f"{self.max_output_bytes:,} bytes (raise it with --max-output-mb, or lower "
                "--history-chars)"
            )


def read_file(path: Path, where: str, limits: Limits) -> bytes:
    """The bytes of ``path``, refused from its size before reading, read in chunks so a
    file that grows meanwhile is still cut at the limit."""
    try:
        limits.check_fits(path.stat().st_size, where)
        with path.open("rb") as f:
            return _read_bounded(f, where, limits, None)
    except OSError as exc:
        raise LocomoError(f"{where}: cannot read ({exc.strerror or exc})") from None


def zip_members(z: zipfile.ZipFile, where: str) -> list[zipfile.ZipInfo]:
    """The zip's members, refused by count before any is read."""
    infos = z.infolist()
    if len(infos) > MAX_DOCUMENTS:
        raise LocomoError(f"{where}: {len(infos):,} members, over the limit of {MAX_DOCUMENTS:,}")
    return infos


def read_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, limits: Limits) -> bytes:
    """One zip member's bytes: its declared size and ratio checked first, then the
    bytes actually inflated, in chunks, against the same bounds."""
    _check_ratio(info.file_size, info.compress_size, where)
    limits.check_fits(info.file_size, where)
    try:
        with z.open(info) as f:
            return _read_bounded(f, where, limits, info.compress_size)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as exc:
        # A damaged member (bad CRC), a compression method or an encryption zipfile
        # cannot read.
        raise LocomoError(f"{where}: cannot read the zip member ({exc})") from None


def _check_ratio(size: int, compressed: int, where: str) -> None:
    # Only past the first MB: a small member that inflates well (an empty list) is harmless.
    if size > MAX_ZIP_RATIO * max(compressed, 1) and size > _READ_CHUNK:
        raise LocomoError(
            f"{where}: inflates {size:,} bytes from {compressed:,}, over the "
            f"{MAX_ZIP_RATIO}:1 ratio allowed for a zip member (a zip bomb?)"
        )


def _read_bounded(f: IO[bytes], where: str, limits: Limits, compressed: int | None) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while chunk := f.read(_READ_CHUNK):
        got += len(chunk)
        limits.count_read(len(chunk), where)
        if compressed is not None:
            _check_ratio(got, compressed, where)
        limits.check_time(where)
        chunks.append(chunk)
    return b"".join(chunks)


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for echoing input in a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cut(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters, for a field name taken from the input."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
