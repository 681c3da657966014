"""What ``hy-eval serve`` checks of a request before it reads the body (docs/llm.md,
"Who may call it"; docs/reliability.md, "The model server"):

- framing that every reader of the bytes reads the same way: header lines of the form
  ``Name: value`` (no space before the colon, no folded line), one ``Content-Length`` of
  ASCII digits, no ``Transfer-Encoding``, no body on a request that takes none (a body
  on a kept-alive GET was read as the next request; ``1_0`` was read as 10; of two
  ``Content-Length`` headers the first won);
- the ``Host`` header names this server (a page on a rebound DNS name sends its own);
- no ``Origin`` header (a browser sends one with every request a web page makes);
- the server's token, as ``Authorization: Bearer TOKEN`` (the OpenAI SDK) or
  ``x-api-key: TOKEN`` (the Anthropic SDK);
- a POST's body is ``application/json`` (a page may POST ``text/plain`` without asking).

The first check that fails is the answer; the connection is then closed, since its
unread body would be taken for the next request.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.message import Message

#: The largest request body taken (a long conversation is a few MB at most).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: A Content-Length value: ASCII digits only (``int()`` would also take ``1_0``, ``+10``,
#: `` 10`` and other scripts' digits, which a proxy in front may read otherwise).
_LENGTH = re.compile(r"[0-9]{1,15}", re.ASCII)


@dataclass(frozen=True)
class Refusal:
    """An answer given instead of reading the request: status, message, OpenAI error code."""

    status: int
    message: str
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def new_token() -> str:
    """A random token for one server (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def allowed_hosts(hosts: Iterable[str], port: int, allow_remote: bool) -> frozenset[str] | None:
    """The ``Host`` header values a server on ``port`` accepts, lower case: the loopback
    names, and each of ``hosts`` (the ``--host`` given and the address bound). ``None``
    (any name) only for a wildcard address (``0.0.0.0``, ``::``) with ``allow_remote``:
    its clients may use any of the machine's names, and the token is then the only
    check."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    for host in hosts:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            names.add(host.lower())
            continue
        if address.is_unspecified:
            if allow_remote:
                return None
        elif address.version == 6:
            names.add(f"[{address.compressed}]")
        else:
            names.add(str(address))
    return frozenset(f"{name}:{port}" for name in names)


def _one(headers: Message, name: str) -> tuple[str | None, Refusal | None]:
    """The single value of header ``name`` (``None`` when absent), or a refusal when the
    request carries it more than once: which one counts is where readers differ."""
    values = headers.get_all(name) or []
    if len(values) > 1:
        return None, Refusal(400, f"the request has {len(values)} {name} headers; send one")
    return (str(values[0]).strip() if values else None), None


def body_length(method: str, headers: Message) -> int | Refusal:
    """How many body bytes follow the headers, or why the request is refused. Only POST
    takes a body, and it must say its length; any other method must carry none."""
    if (
        headers.defects
        or headers.get_payload()
        or any("\n" in str(value) for value in headers.values())
    ):
        # http.server's parser drops a line with space before its colon (and all after
        # it) and folds a line that starts with a space into the one before: a proxy in
        # front may read either as a header, Content-Length among them (RFC 9112 5.1, 5.2).
        return Refusal(400, "a header line is not 'Name: value' on one line")
    length, refused = _one(headers, "Content-Length")
    encoding, refused_te = _one(headers, "Transfer-Encoding")
    if refused or refused_te:
        return refused or refused_te  # type: ignore[return-value]
    if length is not None and not _LENGTH.fullmatch(length):
        return Refusal(400, f"Content-Length {length[:40]!r} is not a number of bytes")
    if method != "POST":
        if encoding is not None or (length is not None and int(length) != 0):
            return Refusal(400, f"a {method} request takes no body")
        return 0
    if encoding is not None or length is None:
        return Refusal(
            411, "send the body with a Content-Length (no Transfer-Encoding)", "length_required"
        )
    if int(length) > MAX_BODY_BYTES:
        return Refusal(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
    return int(length)


def check_caller(
    method: str, headers: Message, *, token: str, hosts: frozenset[str] | None
) -> Refusal | None:
    """``None`` when the request may be answered: its Host names this server, no web page
    sent it, it carries the token, and a POST says its body is JSON."""
    host, refused = _one(headers, "Host")
    if refused:
        return refused
    if host is None:
        return Refusal(400, "the request has no Host header", "host_missing")
    if hosts is not None and host.lower() not in hosts:
        return Refusal(
            403,
            f"Host {host[:80]!r} is not this server's address (a web page on another "
            "name, as DNS rebinding gives, is refused)",
            "host_not_allowed",
        )
    if headers.get("Origin") is not None:
        return Refusal(
            403,
            "requests from a web page (with an Origin header) are refused",
            "origin_not_allowed",
        )
    if not _has_token(headers, token):
        return Refusal(
            401,
            "missing or wrong token: send the token hy-eval serve printed as "
            "'Authorization: Bearer TOKEN' (the API key of an OpenAI client)",
            "invalid_api_key",
            {"WWW-Authenticate": 'Bearer realm="hy-eval serve"'},
        )
    if method == "POST" and _media_type(headers.get("Content-Type")) != "application/json":
        return Refusal(
            415,
            "the request body must be sent as Content-Type: application/json",
            "unsupported_media_type",
        )
    return None


def _has_token(headers: Message, token: str) -> bool:
    """Whether ``Authorization: Bearer TOKEN`` or ``x-api-key: TOKEN`` is present (compared
    in constant time: the time taken says nothing of how much of a guess was right)."""
    given: list[str] = []
    for value in headers.get_all("Authorization") or []:
        scheme, _, rest = str(value).strip().partition(" ")
        if scheme.lower() == "bearer":
            given.append(rest.strip())
    given += [str(v).strip() for v in headers.get_all("x-api-key") or []]
    return _matches(given, token)


def _matches(given: Iterable[str], token: str) -> bool:
    wanted = token.encode()
    return any(hmac.compare_digest(g.encode("utf-8", "replace"), wanted) for g in given)


def _media_type(value: str | None) -> str:
    """``application/json`` of ``application/json; charset=utf-8``, lower case."""
    return (value or "").split(";", 1)[0].strip().lower()
