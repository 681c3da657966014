"""Reading JSON text nobody vouches for: dataset lines and model answers.

``json.loads`` alone lets such text end a whole run: 5,000 nested brackets raise
``RecursionError``, a 5,000-digit integer ``ValueError``, and a ``"\\ud800"`` escape gives a
string that cannot be written as UTF-8 (the cache key, SQLite and every record fail on it
later). Duplicate keys silently keep the last value. Everything here turns those into one
:class:`JsonTextError` with a one-line reason, or repairs them where that is safe.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

#: Deeper than any case or answer needs (an answer is 4 levels, a case with tool
#: arguments perhaps 10), far below what would exhaust Python's stack later on.
MAX_DEPTH = 64
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


class JsonTextError(ValueError):
    """JSON text that cannot be used. ``where`` is ``json`` or the path of the field."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


def decode_error_text(exc: json.JSONDecodeError) -> str:
    """``Expecting ',' delimiter at column 26``. json's own message may end in "at" already
    ("Unterminated string starting at"), which must not read "at at column"."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonTextError("json", f"duplicate key {key!r} in one object")
        out[key] = value
    return out


def loads_untrusted(text: str, *, unique_keys: bool = True, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``text``; raise :class:`JsonTextError` for invalid JSON, duplicate keys (when
    ``unique_keys``), nesting deeper than ``max_depth``, numbers too long for Python and
    lone surrogates (whose field the error names)."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys if unique_keys else None)
    except JsonTextError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonTextError("json", f"invalid JSON ({decode_error_text(exc)})") from None
    except RecursionError:
        raise JsonTextError("json", f"nested deeper than {max_depth} levels") from None
    except ValueError:
        # The only other ValueError json raises: an integer past Python's digit limit.
        limit = sys.get_int_max_str_digits()
        raise JsonTextError("json", f"a number with more than {limit} digits") from None
    problem = check_value(value, max_depth)
    if problem is not None:
        raise JsonTextError(*problem)
    return value


def check_value(value: Any, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """``(field path, problem)`` for the first thing in a parsed value that later code
    cannot handle (too deep, a lone surrogate in a key or string), else ``None``. Walks
    with a stack, not recursion, so any depth is safe to look at. A first walk only asks
    whether there is a problem; the field path is built by a second walk when there is
    one (building a path string per item made the check cost 0.2 ms per model answer)."""
    if _fine(value, max_depth):
        return None
    return _first_problem(value, max_depth)


def _fine(value: Any, max_depth: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    search = _SURROGATE_RE.search
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return False
        if isinstance(item, str):
            if search(item):
                return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if search(key):
                    return False
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return True


def _first_problem(value: Any, max_depth: int) -> tuple[str, str] | None:
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if depth > max_depth:
            return "json", f"nested deeper than {max_depth} levels"
        if isinstance(item, str):
            found = _SURROGATE_RE.search(item)
            if found:
                return path or "json", (
                    f"holds a lone surrogate {found.group()!r} (not valid Unicode text)"
                )
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                child_path = f"{path}.{key}" if path else str(key)
                if _SURROGATE_RE.search(key):
                    return path or "json", f"a key holds a lone surrogate: {key!r}"
                stack.append((child, child_path, depth + 1))
        elif isinstance(item, list):
            for i in range(len(item) - 1, -1, -1):
                stack.append((item[i], f"{path}.{i}" if path else str(i), depth + 1))
    return None


def scrub_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD: a model answer is kept, and
    can be cached and recorded, instead of failing wherever it is encoded."""
    return _SURROGATE_RE.sub(REPLACEMENT, text)
