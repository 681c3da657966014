"""Text for a terminal: the one place where anything ``hy_eval`` prints is made safe.

Case ids, tags, model names, file paths and error bodies come from datasets, run folders,
model answers and servers nobody vouches for. Printed raw, an ESC byte starts a terminal
control sequence: OSC 52 writes the clipboard, OSC 0 retitles the window, CSI moves the
cursor and repaints lines that were printed before. Bidi overrides reorder the text a
reader sees. :func:`neutralise` renders every such character visibly; :func:`echo` (and
:func:`echo_lines`) print through it, and nothing else in the package prints
(tests/reliability/test_hostile_compare.py scans for ``print`` and ``sys.std*.write``).

Neutralised are: C0 controls (U+0000-U+001F) except the ones the caller keeps (``\\n``
where a line break is intended), DEL (U+007F), C1 controls (U+0080-U+009F: U+009B is a
one-byte CSI and U+009D a one-byte OSC on terminals that read C1), the bidi embeddings,
overrides and isolates (U+202A-U+202E, U+2066-U+2069), and lone surrogates (which cannot
be written as UTF-8: printing one would end the command with ``UnicodeEncodeError``).

Each becomes the six characters of its JSON escape, ``\\u001b``, not U+FFFD: the reader
sees which character was there (and can find the record that holds it), and JSON
printed to a terminal (``cache list``, ``memory add``) stays valid JSON that decodes to
the same strings, since ``\\uXXXX`` is JSON's own escape. A literal backslash is left
alone, so the rendering is readable rather than reversible: "\\u001b" typed into an id
prints the same as ESC.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import TextIO

#: Every character :func:`neutralise` renders, ``\\n`` and ``\\t`` included (kept on request).
_UNSAFE = "\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_RE = re.compile(f"[{_UNSAFE}]")
#: The patterns for each set of kept characters (only a few sets are ever asked for).
_PATTERNS: dict[str, re.Pattern[str]] = {"": _UNSAFE_RE}


def _pattern(keep: str) -> re.Pattern[str]:
    found = _PATTERNS.get(keep)
    if found is None:
        kept = set(keep)
        if any(not ("\x00" <= c < " ") for c in kept):
            raise ValueError("only C0 controls (such as \\n or \\t) can be kept")
        found = re.compile("(?:(?![" + re.escape(keep) + "])[" + _UNSAFE + "])")
        _PATTERNS[keep] = found
    return found


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def neutralise(text: object, *, keep: str = "\n") -> str:
    """``text`` (``str()`` of it) with every terminal control character, bidi override and
    lone surrogate written as its ``\\uXXXX`` escape; the C0 characters in ``keep``
    (by default the line break) are left as they are. Plain text comes back unchanged,
    and neutralising twice gives what neutralising once gave."""
    text = str(text)
    pattern = _pattern(keep)
    return pattern.sub(_escape, text) if pattern.search(text) else text


def echo(
    text: object = "",
    *,
    err: bool = False,
    keep: str = "\n",
    flush: bool = False,
    end: str = "\n",
    stream: TextIO | None = None,
) -> None:
    """Print ``text`` neutralised (:func:`neutralise`, keeping ``keep``) and ``end`` (a line
    break), on stdout, or on stderr when ``err``, or on ``stream`` when given (a test's)."""
    out = stream if stream is not None else sys.stderr if err else sys.stdout
    out.write(neutralise(text, keep=keep) + end)
    if flush:
        out.flush()


def echo_lines(lines: Iterable[object], *, err: bool = False, keep: str = "") -> None:
    """Print each of ``lines`` on a line of its own: a line break inside a line (a case
    id holding one) is shown as ``\\u000a``, so a value cannot forge a line of output."""
    echo("\n".join(neutralise(line, keep=keep) for line in lines), err=err)


__all__ = ["echo", "echo_lines", "neutralise"]
