"""``hy-eval serve``: an OpenAI-compatible HTTP endpoint on 127.0.0.1 in front of our
providers, for programs that are not ours (external memory systems under evaluation)
and must send their model calls through our LLM layer.

Routes: ``POST /v1/chat/completions`` (no streaming), ``POST /v1/embeddings`` (the
stand-in of ``_embed.py``), ``GET /v1/models`` and ``GET /v1/models/{id}``. What each
answers is ``_serve_app.py``; this module moves the bytes: a threading HTTP server with
HTTP/1.1 keep-alive and a listen backlog of 1024 (with ``http.server``'s default of 5,
a burst of concurrent connections stalls a second each), refusing a host that is not a
loopback address unless asked (:func:`check_host`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hy_eval.llm._base import ConfigError
from hy_eval.llm._cache import CacheMiss
from hy_eval.llm._client import LLMClient
from hy_eval.llm._options import ModelOptions
from hy_eval.llm._prices import PriceTable
from hy_eval.llm._serve_app import ServeSummary, _Answer, _App
from hy_eval.llm._serve_wire import error_object

#: The largest request body taken (a long conversation is a few MB at most).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Seconds an idle keep-alive connection is kept open.
IDLE_TIMEOUT = 300.0
#: Seconds between the accept loop's looks at a stop request (``stop`` waits up to this).
POLL_INTERVAL = 0.1


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a host that is not a loopback address unless ``allow_remote``: the server
    has no authentication, and anyone who reaches it uses the provider and its key."""
    if allow_remote or host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(
            f"--host {host} is not a loopback address: the server has no authentication "
            "and would let anyone who reaches it use the model and its key; give "
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
        self._lock = threading.Lock()
        #: Open connections, and whether each is answering a request now.
        self._connections: dict[socket.socket, bool] = {}

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
        self.server.mark(self.connection, False)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.mark(self.connection, None)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a request line it cannot read, a method it does not
        know) as OpenAI-style JSON, like every other error answer."""
        self.close_connection = True
        app = self.server.app
        if app is not None:
            app.note_error(code)
        text = message or HTTPStatus(code).phrase
        self._send(_Answer(code, error_object(text, "invalid_request_error")))

    def do_GET(self) -> None:
        self._answer("GET", b"")

    def do_POST(self) -> None:
        self.server.mark(self.connection, True)
        raw = self._body()
        if raw is not None:
            self._answer("POST", raw)

    def do_PUT(self) -> None:
        self._answer("PUT", b"")

    def do_DELETE(self) -> None:
        self._answer("DELETE", b"")

    def _body(self) -> bytes | None:
        """The request body, or ``None`` after an error answer (the connection closes:
        a body left unread would be taken for the next request)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.send_error(411, "send the body with a Content-Length (no chunked encoding)")
            return None
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.send_error(400, "Content-Length is not a number of bytes")
            return None
        if length > MAX_BODY_BYTES:
            self.send_error(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
            return None
        return self.rfile.read(length)

    def _answer(self, method: str, raw: bytes) -> None:
        self.server.mark(self.connection, True)
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
    ends it and returns the :class:`ServeSummary`. Raises ``ConfigError`` for a host
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
) -> tuple[str, Callable[[], ServeSummary]]:
    """Serve ``options``' model on a thread: ``(base URL, stop)``. Give the URL to an
    OpenAI client as its ``base_url`` and the model's id (``GET /v1/models``) as its
    model; ``stop()`` ends the server and returns its :class:`ServeSummary`."""
    server = LLMServer(options, host=host, port=port, prices=prices, log=log).start()
    return server.url, server.stop
