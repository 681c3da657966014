"""The Files and Batches endpoints of the loopback server, in both vendors'
wire formats, answered by the server's own script so that a batch and an interactive
call of the same request get the same answer.

OpenAI: ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL of ``{custom_id,
method, url, body}``), ``POST /v1/batches``, ``GET /v1/batches/{id}`` (``status``
``validating``/``in_progress``/``finalizing``/``completed``/``expired``/``cancelled``,
``request_counts``), ``GET /v1/files/{id}/content`` (output and error JSONL lines
``{custom_id, response: {status_code, body}, error}``), ``POST /v1/batches/{id}/cancel``.

Anthropic: ``POST /v1/messages/batches`` (``{requests: [{custom_id, params}]}``),
``GET /v1/messages/batches/{id}`` (``processing_status``
``in_progress``/``canceling``/``ended``, ``request_counts``), ``GET`` of its
``results_url`` (JSONL ``{custom_id, result: {type, message | error}}``) and
``POST /v1/messages/batches/{id}/cancel``.

:class:`BatchScript` plays what a vendor may do: a batch that takes N polls, requests
left unfinished when the batch expires, failed requests (whatever the script answers
with an HTTP error) and results in another order than the requests.
"""

from __future__ import annotations

import email.parser
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: A reply of the loopback server: status, body (dict or bytes) and content type.
Answer = tuple[int, Any, str]
JSON = "application/json"
JSONL = "application/jsonl"


@dataclass
class BatchScript:
    """How the loopback's batch engine behaves."""

    #: Polls (``GET`` of the batch) that answer "in progress" before the batch ends.
    polls: int = 1
    #: Custom ids left unfinished when the batch ends: the batch ends as expired.
    expire: Callable[[str], bool] | None = None
    #: Results in the reverse order of the requests (vendors give no order).
    reverse: bool = True


@dataclass
class _Batch:
    id: str
    vendor: str
    #: (custom id, request body) in the order submitted.
    requests: list[tuple[str, Any]]
    polls: int = 0
    status: str = "in_progress"
    #: Result lines once ended: (custom id, outcome, payload); outcome is one of
    #: succeeded, errored, expired, canceled.
    results: list[tuple[str, str, Any]] = field(default_factory=list)
    ended: bool = False
    cancel_asked: bool = False
    #: ``output_file_id`` and ``error_file_id`` once written (OpenAI).
    files: dict[str, str | None] = field(default_factory=dict)


class BatchBackend:
    """State of the batches a loopback server received. ``submissions`` counts batches
    created (a resumed run must not add any); ``cancels`` the batch ids cancelled."""

    def __init__(self, answer: Callable[[str, Any], tuple[int, Any]], script: BatchScript) -> None:
        #: ``answer(path, body)``: the status and body the server's script gives the
        #: request at ``path`` (``/v1/chat/completions`` or ``/v1/messages``).
        self.answer = answer
        self.script = script
        self.submissions = 0
        self.polls = 0
        self.cancels: list[str] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self._lock = threading.Lock()

    @staticmethod
    def handles(path: str) -> bool:
        path = path.split("?")[0]
        return path.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches"))

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer:
        path = path.split("?")[0]
        with self._lock:
            if path.startswith("/v1/messages/batches"):
                return self._anthropic(method, path, headers, raw)
            return self._openai(method, path, headers, raw)

    # -- OpenAI ---------------------------------------------------------------------------

    def _openai(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer:
        if method == "POST" and path == "/v1/files":
            data = _multipart_file(headers.get("content-type", ""), raw)
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = data
            return 200, _file_object(file_id, len(data)), JSON
        m = re.fullmatch(r"/v1/files/([^/]+)/content", path)
        if method == "GET" and m:
            if m.group(1) not in self.files:
                return 404, _error("no such file"), JSON
            return 200, self.files[m.group(1)], JSONL
        if method == "POST" and path == "/v1/batches":
            body = json.loads(raw)
            uploaded = self.files.get(body.get("input_file_id", ""))
            if uploaded is None:
                return 400, _error("input_file_id names no file"), JSON
            lines = [json.loads(line) for line in uploaded.splitlines() if line.strip()]
            requests = [(line["custom_id"], line["body"]) for line in lines]
            batch = self._new("openai", f"batch_{self.submissions + 1}", requests)
            return 200, self._openai_object(batch), JSON
        m = re.fullmatch(r"/v1/batches/([^/]+)(/cancel)?", path)
        if m and m.group(1) in self.batches:
            batch = self.batches[m.group(1)]
            if m.group(2):
                self.cancels.append(batch.id)
                batch.cancel_asked = True
                self._finish(batch)
            else:
                self._poll(batch)
            return 200, self._openai_object(batch), JSON
        return 404, _error(f"no route {method} {path}"), JSON

    def _openai_object(self, batch: _Batch) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": "file-input",
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": None,
            "error_file_id": None,
            "created_at": 0,
            "request_counts": {"total": len(batch.requests), "completed": 0, "failed": 0},
        }
        if batch.ended:
            good = sum(1 for r in batch.results if r[1] == "succeeded")
            out["request_counts"].update(completed=good, failed=len(batch.results) - good)
            if not batch.files:
                self._write_outputs(batch)
            out.update(batch.files)
        return out

    def _write_outputs(self, batch: _Batch) -> None:
        """The output file (answered requests) and the error file (the rest) of an ended
        batch; a file with no line is not made (its id stays null, as OpenAI does)."""
        good = [_openai_line(r) for r in batch.results if r[1] == "succeeded"]
        bad = [_openai_line(r) for r in batch.results if r[1] != "succeeded"]
        for name, lines in (("output_file_id", good), ("error_file_id", bad)):
            file_id = None
            if lines:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(lines).encode("utf-8")
            batch.files[name] = file_id

    # -- Anthropic ------------------------------------------------------------------------

    def _anthropic(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer:
        if method == "POST" and path == "/v1/messages/batches":
            body = json.loads(raw)
            requests = [(r["custom_id"], r["params"]) for r in body["requests"]]
            batch = self._new("anthropic", f"msgbatch_{self.submissions + 1}", requests)
            return 200, self._anthropic_object(batch, headers), JSON
        m = re.fullmatch(r"/v1/messages/batches/([^/]+)(/cancel|/results)?", path)
        if not m or m.group(1) not in self.batches:
            return 404, _error(f"no route {method} {path}"), JSON
        batch = self.batches[m.group(1)]
        if m.group(2) == "/results":
            if not batch.ended:
                return 400, _error("the batch is still processing"), JSON
            lines = [_anthropic_line(r) for r in batch.results]
            return 200, "".join(lines).encode("utf-8"), JSONL
        if m.group(2) == "/cancel":
            self.cancels.append(batch.id)
            batch.cancel_asked = True
            batch.status = "canceling"
        else:
            self._poll(batch)
        return 200, self._anthropic_object(batch, headers), JSON

    def _anthropic_object(self, batch: _Batch, headers: dict[str, str]) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.ended:
            for _cid, outcome, _payload in batch.results:
                counts[outcome] += 1
        else:
            counts["processing"] = len(batch.requests)
        host = headers.get("host", "127.0.0.1")
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": counts,
            "ended_at": "2026-01-01T00:00:00Z" if batch.ended else None,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "archived_at": None,
            "cancel_initiated_at": "2026-01-01T00:00:00Z" if batch.cancel_asked else None,
            "results_url": f"http://{host}/v1/messages/batches/{batch.id}/results"
            if batch.ended
            else None,
        }

    # -- both -----------------------------------------------------------------------------

    def _new(self, vendor: str, batch_id: str, requests: list[tuple[str, Any]]) -> _Batch:
        self.submissions += 1
        status = "validating" if vendor == "openai" else "in_progress"
        batch = _Batch(batch_id, vendor, requests, status=status)
        self.batches[batch_id] = batch
        return batch

    def _poll(self, batch: _Batch) -> None:
        self.polls += 1
        batch.polls += 1
        if batch.ended:
            return
        if batch.cancel_asked or batch.polls > self.script.polls:
            self._finish(batch)
        elif batch.vendor == "openai":
            batch.status = "in_progress"

    def _finish(self, batch: _Batch) -> None:
        """End ``batch``: each request answered by the script, unless the script expires
        it or the batch was cancelled."""
        if batch.ended:
            return
        expire = self.script.expire
        path = "/v1/chat/completions" if batch.vendor == "openai" else "/v1/messages"
        results: list[tuple[str, str, Any]] = []
        for custom_id, body in batch.requests:
            if batch.cancel_asked:
                results.append((custom_id, "canceled", None))
            elif expire is not None and expire(custom_id):
                results.append((custom_id, "expired", None))
            else:
                status, payload = self.answer(path, body)
                results.append((custom_id, "succeeded" if status == 200 else "errored", payload))
        if self.script.reverse:
            results.reverse()
        batch.results = results
        batch.ended = True
        outcomes = {r[1] for r in results}
        if batch.vendor == "anthropic":
            batch.status = "ended"
        elif batch.cancel_asked:
            batch.status = "cancelled"
        else:
            batch.status = "expired" if "expired" in outcomes else "completed"


def _openai_line(result: tuple[str, str, Any]) -> str:
    custom_id, outcome, payload = result
    line: dict[str, Any] = {"id": f"batch_req_{custom_id[:8]}", "custom_id": custom_id}
    if outcome in ("succeeded", "errored"):
        status = 200 if outcome == "succeeded" else 400
        if outcome == "errored" and isinstance(payload, dict) and "error" in payload:
            status = int(payload["error"].get("code") or 400)
        line["response"] = {"status_code": status, "request_id": "req_loop", "body": payload}
        line["error"] = None
    else:
        code = "batch_expired" if outcome == "expired" else "batch_cancelled"
        line["response"] = None
        line["error"] = {"code": code, "message": f"the request was not run ({code})"}
    return json.dumps(line, ensure_ascii=False) + "\n"


def _anthropic_line(result: tuple[str, str, Any]) -> str:
    custom_id, outcome, payload = result
    inner: dict[str, Any] = {"type": outcome}
    if outcome == "succeeded":
        inner["message"] = payload
    elif outcome == "errored":
        message = payload.get("error", {}).get("message") if isinstance(payload, dict) else None
        inner["error"] = {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message or str(payload)},
        }
    return json.dumps({"custom_id": custom_id, "result": inner}, ensure_ascii=False) + "\n"


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The bytes of the ``file`` part of a ``multipart/form-data`` body."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser().parsebytes(head + raw)
    for part in message.walk():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else b""
    return b""


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 0,
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}
