"""A scripted model server on 127.0.0.1 speaking the OpenAI chat-completions and Anthropic
messages wire formats, for tests and benchmarks. Real SDK clients talk to it over HTTP.

A *script* is a function from the received request to a ``Reply``: an answer, an HTTP
error with headers (``429`` with ``Retry-After``), a delay, a malformed body or a
connection reset. The server counts every request it receives.

The openai provider's ``auto`` mode sends one small probe per base URL and model before
its first call. Like OpenAI, the server takes ``json_schema``: it answers a
probe itself, without the script, and counts it in ``probes``, not ``requests``, so a
script sees only the harness's own calls. ``answer_probes=False`` hands probes to the
script, to play servers that refuse modes.

With ``batch=BatchScript(...)`` it also speaks both vendors' Files and Batches endpoints
(``tests/loopback/_batch.py``), each batched request answered by the same script.

HTTP/1.1 keep-alive and a large listen backlog matter: with ``http.server``'s defaults
(HTTP/1.0, backlog 5) bursts of concurrent connections stall and timings lie.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.loopback._batch import BatchBackend, BatchScript


@dataclass
class ServedRequest:
    index: int
    path: str
    body: Any
    #: The request's HTTP headers, names in lower case (a test checks the key sent).
    headers: dict[str, str] = field(default_factory=dict)
    #: The request's body as its bytes came (a test compares them with batch files).
    raw: bytes = b""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def prompt_text(self) -> str:
        """All message and system text of the request, joined (for scripts that route)."""
        parts: list[str] = []
        if isinstance(self.body, dict) and isinstance(self.body.get("system"), str):
            parts.append(self.body["system"])
        for m in self.messages:
            c = m.get("content")
            parts.append(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False))
        return "\n".join(parts)


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    reset: bool = False


Script = Callable[[ServedRequest], Reply]

#: The word only the structured-output probe's schema holds (``_structured.PROBE_SCHEMA``).
PROBE_MARK = "hy_eval_ok"


def is_probe(body: Any) -> bool:
    """Whether a request body is the openai provider's structured-output probe."""
    return isinstance(body, dict) and PROBE_MARK in json.dumps(
        [body.get("response_format"), body.get("tools")]
    )


def openai_completion(
    text: str,
    *,
    model: str = "loopback-model",
    finish_reason: str = "stop",
    input_tokens: int = 10,
    output_tokens: int = 5,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    }


def anthropic_message(
    *,
    text: str | None = None,
    tool_input: dict[str, Any] | None = None,
    tool_name: str = "answer",
    model: str = "loopback-claude",
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_input is not None:
        content.append(
            {"type": "tool_use", "id": "toolu_loopback", "name": tool_name, "input": tool_input}
        )
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_input is not None else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": f"http_{status}", "code": status}}


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True
    allow_reuse_address = True


class LoopbackServer:
    """``with LoopbackServer(script) as server:`` then point a client at ``server.openai_url``
    or ``server.anthropic_url``. ``server.count`` is the number of requests received."""

    def __init__(
        self, script: Script, *, answer_probes: bool = True, batch: BatchScript | None = None
    ) -> None:
        self.script = script
        self.answer_probes = answer_probes
        #: The Files and Batches endpoints, when asked for (``batch``).
        self.batch = BatchBackend(self._batched, batch) if batch is not None else None
        self.requests: list[ServedRequest] = []
        #: Probes answered by the server itself (``answer_probes``).
        self.probes: list[Any] = []
        #: Bodies of the requests that came in batches (not in ``requests``).
        self.batched: list[Any] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle's algorithm on, the
            # body waited for the client's delayed ACK, about 40 ms on every answer.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                self._batch_route("GET", b"")

            def _batch_route(self, method: str, raw: bytes) -> bool:
                if outer.batch is None or not outer.batch.handles(self.path):
                    if method == "GET":
                        self._send(Reply(404, error_body(404, f"no route GET {self.path}")))
                    return False
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, body, ctype = outer.batch.handle(method, self.path, headers, raw)
                self._send(Reply(status, body, {"Content-Type": ctype}))
                return True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self._batch_route("POST", raw):
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                if outer.answer_probes and is_probe(body):
                    with outer._lock:
                        outer.probes.append(body)
                    reply = Reply(body=openai_completion(json.dumps({"probe": PROBE_MARK})))
                else:
                    with outer._lock:
                        headers = {k.lower(): v for k, v in self.headers.items()}
                        req = ServedRequest(len(outer.requests), self.path, body, headers, raw)
                        outer.requests.append(req)
                    try:
                        reply = outer.script(req)
                    except Exception as exc:  # a broken script answers 500, visibly
                        reply = Reply(500, error_body(500, f"script error: {exc!r}"))
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.reset:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.connection.close()
                    self.close_connection = True
                    return
                payload = reply.body
                if isinstance(payload, (dict, list)):
                    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
                elif isinstance(payload, str):
                    data = payload.encode("utf-8")
                else:
                    data = payload or b""
                self.send_response(reply.status)
                if "Content-Type" not in reply.headers:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _batched(self, path: str, body: Any) -> tuple[int, Any]:
        """The script's answer to one request of a batch (status and body)."""
        with self._lock:
            index = len(self.batched)
            self.batched.append(body)
        try:
            reply = self.script(ServedRequest(index, path, body))
        except Exception as exc:
            return 500, error_body(500, f"script error: {exc!r}")
        return reply.status, reply.body

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
