"""Secrets out of every artifact (issue 14): the one function, :func:`redact`, applied to
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
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host -> scheme://[REDACTED]@host
    (re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@\"'\\<>]+@"), rf"\1{MARK}@"),
    # Authorization: Bearer x, "x-api-key": "x", api_key=x, password: x
    (
        re.compile(
            r"(?i)((?:proxy-)?authorization|x-api-key|api[-_]?key|access[-_]?token"
            r"|client[-_]?secret|passw(?:or)?d)(\\?[\"']?\s*[:=]\s*\\?[\"']?)"
            r"(?:(?:Bearer|Basic)\s+)?" + _VALUE
        ),
        rf"\1\2{MARK}",
    ),
    # ?key=x&token=x in a URL
    (re.compile(r"(?i)([?&](?:key|token)=)[^&\s\"'\\#<>]+"), rf"\1{MARK}"),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {MARK}"),
    # OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) key shapes
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), MARK),
)

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
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
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
