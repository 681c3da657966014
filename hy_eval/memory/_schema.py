"""The memory store's schema: numbered migrations, append only, each recorded in
``schema_migrations`` by ``MemoryStore`` when it runs (``_store.py``). Tables: memories,
events, profiles, l1_raw (migration 1), the FTS5 trigram index kept in step by triggers
(2), and each memory's subject read back from its text (3)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from hy_eval.memory._subjects import subject_of

_M1 = [
    """CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        text TEXT NOT NULL,
        owner TEXT NOT NULL CHECK (owner IN ('user', 'agent')),
        status TEXT NOT NULL DEFAULT 'active'
            CHECK (status IN ('active', 'superseded', 'deleted')),
        superseded_by INTEGER REFERENCES memories(id),
        created REAL NOT NULL,
        updated REAL NOT NULL
    )""",
    "CREATE INDEX memories_user ON memories(user_id, status)",
    """CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        memory_id INTEGER NOT NULL REFERENCES memories(id),
        user_id TEXT NOT NULL,
        op TEXT NOT NULL,
        before TEXT,
        after TEXT,
        note TEXT,
        created REAL NOT NULL
    )""",
    "CREATE INDEX events_memory ON events(memory_id)",
    """CREATE TABLE profiles (
        user_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        data TEXT NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (user_id, version)
    )""",
    """CREATE TABLE l1_raw (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        session_id TEXT,
        text TEXT NOT NULL,
        created REAL NOT NULL
    )""",
    "CREATE INDEX l1_raw_user ON l1_raw(user_id, id)",
]

_M2 = [
    """CREATE VIRTUAL TABLE memories_fts USING fts5(
        text, content='memories', content_rowid='id', tokenize='trigram'
    )""",
    """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
    """CREATE TRIGGER memories_au AFTER UPDATE OF text ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
    END""",
]


def _backfill_subjects(db: sqlite3.Connection) -> None:
    """Existing rows get the subject read back from their text (A5, R2). No speakers are
    known here, so names read as ``other``; the guard matches them against the speakers of
    the conversation it guards (``_reconcile.target_subject``)."""
    rows = db.execute("SELECT id, text FROM memories").fetchall()
    db.executemany(
        "UPDATE memories SET subject = ? WHERE id = ?",
        [(subject_of(text).key, memory_id) for memory_id, text in rows],
    )


#: Each memory's subject as read back when it was written (A5, R2). A column
#: of the store for the guard, not a field of ``Memory`` nor a search filter: the design
#: note keeps the subject in the fact's text.
_M3: list[str | Callable[[sqlite3.Connection], None]] = [
    "ALTER TABLE memories ADD COLUMN subject TEXT NOT NULL DEFAULT 'unknown'",
    _backfill_subjects,
]


#: Numbered migrations; append only. Each runs once and is recorded.
#: Each is a list of steps run one by one inside the migration's transaction
#: (``executescript`` would commit half-way): SQL statements, or functions of the
#: connection for what SQL cannot do (reading text back with ``subject_of``).
MIGRATIONS: list[tuple[int, str, list[str | Callable[[sqlite3.Connection], None]]]] = [
    (1, "memories, events, profiles, l1_raw", list(_M1)),
    (2, "full-text search (FTS5 trigram)", list(_M2)),
    (3, "memories.subject, backfilled by reading each text back", _M3),
]
