"""A batch vendor that is a folder (``run --batch-dir DIR``): each batch is an OpenAI
Batch input file written into the folder, and its answers are the OpenAI Batch output
file someone puts next to it (``vllm run-batch``, a loop over any OpenAI-compatible
endpoint, a vendor's batch API, or by hand). Nothing is sent anywhere.

``DIR/<id>.requests.jsonl`` holds one ``{custom_id, method, url, body}`` line per request,
``body`` built by the openai provider's own code (``openai_line``); ``<id>`` is a digest of
the file's bytes, so a run killed between writing the file and keeping its id writes the
same file under the same name again. The batch has ended when ``DIR/<id>.results.jsonl``
exists (and ``DIR/<id>.errors.jsonl``, OpenAI's error file, is read too when present).
Every output line is untrusted input, read as the vendors' batch results are: an unknown
or repeated ``custom_id``, an unreadable line, another model, a malformed body, an error
line or an answer outside the request's schema costs only its request.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hy_eval.llm.batch._vendors import (
    MIB,
    BatchItem,
    ItemResult,
    RemoteState,
    openai_line,
    openai_result,
)
from hy_eval.llm.core import Completion, ProviderError, Request, parse_json_answer, schema_problem

REQUESTS_SUFFIX = ".requests.jsonl"
RESULTS_SUFFIX = ".results.jsonl"
ERRORS_SUFFIX = ".errors.jsonl"
#: The most bytes of an output file read (a file from elsewhere may be anything).
MAX_OUTPUT_BYTES = 2 * 1024 * MIB


class FolderBatches:
    """The :class:`~hy_eval.llm.batch._vendors.Vendor` of a folder."""

    name = "folder"
    #: No server limits a file; parts this size stay easy to hand to any tool.
    max_requests = 50_000
    max_bytes = 200 * MIB
    #: The engine does not wait for an offline vendor: a round ends the process.
    offline = True

    def __init__(self, provider: Any, folder: Path) -> None:
        self._provider = provider
        self.folder = folder

    def requests_path(self, batch_id: str) -> Path:
        return self.folder / f"{batch_id}{REQUESTS_SUFFIX}"

    def results_path(self, batch_id: str) -> Path:
        return self.folder / f"{batch_id}{RESULTS_SUFFIX}"

    def line(self, item: BatchItem) -> bytes:
        return openai_line(self._provider, item)

    async def submit(self, lines: list[bytes]) -> str:
        """Write the request file (whole, then renamed into place); its id."""
        data = b"".join(lines)
        batch_id = "hy-" + hashlib.sha256(data).hexdigest()[:24]
        path = self.requests_path(batch_id)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise ProviderError("other", f"cannot write {path}: {exc.strerror}") from None
        return batch_id

    async def state(self, batch_id: str) -> RemoteState:
        """Ended once its output file is there; the request count from the input file."""
        try:
            with open(self.requests_path(batch_id), "rb") as f:
                total = sum(1 for _ in f)
        except OSError:
            total = 0
        if self.results_path(batch_id).is_file():
            return RemoteState("answered", True, total, 0, 0, 0)
        return RemoteState("waiting for its results file", False, total, 0, 0, 0)

    async def results(self, batch_id: str) -> AsyncIterator[ItemResult]:
        for path in (self.results_path(batch_id), self.folder / f"{batch_id}{ERRORS_SUFFIX}"):
            if not path.is_file():
                continue
            try:
                with open(path, "rb") as f:
                    read = 0
                    for raw in f:
                        read += len(raw)
                        if read > MAX_OUTPUT_BYTES:
                            yield ItemResult("", "failed", reason=f"{path.name}: over 2 GiB")
                            break
                        text = raw.decode("utf-8", errors="replace")
                        if text.strip():
                            yield openai_result(text, self._provider)
            except OSError as exc:
                raise ProviderError("other", f"cannot read {path}: {exc.strerror}") from None

    def answer_problem(self, request: Request, completion: Completion) -> str | None:
        """Why an answer cannot stand for ``request``: asked for JSON, it is none, or it
        does not follow the request's schema (its shape; see ``_schema_check``)."""
        if request.json_schema is None:
            return None
        parsed, error = parse_json_answer(completion.text)
        if parsed is None:
            return f"answer is no JSON object ({error})"
        return schema_problem(parsed, request.json_schema)

    async def cancel(self, batch_id: str) -> None:
        """Nothing runs anywhere: a request file stays until its answers come."""


class OfflineProvider:
    """The openai provider of a ``--batch-dir`` run with sending taken away: its name,
    model, base URL and structured mode (so its cache keys) are the openai provider's, but
    an answer not in the cache is an error naming the folder, never a network call."""

    def __init__(self, inner: Any, folder: Path) -> None:
        self._inner = inner
        self.folder = folder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def complete(self, request: Request, timeout: float) -> Completion:
        # The request's digest keeps the messages apart, so that many such errors are not
        # taken for a server refusing every call the same way (``_count_refusal``).
        digest = hashlib.sha256(repr(request).encode("utf-8")).hexdigest()[:12]
        raise ProviderError(
            "other",
            f"no answer for request {digest} in the batch folder {self.folder} "
            "(its batch rounds gave none it could use)",
        )

    async def aclose(self) -> None:
        await self._inner.aclose()
