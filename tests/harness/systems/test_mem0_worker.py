"""The mem0 worker (``workers/mem0_worker.py``) under mem0's own virtualenv, against the
loopback server playing the model: chat completions answered from a script keyed by a
word in the conversation, embeddings made from a hash of the text. No network but the
loopback; the virtualenv is made on first use (``ensure_venv``), so the first run needs
the package index and later runs do not."""

from __future__ import annotations

import hashlib
import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from hy_eval.harness.systems import SystemInstallError, ensure_venv, worker_script
from tests.loopback import LoopbackServer, Reply, ServedRequest, error_body, openai_completion

DIMS = 16
MEMORY_AT = "2026-01-15T10:00:00"
#: Seconds to wait for one line from the worker (import and first case included).
LINE_TIMEOUT = 120.0

#: The model's answers, by a word that only that case's conversation holds.
ANSWERS = {
    "beehives": json.dumps(
        {
            "memory": [
                {"id": "0", "text": "User works at a bakery in Lund.", "attributed_to": "user"},
                {"id": "1", "text": "Oskar teaches maths in Malmö.", "attributed_to": "assistant"},
                {
                    "id": "2",
                    "text": "Assistant recommended a smoker for the hives.",
                    "attributed_to": "assistant",
                },
                {"id": "3", "text": "Somebody likes tea.", "attributed_to": "neighbour"},
            ]
        }
    ),
    "rowing": json.dumps(
        {"memory": [{"id": "0", "text": "User rows on Sundays.", "attributed_to": "user"}]}
    ),
    "garbage": "I am sorry, I cannot produce JSON today.",
}


def embedding(text: str) -> list[float]:
    """A fixed vector for a text: the same text, the same vector."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(b - 127.5) / 127.5 for b in digest[:DIMS]]


def script(req: ServedRequest) -> Reply:
    if req.path.endswith("/embeddings"):
        inputs = req.body["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        data = [
            {"object": "embedding", "index": i, "embedding": embedding(t)}
            for i, t in enumerate(inputs)
        ]
        return Reply(body={"object": "list", "data": data, "model": req.body["model"]})
    new = req.messages[-1]["content"].split("## New Messages", 1)[-1]
    if "refused" in new:
        return Reply(400, error_body(400, "scripted refusal"))
    for word, text in ANSWERS.items():
        if word in new:
            return Reply(body=openai_completion(text))
    return Reply(body=openai_completion(json.dumps({"memory": []})))


@pytest.fixture(scope="module")
def venv_python() -> Path:
    try:
        return ensure_venv("mem0")
    except SystemInstallError as exc:  # the tests need the system itself: a failure
        pytest.fail(f"mem0's virtualenv could not be made: {exc}")


@pytest.fixture
def server():
    with LoopbackServer(script) as srv:
        yield srv


class Worker:
    """The worker process: requests in, answer lines out, every stdout line kept."""

    def __init__(self, python: Path, url: str, workdir: Path, stderr: IO[bytes]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OPENROUTER_"))}
        env.update(
            HY_EVAL_BASE_URL=url,
            HY_EVAL_API_KEY="loopback-token",
            HY_EVAL_MODEL="loopback-model",
            HY_EVAL_EMBED_MODEL="loopback-embed",
            HY_EVAL_EMBED_DIMS=str(DIMS),
            HY_EVAL_WORKDIR=str(workdir),
            HY_EVAL_MEMORY_AT=MEMORY_AT,
            HOME=str(workdir / "home"),
        )
        self.proc = subprocess.Popen(
            [str(python), str(worker_script("mem0"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        self.lines: list[bytes] = []
        self._queue: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._queue.put(line)

    def line(self) -> dict[str, Any]:
        try:
            return json.loads(self._queue.get(timeout=LINE_TIMEOUT))
        except queue.Empty:
            pytest.fail(f"no line from the worker in {LINE_TIMEOUT:.0f} s")

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
        self.proc.stdin.flush()
        return self.line()

    def quit(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"op": "quit"}\n')
        self.proc.stdin.flush()
        code = self.proc.wait(timeout=60)
        self._reader.join(timeout=10)  # every line the worker wrote is in ``lines``
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def worker(venv_python, server, tmp_path):
    with open(tmp_path / "stderr.log", "wb") as stderr:
        w = Worker(venv_python, server.openai_url, tmp_path / "work", stderr)
        yield w
        w.close()


def case(label: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "op": "case",
        "label": label,
        "user_id": "user",
        "system": None,
        "history": [],
        "existing": [],
        "messages": messages,
        **extra,
    }


BEEHIVE_CASE = case(
    "ms-en-0001",
    history=[
        {"role": "user", "name": "Hana", "content": "We moved the market stall to Friday."},
        {"role": "assistant", "name": "Oskar", "content": "Friday suits me."},
    ],
    existing=[{"id": "m1", "text": "The user keeps two beehives.", "owner": "user"}],
    messages=[
        {
            "role": "user",
            "name": "Hana",
            "content": "I work at a bakery in Lund, next to my beehives.",
        },
        {"role": "assistant", "name": "Oskar", "content": "I teach maths in Malmö."},
        {"role": "assistant", "content": "A smoker helps when you open the hives."},
    ],
)


def chat_requests(server: LoopbackServer) -> list[ServedRequest]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def test_ready_line_names_the_system_its_version_and_owner_only(worker):
    ready = worker.line()
    assert ready == {"ready": True, "system": "mem0", "version": "2.2.1", "measures": ["owner"]}
    assert worker.quit() == 0


def test_a_case_with_history_an_existing_memory_and_three_speakers(worker, server):
    worker.line()
    got = worker.ask(BEEHIVE_CASE)
    assert got["ok"] is True, got
    assert got["error"] is None
    (m1,) = got["existing_ids"].values()
    assert list(got["existing_ids"]) == ["m1"]
    assert got["before"] == [
        {"id": m1, "text": "The user keeps two beehives.", "owner": "user", "status": "active"}
    ]
    after = {m["text"]: m for m in got["after"]}
    assert after["The user keeps two beehives."]["id"] == m1
    # Owners as mem0's model attributed them: assistant -> agent, an unknown word -> null.
    assert {t: m["owner"] for t, m in after.items()} == {
        "The user keeps two beehives.": "user",
        "User works at a bakery in Lund.": "user",
        "Oskar teaches maths in Malmö.": "agent",
        "Assistant recommended a smoker for the hives.": "agent",
        "Somebody likes tea.": None,
    }
    assert all(m["status"] == "active" and m["supersedes"] == [] for m in got["after"])
    assert len({m["id"] for m in got["after"]}) == 5
    assert got["profile"] is None and got["operations_raw"] is None
    assert got["calls"] == 1
    assert got["trace"]["parse_error"] is None
    assert got["trace"]["add_events"] == ["ADD"] * 4

    # What mem0's one extraction call was shown: the history as its last messages, the
    # existing memory, the fixed date, and the new messages without speakers' names.
    (chat,) = chat_requests(server)
    prompt = chat.messages[-1]["content"]
    last_k = prompt.split("## Last k Messages", 1)[1].split("##", 1)[0]
    assert last_k.strip().splitlines() == [
        "user: We moved the market stall to Friday.",
        "assistant: Friday suits me.",
    ]
    assert "The user keeps two beehives." in prompt.split("## Existing Memories", 1)[1]
    assert "## Current Date\n2026-01-15" in prompt and "## Observation Date\n2026-01-15" in prompt
    new = prompt.split("## New Messages", 1)[1].split("## Observation Date", 1)[0]
    assert "assistant: I teach maths in Malmö." in new and "Oskar" not in new
    assert chat.body["response_format"] == {"type": "json_object"}
    assert worker.quit() == 0
    assert [json.loads(line) for line in worker.lines]  # every stdout line is JSON


def test_a_garbage_answer_stores_nothing_and_the_worker_serves_the_next_case(worker, server):
    worker.line()
    got = worker.ask(case("bad", [{"role": "user", "content": "Here is garbage for you."}]))
    # mem0 logs an unreadable answer and adds nothing; it does not fail the add.
    assert got["ok"] is True
    assert got["after"] == [] and got["calls"] == 1
    assert got["trace"]["raw_answers"] == [ANSWERS["garbage"]]
    assert got["trace"]["parse_error"].startswith("JSONDecodeError")

    refused = worker.ask(case("refused", [{"role": "user", "content": "This one is refused."}]))
    assert refused["ok"] is False
    assert "scripted refusal" in refused["error"] and "\n" not in refused["error"]

    nxt = worker.ask(case("next", [{"role": "user", "content": "I go rowing on Sundays."}]))
    assert nxt["ok"] is True
    assert [(m["text"], m["owner"]) for m in nxt["after"]] == [("User rows on Sundays.", "user")]
    assert worker.quit() == 0


def test_a_case_does_not_see_the_memories_or_history_of_the_one_before(worker, server):
    worker.line()
    first = worker.ask(BEEHIVE_CASE)
    assert first["ok"] is True and len(first["after"]) == 5
    second = worker.ask(
        case(
            "second",
            [{"role": "user", "content": "I go rowing on Sundays."}],
            existing=[{"id": "e1", "text": "The assistant speaks Swedish.", "owner": "agent"}],
        )
    )
    assert second["ok"] is True
    (e1,) = second["existing_ids"].values()
    assert second["before"] == [
        {"id": e1, "text": "The assistant speaks Swedish.", "owner": "agent", "status": "active"}
    ]
    assert sorted(m["text"] for m in second["after"]) == [
        "The assistant speaks Swedish.",
        "User rows on Sundays.",
    ]
    prompt = chat_requests(server)[-1].messages[-1]["content"]
    assert "beehives" not in prompt and "market stall" not in prompt
    assert worker.quit() == 0


def test_stdout_holds_json_lines_only_and_quit_exits_zero(worker):
    worker.line()
    worker.ask(BEEHIVE_CASE)
    worker.ask({"op": "dance"})
    assert worker.quit() == 0
    assert len(worker.lines) == 3
    for line in worker.lines:
        assert line.endswith(b"\n")
        assert isinstance(json.loads(line), dict)
    assert json.loads(worker.lines[-1]) == {"ok": False, "error": "unknown op 'dance'"}
