"""The answer cache: SQLite in WAL mode, keyed by a SHA-256 of everything that can change
the answer (rule E6).

The key covers the provider, its model, base URL and answer-changing options, the
messages, temperature, max tokens, seed, schema and schema name, extra body and the
repeat index. Timeouts, concurrency and retry settings are not in it. Keys and stored
rows never contain API keys or request headers. Errors are never stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from hy_eval._files import private_db_file
from hy_eval.llm.core import Completion, Request, Usage

CacheMode = Literal["read-write", "replay-only", "off", "refresh"]
CACHE_MODES: tuple[str, ...] = ("read-write", "replay-only", "off", "refresh")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    completion TEXT NOT NULL,
    created REAL NOT NULL
);
"""


class CacheMiss(Exception):
    """No cached answer in replay-only mode. The message names the call and the key."""

    def __init__(self, key: str, label: str, fields: Mapping[str, Any]) -> None:
        self.key = key
        self.label = label
        what = f"{label}: " if label else ""
        super().__init__(
            f"{what}no cached answer in replay-only mode for {fields.get('provider')}:"
            f"{fields.get('model')} (key {key[:16]}); run 'hy-eval cache explain {key[:16]}' "
            "on a cache that has it, or record the answers again without replay-only"
        )


def key_fields(
    provider: str, model: str, base_url: str, options: Mapping[str, Any], request: Request
) -> dict[str, Any]:
    """The exact fields hashed into a cache key (shown by ``hy-eval cache explain``)."""
    return {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "options": dict(options),
        "messages": [dict(m) for m in request.messages],
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "json_schema": request.json_schema,
        "schema_name": request.schema_name,
        "extra_body": request.extra_body,
        "repeat": request.repeat,
    }


def canonical_json(fields: Mapping[str, Any]) -> str:
    """The text a key hashes (sorted keys, compact); also stored as the row's request."""
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(fields: Mapping[str, Any], canonical: str | None = None) -> str:
    text = canonical if canonical is not None else canonical_json(fields)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def completion_to_json(c: Completion) -> str:
    d = asdict(c)
    d.pop("cached", None)
    d.pop("retries", None)
    return json.dumps(d, ensure_ascii=False)


def completion_from_json(text: str) -> Completion:
    d = json.loads(text)
    d["usage"] = Usage(**d.get("usage", {}))
    return Completion(**d, cached=True)


def open_db(path: str, schema: str) -> sqlite3.Connection:
    """A connection to the cache file at ``path`` (made with its folder if need be) that
    several tasks, threads and processes can share: WAL, a busy timeout, ``schema`` run."""
    if path != ":memory:":
        private_db_file(Path(path))  # 0600: cached answers may hold private conversations
    db = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
    db.execute("PRAGMA busy_timeout = 30000")
    # Two runs opening a new cache file at the same moment can both ask to switch it to
    # WAL; SQLite may then answer "database is locked" at once, without waiting out the
    # busy timeout (seen in test_two_runs_share_one_cache_file_at_the_same_time under
    # load). The switch and the schema are idempotent, so they are simply tried again.
    for attempt in range(100):
        try:
            if path != ":memory:":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            with db:
                db.executescript(schema)
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 99:
                raise
            time.sleep(0.05)
    return db


class AnswerCache:
    """A SQLite answer cache. Safe for several tasks of one process (one connection and a
    lock) and for several processes (WAL, busy timeout, one transaction per write)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = open_db(self.path, _SCHEMA)

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT completion FROM answers WHERE key = ?", (key,)
            ).fetchone()
        return completion_from_json(row[0]) if row else None

    def put(
        self,
        key: str,
        fields: Mapping[str, Any],
        completion: Completion,
        request_json: str | None = None,
    ) -> None:
        """Store ``completion`` under ``key``; ``request_json`` is ``canonical_json(fields)``
        when the caller has it already."""
        if request_json is None:
            request_json = canonical_json(fields)
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO answers"
                " (key, provider, model, request, completion, created) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    fields.get("provider", ""),
                    fields.get("model", ""),
                    request_json,
                    completion_to_json(completion),
                    time.time(),
                ),
            )

    def explain(self, key_prefix: str) -> list[dict[str, Any]]:
        """Rows whose key starts with ``key_prefix``: what went into the key, and the answer."""
        if len(key_prefix) < 6:
            raise ValueError("give at least 6 characters of the key")
        with self._lock:
            rows = self._db.execute(
                "SELECT key, request, completion, created FROM answers WHERE key LIKE ? || '%'",
                (key_prefix.lower(),),
            ).fetchall()
        return [
            {"key": k, "request": json.loads(r), "completion": json.loads(c), "created": t}
            for k, r, c, t in rows
        ]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            total = self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            per_model = self._db.execute(
                "SELECT provider, model, COUNT(*) FROM answers GROUP BY provider, model"
                " ORDER BY provider, model"
            ).fetchall()
        size = Path(self.path).stat().st_size if self.path != ":memory:" else 0
        return {
            "path": self.path,
            "answers": total,
            "bytes": size,
            "by_model": [{"provider": p, "model": m, "answers": n} for p, m, n in per_model],
        }

    def rows(self) -> Iterator[tuple[str, str, str]]:
        """All rows as (key, request JSON, completion JSON), in key order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, request, completion FROM answers ORDER BY key"
            ).fetchall()
        yield from rows

    def close(self) -> None:
        with self._lock:
            self._db.close()
