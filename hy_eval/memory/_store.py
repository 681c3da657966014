"""The memory store: one SQLite file (or ``:memory:``).

Tables: memories (text, owner, status active/superseded/deleted, link to the memory that
superseded it), events (every operation with its before and after), profiles (the L0
profile, one row per version), l1_raw (rendered conversations), and a full-text index
(FTS5, trigram tokenizer, so Chinese text without spaces is searchable too). The schema
changes only through numbered migrations recorded in ``schema_migrations``.

All writes of one ``add`` go through ``transaction()``: a crash in the middle leaves the
store as it was before that ``add``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hy_eval._files import private_db_file
from hy_eval.memory._schema import MIGRATIONS
from hy_eval.memory._search import search_terms, short_words
from hy_eval.memory._subjects import subject_of


@dataclass(frozen=True)
class Memory:
    id: int
    user_id: str
    text: str
    owner: str
    status: str = "active"
    superseded_by: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "owner": self.owner,
            "status": self.status,
            "superseded_by": self.superseded_by,
        }


class MemoryStore:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._clear_sql: list[str] | None = None
        if self.path != ":memory:":
            private_db_file(Path(self.path))  # 0600: memories of private conversations
        self._lock = threading.RLock()
        self.db = sqlite3.connect(
            self.path, check_same_thread=False, timeout=30.0, isolation_level=None
        )
        self.db.execute("PRAGMA busy_timeout = 30000")
        self.db.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self._set_wal()
        self._migrate()

    # -- schema ------------------------------------------------------------------------

    def _set_wal(self) -> None:
        """WAL mode. Setting it skips SQLite's busy handler, so a connection opened while
        another one migrates the same file gets "database is locked" at once: retried
        here for as long as the busy timeout (30 s)."""
        deadline = time.monotonic() + 30.0
        while True:
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
                )
                done = {v for (v,) in self.db.execute("SELECT version FROM schema_migrations")}
                for version, name, statements in MIGRATIONS:
                    if version in done:
                        continue
                    for step in statements:
                        if callable(step):
                            step(self.db)
                        else:
                            self.db.execute(step)
                    self.db.execute(
                        "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                        (version, name, time.time()),
                    )
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def clear(self) -> None:
        """Delete every row, leaving the store as a freshly migrated one: ids start at 1
        again (no table uses AUTOINCREMENT) and the full-text index is emptied. The
        harness reuses one in-memory store per worker this way: a new connection migrates
        and prepares every statement again (benchmarks/README.md has the figures)."""
        if self._clear_sql is None:
            self._clear_sql = self._clear_statements()
        with self.transaction() as db:
            for sql in self._clear_sql:
                db.execute(sql)

    def _clear_statements(self) -> list[str]:
        """DELETEs for the schema's own tables, referencing tables before the ones they
        reference (a PRAGMA that defers the foreign-key checks instead makes SQLite prepare
        every statement again), then 'delete-all' for each external-content FTS5 table (its
        triggers already removed the rows; this also drops its segments)."""
        rows = self.db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        tables = {name: sql or "" for name, sql in rows}
        virtual = [n for n, sql in tables.items() if sql.upper().startswith("CREATE VIRTUAL")]
        plain = [
            n
            for n in tables
            if n not in virtual
            and not any(n.startswith(v + "_") for v in virtual)  # FTS5 shadow tables
            and not n.startswith("sqlite_")
            and n != "schema_migrations"
        ]
        refs = {
            n: {r[2] for r in self.db.execute(f'PRAGMA foreign_key_list("{n}")')} for n in plain
        }
        ordered: list[str] = []
        left = plain
        while left:  # a table goes once nothing left refers to it (all of a cycle at once)
            ready = [n for n in left if not any(n in refs[m] for m in left if m != n)]
            ordered += ready or left
            left = [n for n in left if n not in ordered]
        return [f'DELETE FROM "{n}"' for n in ordered] + [
            f'INSERT INTO "{v}"("{v}") VALUES (\'delete-all\')' for v in virtual
        ]

    def migrations(self) -> list[tuple[int, str]]:
        return list(self.db.execute("SELECT version, name FROM schema_migrations ORDER BY 1"))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: everything in it is applied, or nothing is."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- memories ----------------------------------------------------------------------

    @staticmethod
    def _row(row: tuple[Any, ...]) -> Memory:
        return Memory(*row)

    _COLS = "id, user_id, text, owner, status, superseded_by"

    def get(self, memory_id: int) -> Memory | None:
        row = self.db.execute(
            f"SELECT {self._COLS} FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return self._row(row) if row else None

    def get_all(self, user_id: str, *, include_inactive: bool = False) -> list[Memory]:
        where = "" if include_inactive else " AND status = 'active'"
        rows = self.db.execute(
            f"SELECT {self._COLS} FROM memories WHERE user_id = ?{where} ORDER BY id", (user_id,)
        )
        return [self._row(r) for r in rows]

    def search(self, query: str, user_id: str, limit: int = 5) -> list[Memory]:
        """Active memories of ``user_id`` related to ``query``, best first (BM25 over
        trigrams, plus a substring match for the short words of ``short_words``)."""
        terms = search_terms(query)
        found: list[Memory] = []
        if terms:
            match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
            rows = self.db.execute(
                f"SELECT {', '.join('m.' + c for c in self._COLS.split(', '))} "
                "FROM memories_fts f JOIN memories m ON m.id = f.rowid "
                "WHERE memories_fts MATCH ? AND m.user_id = ? AND m.status = 'active' "
                "ORDER BY bm25(memories_fts) LIMIT ?",
                (match, user_id, limit),
            )
            found = [self._row(r) for r in rows]
        for word in short_words(query):
            if len(found) >= limit:
                break
            rows = self.db.execute(
                f"SELECT {self._COLS} FROM memories WHERE user_id = ? AND status = 'active' "
                "AND instr(text, ?) > 0 ORDER BY id LIMIT ?",
                (user_id, word, limit),
            )
            for r in rows:
                mem = self._row(r)
                if mem.id not in {f.id for f in found} and len(found) < limit:
                    found.append(mem)
        return found

    def history(self, memory_id: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, op, before, after, note, created FROM events WHERE memory_id = ? "
            "ORDER BY id",
            (memory_id,),
        )
        return [
            {"event": i, "op": op, "before": b, "after": a, "note": n, "at": t}
            for i, op, b, a, n, t in rows
        ]

    def subjects(self, memory_ids: list[int]) -> dict[int, str]:
        """The stored subject key (``Subject.key``) of each memory id that exists."""
        marks = ", ".join("?" * len(memory_ids))
        rows = self.db.execute(
            f"SELECT id, subject FROM memories WHERE id IN ({marks})", list(memory_ids)
        )
        return {int(i): str(s) for i, s in rows}

    # Write helpers: call inside ``transaction()``.

    def _event(
        self,
        memory_id: int,
        user_id: str,
        op: str,
        before: str | None,
        after: str | None,
        note: str | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO events (memory_id, user_id, op, before, after, note, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (memory_id, user_id, op, before, after, note, time.time()),
        )

    def insert(
        self,
        user_id: str,
        text: str,
        owner: str,
        note: str | None = None,
        subject: str | None = None,
    ) -> int:
        """A new active memory. ``subject`` is its subject key as the writer read it (with
        the conversation's speakers); by default the text is read back without them."""
        now = time.time()
        cur = self.db.execute(
            "INSERT INTO memories (user_id, text, owner, subject, created, updated)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (user_id, text, owner, subject or subject_of(text).key, now, now),
        )
        memory_id = int(cur.lastrowid or 0)
        self._event(memory_id, user_id, "ADD", None, text, note)
        return memory_id

    def update(
        self, memory_id: int, text: str, note: str | None = None, subject: str | None = None
    ) -> None:
        """New text for a memory; its subject is read again (``subject`` as in ``insert``)."""
        old = self.get(memory_id)
        if old is None:
            raise KeyError(memory_id)
        self.db.execute(
            "UPDATE memories SET text = ?, subject = ?, updated = ? WHERE id = ?",
            (text, subject or subject_of(text).key, time.time(), memory_id),
        )
        self._event(memory_id, old.user_id, "UPDATE", old.text, text, note)

    def delete(self, memory_id: int, note: str | None = None) -> None:
        old = self.get(memory_id)
        if old is None:
            raise KeyError(memory_id)
        self.db.execute(
            "UPDATE memories SET status = 'deleted', updated = ? WHERE id = ?",
            (time.time(), memory_id),
        )
        self._event(memory_id, old.user_id, "DELETE", old.text, None, note)

    def supersede(self, memory_id: int, new_id: int, note: str | None = None) -> None:
        old = self.get(memory_id)
        new = self.get(new_id)
        if old is None or new is None:
            raise KeyError(memory_id if old is None else new_id)
        self.db.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = ?, updated = ? "
            "WHERE id = ?",
            (new_id, time.time(), memory_id),
        )
        self._event(memory_id, old.user_id, "SUPERSEDE", old.text, new.text, note)

    # -- L0 profile and L1_RAW ---------------------------------------------------------

    def profile(self, user_id: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT data FROM profiles WHERE user_id = ? ORDER BY version DESC LIMIT 1",
            (user_id,),
        ).fetchone()
        return dict(json.loads(row[0])) if row else {}

    def profile_versions(self, user_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT version, data FROM profiles WHERE user_id = ? ORDER BY version", (user_id,)
        )
        return [{"version": v, **json.loads(d)} for v, d in rows]

    def write_profile(self, user_id: str, data: dict[str, Any]) -> int:
        (version,) = self.db.execute(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM profiles WHERE user_id = ?", (user_id,)
        ).fetchone()
        self.db.execute(
            "INSERT INTO profiles VALUES (?, ?, ?, ?)",
            (user_id, version, json.dumps(data, ensure_ascii=False, sort_keys=True), time.time()),
        )
        return int(version)

    def add_l1_raw(self, user_id: str, text: str, session_id: str | None = None) -> int:
        cur = self.db.execute(
            "INSERT INTO l1_raw (user_id, session_id, text, created) VALUES (?, ?, ?, ?)",
            (user_id, session_id, text, time.time()),
        )
        return int(cur.lastrowid or 0)

    def l1_raw(self, user_id: str, limit: int = 5) -> list[str]:
        """The user's latest L1_RAW texts, oldest first."""
        rows = self.db.execute(
            "SELECT text FROM l1_raw WHERE user_id = ? ORDER BY id DESC LIMIT ?", (user_id, limit)
        ).fetchall()
        return [r[0] for r in reversed(rows)]

    def snapshot(self, user_id: str) -> dict[str, Any]:
        """Everything stored for one user, for reports and crash tests."""
        return {
            "memories": [m.as_dict() for m in self.get_all(user_id, include_inactive=True)],
            "profile": self.profile(user_id),
            "profile_versions": len(self.profile_versions(user_id)),
            "l1_raw": self.l1_raw(user_id, limit=1000),
            "events": self.db.execute(
                "SELECT COUNT(*) FROM events WHERE user_id = ?", (user_id,)
            ).fetchone()[0],
        }

    def close(self) -> None:
        self.db.close()
