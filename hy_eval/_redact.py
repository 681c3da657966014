"""Secrets out of every artifact: the one function, :func:`redact`, applied to
text before it is stored in a run folder (``manifest.json``, ``cases.jsonl``,
``summary.json``, so the reports built from them) or in the cache file (the stored
request of an answer, finished records and report memos).

It removes credentials in URLs (``http://user:sk-…@host/v1``), ``Bearer`` tokens,
values of key-named fields (``Authorization``, ``x-api-key``, ``api_key=``, ``?key=``,
``password``), vendor-shaped keys (``sk-…``) and the exact API keys this process was
given (``register_secret``, the vendors' key variables). A provider's error body that
echoes the request headers is the usual way a key ends up in a report.

The patterns never consume a quote, a backslash or white space, so redacting a JSON
text leaves valid JSON. Redacting twice gives the same text as redacting once.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, TypeVar, cast

T = TypeVar("T")

MARK = "[REDACTED]"

#: Environment variables whose values are API keys (read when text is redacted).
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")

#: Shorter values are not treated as secrets: test keys such as "k" or "unused" would
#: otherwise blank every such letter in a report.
MIN_SECRET_LENGTH = 8

_VALUE = r"[^\s\"'\\,;&}<>]+"
#: Each pattern with the substrings of which at least one must occur for it to match: a
#: pattern runs only over texts that hold one (in the lowered text when the flag says so). The
#: key-named-field pattern costs about 1 ms over a 9 KB case record, which nearly all
#: records do not need; ``str.__contains__`` costs microseconds.
_PATTERNS: tuple[tuple[re.Pattern[str], str, tuple[str, ...], bool], ...] = (
    # scheme://user:password@host -> scheme://[REDACTED]@host
    (
        re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@\"'\\<>]+@"),
        rf"\1{MARK}@",
        ("://",),
        False,
    ),
    # Authorization: Bearer x, "x-api-key": "x", api_key=x, password: x
    (
        re.compile(
            r"(?i)((?:proxy-)?authorization|x-api-key|api[-_]?key|access[-_]?token"
            r"|client[-_]?secret|passw(?:or)?d)(\\?[\"']?\s*[:=]\s*\\?[\"']?)"
            r"(?:(?:Bearer|Basic)\s+)?" + _VALUE
        ),
        rf"\1\2{MARK}",
        (
            *(
                f"{a}{sep}{b}"
                for a, b in (("api", "key"), ("access", "token"), ("client", "secret"))
                for sep in ("", "-", "_")
            ),
            "authorization",
            "passwd",
            "password",
        ),
        True,
    ),
    # ?key=x&token=x in a URL
    (
        re.compile(r"(?i)([?&](?:key|token)=)[^&\s\"'\\#<>]+"),
        rf"\1{MARK}",
        ("key=", "token="),
        True,
    ),
    (
        re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
        rf"\1 {MARK}",
        ("Bearer", "Basic"),
        False,
    ),
    # OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) key shapes
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), MARK, ("sk-",), False),
)

#: The non-ASCII characters that an ASCII letter of a case-insensitive pattern matches
#: but that ``str.lower`` does not turn into that letter (İ, ı, ſ, the Kelvin sign): a
#: text holding one is given to every pattern, since the lowered text could miss a match.
_FOLDS_APART = ("\u0130", "\u0131", "\u017f", "\u212a")

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a key this process was given, so that it is redacted wherever it shows."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def _known_secrets() -> list[str]:
    with _lock:
        found = set(_registered)
    for name in KEY_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= MIN_SECRET_LENGTH:
            found.add(value)
    return sorted(found, key=len, reverse=True)  # a key that contains another goes first


def redact(text: str) -> str:
    """``text`` with every credential replaced by ``[REDACTED]``."""
    for secret in _known_secrets():
        if secret in text:
            text = text.replace(secret, MARK)
    lowered = text.lower()
    every = not text.isascii() and any(c in text for c in _FOLDS_APART)
    for pattern, replacement, needs, in_lowered in _PATTERNS:
        haystack = lowered if in_lowered else text
        if every or any(n in haystack for n in needs):
            text = pattern.sub(replacement, text)
            lowered = text.lower()
    return text


def redact_tree(value: T) -> T:
    """A copy of a JSON-like value (dicts, lists, strings) with :func:`redact` applied to
    every string in it, keys included (tuples become lists, as in JSON)."""
    out: Any = value
    if isinstance(value, str):
        out = redact(value)
    elif isinstance(value, dict):
        out = {redact_tree(k): redact_tree(v) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        out = [redact_tree(v) for v in value]
    return cast(T, out)
