"""``hy-eval serve``: an OpenAI-compatible HTTP endpoint on 127.0.0.1 in front of our
providers, for programs that are not ours (external memory systems under evaluation)
and must send their model calls through our LLM layer.

Routes: ``POST /v1/chat/completions`` (no streaming), ``POST /v1/embeddings`` (the
stand-in of ``_embed.py``), ``GET /v1/models`` and ``GET /v1/models/{id}``. What each
answers is ``_app.py``; this module moves the bytes: a threading HTTP server with
HTTP/1.1 keep-alive and a listen backlog of 1024 (with ``http.server``'s default of 5,
a burst of concurrent connections stalls a second each), refusing a host that is not a
loopback address unless asked (:func:`check_host`). Every request must carry the
server's random token and pass the checks of ``_guard.py``; at most
``MAX_CONNECTIONS`` connections are open at once, and a request's headers must arrive
within ``HEADER_TIMEOUT`` seconds of its first byte (its body within ``BODY_TIMEOUT``).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hy_eval.llm.cache import CacheMiss
from hy_eval.llm.core import ConfigError, PriceTable
from hy_eval.llm.providers import LLMClient, ModelOptions
from hy_eval.llm.serve._app import ServeSummary, _Answer, _App
from hy_eval.llm.serve._guard import (
    MAX_BODY_BYTES,
    Refusal,
    allowed_hosts,
    body_length,
    check_caller,
    new_token,
)
from hy_eval.llm.serve._wire import error_object

__all__ = ["MAX_BODY_BYTES", "LLMServer", "check_host", "serve_in_thread"]

#: Seconds an idle keep-alive connection is kept open.
IDLE_TIMEOUT = 300.0
#: Seconds from a request's first byte to the end of its headers (a client that sends
#: a byte now and then held a thread for up to IDLE_TIMEOUT per byte).
HEADER_TIMEOUT = 10.0
#: Seconds from the end of the headers to the end of the body (32 MB over loopback
#: takes well under one).
BODY_TIMEOUT = 60.0
#: Connections open at once; one more is answered 503 and closed (each holds a thread).
MAX_CONNECTIONS = 128
#: Seconds between the accept loop's looks at a stop request (``stop`` waits up to this).
POLL_INTERVAL = 0.1


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a host that is not a loopback address unless ``allow_remote``: the token is
    the only guard there, and whoever learns it uses the provider and its key."""
    if allow_remote or host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(
            f"--host {host} is not a loopback address: anyone who reaches it and learns the "
            "token (it travels in clear HTTP) would use the model and its key; give "
            "--allow-remote to serve there anyway"
        )


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.app: _App | None = None
        self.stopping = False
        #: Set by LLMServer: the token every request must carry, the Host values taken.
        self.token = ""
        self.hosts: frozenset[str] | None = frozenset()
        self._lock = threading.Lock()
        #: Open connections, and whether each is answering a request now.
        self._connections: dict[socket.socket, bool] = {}
        #: Connections accepted and not yet closed (counted from the accept loop, before
        #: a thread is started for one).
        self._admitted: set[socket.socket] = set()

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Take a connection if fewer than ``MAX_CONNECTIONS`` are open; else answer it
        503 from the accept loop (a few bytes into an empty send buffer) and close it."""
        with self._lock:
            if len(self._admitted) < MAX_CONNECTIONS:
                self._admitted.add(request)
                return True
        if self.app is not None:
            self.app.note_error(503)
        text = f"the server has {MAX_CONNECTIONS} connections open; try again"
        with contextlib.suppress(OSError):
            request.setblocking(False)
            request.send(_raw_answer(503, error_object(text, "server_error"), {"Retry-After": "1"}))
        return False

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._admitted.discard(request)
        super().shutdown_request(request)

    def mark(self, conn: socket.socket, busy: bool | None) -> None:
        """Track ``conn``: busy, idle, or gone (``None``)."""
        with self._lock:
            if busy is None:
                self._connections.pop(conn, None)
            else:
                self._connections[conn] = busy

    def close_idle(self) -> None:
        """End every connection that waits for a request (a busy one ends after its answer)."""
        with self._lock:
            idle = [c for c, busy in self._connections.items() if not busy]
        for conn in idle:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


def _raw_answer(status: int, body: Any, headers: dict[str, str]) -> bytes:
    """A whole HTTP answer that closes the connection, for the accept loop."""
    data = json.dumps(body).encode("utf-8")
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Content-Type: application/json"]
    lines += [f"Content-Length: {len(data)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + data


class _Late(TimeoutError):
    """A request's headers or body did not arrive by its deadline."""


class _DeadlineReader(io.RawIOBase):
    """The connection's bytes, each read bounded by the time left to ``deadline`` (a
    ``time.monotonic()`` value; ``None``: an idle connection, IDLE_TIMEOUT per read).
    A socket timeout alone bounds each read, not the request: one byte every 299 s
    kept a thread for hours."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline: float | None = None
        #: Whether a read missed the deadline (http.server swallows the error).
        self.late = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is None:
            return self.sock.recv_into(buffer)
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.late = True
            raise _Late("the request did not arrive in time")
        self.sock.settimeout(left)
        try:
            return self.sock.recv_into(buffer)
        except TimeoutError:
            self.late = True
            raise _Late("the request did not arrive in time") from None
        finally:
            self.sock.settimeout(IDLE_TIMEOUT)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT
    # The headers and the body go out in two writes: with Nagle's algorithm the body
    # waits for the client's delayed ACK of the headers, 40 ms a call on Linux.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def setup(self) -> None:
        super().setup()
        # Reads through a deadline instead of http.server's plain buffered socket file.
        self.rfile.close()
        self._reader = _DeadlineReader(self.connection)
        self._buffered = io.BufferedReader(self._reader)
        self.rfile = self._buffered
        self.server.mark(self.connection, False)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.mark(self.connection, None)

    def handle_one_request(self) -> None:
        """Wait (up to IDLE_TIMEOUT) for a request's first byte, then give its request
        line and headers HEADER_TIMEOUT; a request that misses it is answered 408."""
        # http.server sets these while it parses; an answer before that needs them.
        self.requestline, self.request_version, self.command = "", "HTTP/1.1", ""
        self._reader.deadline = None
        try:
            if not self._buffered.peek(1):  # the client closed an idle connection
                self.close_connection = True
                return
        except OSError:  # idle for IDLE_TIMEOUT, or reset
            self.close_connection = True
            return
        self._reader.deadline = time.monotonic() + HEADER_TIMEOUT
        self._reader.late = False
        # http.server catches the reader's TimeoutError and closes without an answer.
        super().handle_one_request()
        self._reader.deadline = None
        if self._reader.late:
            self._reader.late = False
            self.send_error(
                408, f"the request's headers did not arrive within {HEADER_TIMEOUT:g} s"
            )

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a request line it cannot read, a method it does not
        know) as OpenAI-style JSON, like every other error answer."""
        text = message or HTTPStatus(code).phrase
        self._refuse(Refusal(code, text))

    def _refuse(self, refusal: Refusal) -> None:
        """An error answer before the body was read; the connection closes, since an
        unread body would be taken for the next request."""
        self.close_connection = True
        app = self.server.app
        if app is not None:
            app.note_error(refusal.status)
        kind = "invalid_request_error" if refusal.status < 500 else "server_error"
        body = error_object(refusal.message, kind, refusal.code)
        self._send(_Answer(refusal.status, body, dict(refusal.headers)))

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_PUT(self) -> None:
        self._answer("PUT")

    def do_DELETE(self) -> None:
        self._answer("DELETE")

    def _admit(self, method: str) -> bytes | None:
        """The request's body when the request may be answered; else ``None`` after a
        refusal (``_guard``: framing, Host, Origin, token, content type)."""
        length = body_length(method, self.headers)
        refused = (
            length
            if isinstance(length, Refusal)
            else check_caller(
                method, self.headers, token=self.server.token, hosts=self.server.hosts
            )
        )
        if refused is not None:
            self._refuse(refused)
            return None
        assert isinstance(length, int)
        if not length:
            return b""
        self._reader.deadline = time.monotonic() + BODY_TIMEOUT
        try:
            raw = self.rfile.read(length)
        except _Late:
            self._reader.late = False
            self._refuse(Refusal(408, f"the request body did not arrive within {BODY_TIMEOUT:g} s"))
            return None
        finally:
            self._reader.deadline = None
        if len(raw) < length:  # the client closed before the whole body came
            self.close_connection = True
            return None
        return raw

    def _answer(self, method: str) -> None:
        self.server.mark(self.connection, True)
        raw = self._admit(method)
        if raw is None:
            return
        app = self.server.app
        if app is None:
            answer = _Answer(503, error_object("the server is starting", "server_error"))
        else:
            answer = app.answer(method, self.path, raw)
        self._send(answer)

    def _send(self, answer: _Answer) -> None:
        data = json.dumps(answer.body, ensure_ascii=False).encode("utf-8")
        if self.server.stopping:
            self.close_connection = True
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client went away: nobody to answer
            self.close_connection = True
        finally:
            self.server.mark(self.connection, False)


class LLMServer:
    """An OpenAI-compatible endpoint in front of the client that ``options`` make
    (``ModelOptions.client``; ``client`` given instead for a test's own).

    ``start()`` serves on a thread, ``serve_forever()`` on the calling one; ``stop()``
    ends it and returns the :class:`ServeSummary`. Every request must carry ``token``
    (random, made here) as ``Authorization: Bearer TOKEN``, the API key of an OpenAI
    client; nothing of it enters a cache key (those are made of the request's body).
    Raises ``ConfigError`` for a host
    that is not a loopback address (unless ``allow_remote``), a port it cannot listen
    on, or a model setting that cannot be set up."""

    def __init__(
        self,
        options: ModelOptions,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        allow_remote: bool = False,
        prices: PriceTable | None = None,
        log: Callable[[str], None] | None = None,
        client: LLMClient | None = None,
    ) -> None:
        check_host(host, allow_remote)
        kind = _HTTPServer6 if ":" in host else _HTTPServer
        try:
            self._http = kind((host, port))
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host} port {port}: {exc.strerror}") from None
        try:
            client = client if client is not None else options.client()
        except BaseException:
            self._http.server_close()
            raise
        # A server answers every call: the same refusal three times is three error
        # answers, not the end (a run stops there; LLMClient.stop_after).
        client.stop_after = 0
        self.client = client
        self._app = _App(client, prices or PriceTable(), options.temperature, log)
        self._http.app = self._app
        #: What a client sends as its API key; tell it to the programs that call.
        self.token = new_token()
        bound = self._http.server_address
        self._http.token = self.token
        self._http.hosts = allowed_hosts((host, str(bound[0])), int(bound[1]), allow_remote)
        self._thread: threading.Thread | None = None
        self._serving = False
        self._stopped: ServeSummary | None = None
        self._stop_lock = threading.Lock()

    @property
    def url(self) -> str:
        """The base URL an OpenAI client takes: ``http://127.0.0.1:PORT/v1``."""
        address = self._http.server_address
        host, port = str(address[0]), int(address[1])
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/v1"

    @property
    def model(self) -> str:
        """The chat model's id, as ``/v1/models`` lists it and requests must name it."""
        return self._app.model

    @property
    def first_miss(self) -> CacheMiss | None:
        """The first call that replay-only mode could not answer, if one."""
        return self._app.first_miss

    def start(self) -> LLMServer:
        """Serve on a thread of its own; returns at once."""
        self._serving = True
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            args=(POLL_INTERVAL,),
            name="hy-eval-serve",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on the calling thread until :meth:`stop` or ``KeyboardInterrupt``."""
        self._serving = True
        self._http.serve_forever(POLL_INTERVAL)

    def summary(self) -> ServeSummary:
        return self._stopped or self._app.summary()

    def stop(self) -> ServeSummary:
        """Stop taking requests, answer the calls in progress 503, close the provider
        and the cache; the summary of what was served. Safe to call twice."""
        with self._stop_lock:
            if self._stopped is not None:
                return self._stopped
            self._http.stopping = True
            if self._serving:
                self._http.shutdown()
            self._http.server_close()
            self._http.close_idle()
            self._app.loop.close()
            if self.client.cache is not None:
                self.client.cache.close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._stopped = self._app.summary()
            return self._stopped

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_in_thread(
    options: ModelOptions,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    prices: PriceTable | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[str, str, Callable[[], ServeSummary]]:
    """Serve ``options``' model on a thread: ``(base URL, token, stop)``. Give the URL to
    an OpenAI client as its ``base_url``, the token as its ``api_key`` and the model's id
    (``GET /v1/models``) as its model; ``stop()`` ends the server and returns its
    :class:`ServeSummary`."""
    server = LLMServer(options, host=host, port=port, prices=prices, log=log).start()
    return server.url, server.token, server.stop
