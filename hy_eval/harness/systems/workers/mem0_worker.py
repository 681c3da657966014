"""Worker for mem0's open-source ``mem0.Memory`` (PyPI ``mem0ai``), run by the mem0
virtualenv's interpreter. It speaks the JSON-lines protocol of docs/systems.md ("Worker
protocol"): one request a line on stdin, one answer a line on stdout.

Imports only the standard library and ``mem0``: this file never sees ``hy_eval`` and
``hy_eval`` never imports it.

What mem0 2.2.1 is given and what it gives back (read in its installed source):

- One ``Memory`` for the worker's life: Qdrant in local in-process mode (``:memory:``),
  its SQLite history under ``HY_EVAL_WORKDIR``. ``reset()`` before every case empties
  both, so each case starts from an empty store.
- History: mem0 reads earlier conversation only from its SQLite "messages" table (the
  "Last k Messages" of its extraction prompt), and no public call writes that table
  without running extraction, so the worker writes it with the same storage call
  ``add()`` uses, under the session key ``add()`` builds for the user.
- Existing memories: ``add(..., infer=False)``, the public way to store a text as is
  (no model call); the message role carries the owner (``assistant`` for ``agent``).
- The case: ``add(messages, user_id=...)`` with the messages as given (``name`` kept;
  mem0 itself does not show names to its model) and the case's system prompt, if any,
  as a leading ``system`` message.
- Owner: an inferred memory stores the model's ``attributed_to`` (``user`` or
  ``assistant``) and an ``infer=False`` memory stores its message ``role``; ``get_all``
  returns both, so ``owner`` is measured. There is no profile, and the model's raw
  proposals are ADDs only, not exposed as operations: ``profile`` and
  ``operations_raw`` are null.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

SYSTEM = "mem0"
DISTRIBUTION = "mem0ai"
#: What this system exposes beyond memory texts (see the module docstring).
MEASURES = ["owner"]
#: More than any case holds; ``get_all`` returns 20 memories unless told.
LIST_LIMIT = 10_000
#: Raw model answers kept in a case's trace are cut to this many characters.
TRACE_TEXT_LIMIT = 4_000
#: mem0's ``attributed_to`` / ``role`` words mapped to our owners.
OWNERS = {"user": "user", "assistant": "agent"}


def protocol_channel() -> Any:
    """Keep the real stdout for the protocol and send everything else written to
    stdout (print calls, native libraries writing to fd 1) to stderr."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb", buffering=0)


def send(channel: Any, answer: dict[str, Any]) -> None:
    """One JSON object, one line."""
    channel.write((json.dumps(answer, ensure_ascii=False) + "\n").encode("utf-8"))


def settings() -> dict[str, Any]:
    """The harness's environment (docs/systems.md, "Environment the harness gives")."""
    env = os.environ
    return {
        "base_url": env["HY_EVAL_BASE_URL"],
        "api_key": env["HY_EVAL_API_KEY"],  # the harness's server's token
        "model": env["HY_EVAL_MODEL"],
        "embed_model": env["HY_EVAL_EMBED_MODEL"],
        "embed_dims": int(env["HY_EVAL_EMBED_DIMS"]),
        "workdir": env["HY_EVAL_WORKDIR"],
        "memory_at": datetime.fromisoformat(env["HY_EVAL_MEMORY_AT"]),
    }


def prepare_environment(workdir: str) -> None:
    """Switches mem0 reads when it is imported. ``MEM0_TELEMETRY=False`` stops the
    PostHog client built at import and the notices fetched from GitHub; ``MEM0_DIR``
    is where mem0 writes its config file at import (default under HOME).
    ``OPENROUTER_API_KEY`` would send the model calls to OpenRouter instead of the
    configured base URL."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = os.path.join(workdir, "mem0_dir")
    os.environ.pop("OPENROUTER_API_KEY", None)


def fix_prompt_clock(memory_at: datetime) -> None:
    """mem0 writes today's date (UTC) into every extraction prompt ("Observation Date",
    "Current Date"), and ``add()`` refuses ``timestamp=`` in the open-source package.
    The protocol fixes the time every case is written at, so the clock the prompt
    module reads is replaced by one stopped at ``HY_EVAL_MEMORY_AT``; the prompt text
    itself is unchanged."""
    from mem0.configs import prompts  # type: ignore[import-not-found, unused-ignore]

    stopped = memory_at if memory_at.tzinfo else memory_at.replace(tzinfo=timezone.utc)

    class StoppedClock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return stopped.astimezone(tz) if tz else stopped.replace(tzinfo=None)

    prompts.datetime = StoppedClock


def make_memory(conf: dict[str, Any], raw_answers: list[str]) -> Any:
    """One ``mem0.Memory`` on the harness's endpoint. ``response_callback`` is mem0's
    own hook for the model's answers: each chat answer's text is kept for the trace."""
    from mem0 import Memory  # type: ignore[import-not-found, unused-ignore]

    def keep_answer(_llm: Any, response: Any, _params: Any) -> None:
        raw_answers.append(response.choices[0].message.content or "")

    dims = conf["embed_dims"]
    return Memory.from_config(
        {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": conf["model"],
                    "api_key": conf["api_key"],
                    "openai_base_url": conf["base_url"],
                    "response_callback": keep_answer,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": conf["embed_model"],
                    "api_key": conf["api_key"],
                    "openai_base_url": conf["base_url"],
                    "embedding_dims": dims,
                },
            },
            # The embedder does not tell the store its width: both are set.
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "hy_eval",
                    "embedding_model_dims": dims,
                    "path": ":memory:",
                },
            },
            "history_db_path": os.path.join(conf["workdir"], "history.db"),
        }
    )


def owner_of(item: dict[str, Any]) -> str | None:
    """Our owner from mem0's ``attributed_to`` (inferred memories) or ``role``
    (memories stored with ``infer=False``); anything else is not said."""
    word = item.get("attributed_to") or item.get("role")
    return OWNERS.get(str(word).strip().lower()) if word else None


def stored(memory: Any, user_id: str) -> list[dict[str, Any]]:
    """The user's memories as the protocol lists them, sorted by text. mem0 keeps only
    fact memories in its vector store and deletes rather than marks, so all are active.
    Qdrant lists them in the order of their random ids, which differs from run to run;
    the scorer breaks ties by a fact's place in the list, so the list must not."""
    listed = memory.get_all(filters={"user_id": user_id}, top_k=LIST_LIMIT)
    items = [
        {
            "id": str(item["id"]),
            "text": item.get("memory") or "",
            "owner": owner_of(item),
            "status": "active",
        }
        for item in listed.get("results", [])
    ]
    return sorted(items, key=lambda m: (m["text"], m["owner"] or ""))


def seed_history(memory: Any, user_id: str, history: list[dict[str, Any]]) -> None:
    """Write the case's history into mem0's messages table, under the session key
    ``add(user_id=...)`` reads. One message a call: the table orders by the time of
    the write, and messages written together share one time."""
    from mem0.memory.main import _build_session_scope  # type: ignore[import-not-found, unused-ignore]

    scope = _build_session_scope({"user_id": user_id})
    for message in history:
        memory.db.save_messages([message], scope)


def seed_existing(memory: Any, user_id: str, existing: list[dict[str, Any]]) -> dict[str, str]:
    """Store each existing memory as is (``infer=False``: no model call, one
    embedding) with the role that says its owner; the case's id → mem0's id. mem0
    skips a message without a role (and ``system`` ones), so an owner of null is
    stored as ``user``, the role an application would write a user's fact with."""
    ids: dict[str, str] = {}
    for item in existing:
        role = "assistant" if item.get("owner") == "agent" else "user"
        added = memory.add([{"role": role, "content": item["text"]}], user_id=user_id, infer=False)
        ids[str(item["id"])] = str(added["results"][0]["id"])
    return ids


def parse_problem(answer: str) -> str | None:
    """Why mem0 could not read a model answer, or None. mem0 logs a failed parse and
    stores nothing, so the answer is parsed again here with mem0's own helpers, in
    its order (code fences off, JSON, then the JSON found inside the text)."""
    from mem0.memory.utils import extract_json, remove_code_blocks  # type: ignore[import-not-found, unused-ignore]

    try:
        text = remove_code_blocks(answer)
        if not text or not text.strip():
            return None  # mem0 reads an empty answer as "nothing to remember"
        try:
            parsed = json.loads(text, strict=False)
        except json.JSONDecodeError:
            parsed = json.loads(extract_json(text), strict=False)
        parsed.get("memory", [])
    except Exception as exc:  # whatever mem0's own parse would have hit
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


def run_case(memory: Any, request: dict[str, Any], raw_answers: list[str]) -> dict[str, Any]:
    """One case: empty store, history and existing memories in, ``before``, the add,
    ``after``. An exception escaping here makes the case an error."""
    user_id = str(request.get("user_id") or "user")
    started = time.monotonic()
    memory.reset()
    raw_answers.clear()
    history = list(request.get("history") or [])
    seed_history(memory, user_id, history)
    existing_ids = seed_existing(memory, user_id, list(request.get("existing") or []))
    before = stored(memory, user_id)
    system = request.get("system")
    messages = ([{"role": "system", "content": system}] if system else []) + list(
        request.get("messages") or []
    )
    seeded = time.monotonic()
    added = memory.add(messages, user_id=user_id)
    add_seconds = time.monotonic() - seeded
    after = [dict(item, supersedes=[]) for item in stored(memory, user_id)]
    problems = [p for p in map(parse_problem, raw_answers) if p]
    return {
        "ok": True,
        "existing_ids": existing_ids,
        "before": before,
        "after": after,
        "profile": None,
        "operations_raw": None,
        # mem0's add makes one extraction call; counted from the answers it received.
        "calls": len(raw_answers),
        "error": None,
        "trace": {
            "raw_answers": [a[:TRACE_TEXT_LIMIT] for a in raw_answers],
            "parse_error": problems[0] if problems else None,
            "add_events": [r.get("event") for r in added.get("results", [])],
            "history_messages": len(history),
            "add_seconds": round(add_seconds, 3),
            "case_seconds": round(time.monotonic() - started, 3),
        },
    }


def one_line(exc: BaseException) -> str:
    """An exception as one line for ``error``."""
    text = " ".join(str(exc).split()) or "no message"
    return f"{type(exc).__name__}: {text}"[:500]


def answer(memory: Any, line: bytes, raw_answers: list[str]) -> dict[str, Any] | None:
    """The answer to one request line, or None for ``quit``."""
    try:
        request = json.loads(line.decode("utf-8"))
    except ValueError as exc:
        return {"ok": False, "error": f"request is not a JSON line: {one_line(exc)}"}
    op = request.get("op") if isinstance(request, dict) else None
    if op == "quit":
        return None
    if op != "case":
        return {"ok": False, "error": f"unknown op {op!r}"}
    try:
        return run_case(memory, request, raw_answers)
    except Exception as exc:  # the SDK failed this case; the worker goes on
        return {"ok": False, "error": one_line(exc)}


def main() -> int:
    channel = protocol_channel()
    try:
        conf = settings()
        os.makedirs(conf["workdir"], exist_ok=True)
        prepare_environment(conf["workdir"])
        fix_prompt_clock(conf["memory_at"])
        raw_answers: list[str] = []
        memory = make_memory(conf, raw_answers)
    except Exception as exc:  # no ready line: the harness sees the worker end
        print(f"{SYSTEM} worker could not start: {one_line(exc)}", file=sys.stderr)
        return 1
    version = metadata.version(DISTRIBUTION)
    send(channel, {"ready": True, "system": SYSTEM, "version": version, "measures": MEASURES})
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            break  # the harness closed stdin: same as quit
        if not line.strip():
            continue
        reply = answer(memory, line, raw_answers)
        if reply is None:
            break
        send(channel, reply)
    memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
