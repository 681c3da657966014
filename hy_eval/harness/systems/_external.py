"""An external memory system as a system under test: a worker process in the system's
own virtualenv, spoken to in JSON lines (docs/systems.md, "Worker protocol").

A worker that dies, answers with something that is not a JSON object, or does not answer
within the case timeout costs that case; the next case starts a new worker. Its stderr
goes to ``worker-N.log`` in its work folder.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hy_eval.harness.datasets import Case
from hy_eval.harness.systems._base import CaseFailed, SystemRun
from hy_eval.harness.systems._storediff import NEVER_MEASURED, not_measured, store_run
from hy_eval.harness.systems._venv import worker_script
from hy_eval.llm import CacheMiss

#: A line of the worker may hold every memory of a case: far above that, far below RAM.
LINE_LIMIT = 64 * 1024 * 1024
#: The time every case is written at (a clock in a prompt makes every call a miss).
MEMORY_AT = "2026-01-15T10:00:00"
#: Variables of ours a worker gets as they are (docs/systems.md, "Environment the harness
#: gives the worker"): where programs are, the locale, time zone and temporary folder.
#: Nothing else: a worker is a program under test, and our environment holds the
#: provider's keys (a planted worker wrote OPENAI_API_KEY base64-encoded into a memory,
#: past the redaction of the literal key), proxies' credentials and cloud settings.
PASSED_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")
#: Prefixes of variables passed as they are (the locale's categories).
PASSED_PREFIXES = ("LC_",)
_serial = itertools.count(1)


class WorkerSettings:
    """What every worker of a run is started with."""

    def __init__(
        self,
        name: str,
        python: Path,
        base_url: str,
        model: str,
        *,
        embed_model: str,
        embed_dims: int = 384,
        workdir: Path | None = None,
        start_timeout: float = 600.0,
        case_timeout: float = 1800.0,
        token: str = "",
    ) -> None:
        self.name, self.python, self.base_url, self.model = name, python, base_url, model
        #: The model server's token: the worker's API key for it (never a real key).
        self.token = token
        self.embed_model, self.embed_dims = embed_model, embed_dims
        self.workdir = workdir
        self.start_timeout, self.case_timeout = start_timeout, case_timeout

    def env(self, workdir: Path) -> dict[str, str]:
        """The worker's environment: the allow-listed variables of ours, HOME in its own
        folder, the protocol's variables, and the OpenAI and Anthropic SDKs' variables
        pointing at the model server with its token as their key."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k.upper() in PASSED_VARIABLES or k.upper().startswith(PASSED_PREFIXES)
        }
        server = self.base_url.removesuffix("/v1")  # the Anthropic SDK adds /v1 itself
        return env | {
            "HOME": str(workdir),
            "OPENAI_API_KEY": self.token,
            "OPENAI_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": self.token,
            "ANTHROPIC_BASE_URL": server,
            "HY_EVAL_API_KEY": self.token,
            "HY_EVAL_BASE_URL": self.base_url,
            "HY_EVAL_MODEL": self.model,
            "HY_EVAL_EMBED_MODEL": self.embed_model,
            "HY_EVAL_EMBED_DIMS": str(self.embed_dims),
            "HY_EVAL_WORKDIR": str(workdir),
            "HY_EVAL_MEMORY_AT": MEMORY_AT,
            "PYTHONUNBUFFERED": "1",
            "PYTHONIOENCODING": "utf-8",
        }


class _Worker:
    """One running worker process."""

    def __init__(self, proc: asyncio.subprocess.Process, ready: dict[str, Any], home: Path):
        self.proc, self.ready, self.home = proc, ready, home
        #: It gave no answer in time: :meth:`stop` kills it without asking it to quit.
        self.hung = False

    @classmethod
    async def start(cls, settings: WorkerSettings) -> _Worker:
        root = settings.workdir
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        # Absolute: the worker runs in this folder, and is told it by name.
        home = Path(tempfile.mkdtemp(prefix=f"{settings.name}-", dir=root)).absolute()
        log = open(home / f"worker-{next(_serial)}.log", "wb")  # noqa: SIM115 (the child's)
        try:
            proc = await _spawn(settings, home, log)
        except OSError as exc:  # no interpreter there, not executable: every case alike
            raise CaseFailed(f"cannot start the worker: {exc}") from None
        finally:
            log.close()
        worker = cls(proc, {}, home)
        try:
            worker.ready = await worker.read(settings.start_timeout, "start")
        except CaseFailed:
            await worker.stop()
            raise
        if worker.ready.get("ready") is not True:
            await worker.stop()
            raise CaseFailed(f"worker did not say ready: {str(worker.ready)[:200]}")
        return worker

    async def read(self, timeout: float, what: str) -> dict[str, Any]:
        """The worker's next line as a JSON object; ``CaseFailed`` on anything else."""
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except asyncio.TimeoutError:
            self.hung = True
            raise CaseFailed(f"worker gave no answer to {what} within {timeout:g} s") from None
        except ValueError:  # a line over LINE_LIMIT
            raise CaseFailed(f"worker's answer to {what} is over {LINE_LIMIT} bytes") from None
        if not line:
            code = await self.proc.wait()
            raise CaseFailed(f"worker exited (code {code}) during {what}; see {self.home}")
        try:
            obj = json.loads(line)
        except ValueError:
            raise CaseFailed(f"worker wrote a line that is not JSON: {line[:120]!r}") from None
        if not isinstance(obj, dict):
            raise CaseFailed(f"worker wrote JSON that is not an object: {line[:120]!r}")
        return obj

    async def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise CaseFailed(f"worker exited before the case; see {self.home}") from None
        return await self.read(timeout, "the case")

    async def stop(self, keep: bool = False) -> None:
        """Ask the worker to quit; kill it if it does not within 10 s, or at once if it
        hung (it reads no quit line: the 10 s would only add to its case's timeout). Its
        folder is removed unless ``keep`` (a worker that failed: its log says why)."""
        if self.proc.returncode is None and self.hung:
            self.proc.kill()
            await self.proc.wait()
        if self.proc.returncode is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "quit"}\n')
                await self.proc.stdin.drain()
                await asyncio.wait_for(self.proc.wait(), 10)
            except (BrokenPipeError, ConnectionResetError, asyncio.TimeoutError):
                self.proc.kill()
                await self.proc.wait()
        if not keep:
            shutil.rmtree(self.home, ignore_errors=True)


class ExternalSystem:
    """A system under test in a worker process. ``first_miss`` returns the replay-only
    miss the model server met, if any: the system only sees an error answer, the run
    must stop on it. ``spent`` returns the record's ``tokens`` and ``cost_usd`` for the
    case that just ended (``ExternalRun.spent``)."""

    def __init__(
        self,
        settings: WorkerSettings,
        first_miss: Callable[[], CacheMiss | None],
        spent: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self.name = settings.name
        self.settings = settings
        self.first_miss, self.spent = first_miss, spent
        self._worker: _Worker | None = None
        #: The ``measures`` of the worker's ready line, once a worker said it.
        self.measures: list[str] | None = None

    @property
    def not_measured(self) -> frozenset[str]:
        """The metrics this system cannot expose (an errored case's record says them too,
        so a run whose every case failed still reads n/m, not n/a); before a worker said
        what it measures, those no external system has."""
        return not_measured(self.measures) if self.measures is not None else NEVER_MEASURED

    async def add_case(self, case: Case, *, label: str, repeat: int) -> SystemRun:
        if self._worker is None:
            self._worker = await _Worker.start(self.settings)
            self.measures = list(self._worker.ready.get("measures") or [])
        worker = self._worker
        try:
            answer = await worker.ask(_request(case, label), self.settings.case_timeout)
        except CaseFailed:
            self._worker = None
            await worker.stop(keep=True)
            self._raise_miss()
            self.spent()  # a failed case's calls are not the next case's
            raise
        self._raise_miss()
        if answer.get("ok") is not True:
            self.spent()
            raise CaseFailed(str(answer.get("error") or "the worker said the case failed")[:300])
        run = store_run(case, answer, list(worker.ready.get("measures") or []))
        run.fields.update(self.spent())
        return run

    def _raise_miss(self) -> None:
        miss = self.first_miss()
        if miss is not None:
            raise miss

    async def close(self) -> None:
        if self._worker is not None:
            await self._worker.stop()
            self._worker = None


async def _spawn(settings: WorkerSettings, home: Path, log: Any) -> asyncio.subprocess.Process:
    """The worker process of ``settings`` in folder ``home``, its stderr to ``log``."""
    return await asyncio.create_subprocess_exec(
        str(settings.python),
        str(worker_script(settings.name)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=log,
        env=settings.env(home),
        cwd=home,
        limit=LINE_LIMIT,
    )


def _request(case: Case, label: str) -> dict[str, Any]:
    """The worker's request for ``case`` (docs/systems.md, "Lines")."""
    return {
        "op": "case",
        "label": label,
        "user_id": case.user_id,
        "system": case.system,
        "history": case.history or [],
        "existing": [m.model_dump() for m in case.existing],
        "messages": case.messages,
    }
