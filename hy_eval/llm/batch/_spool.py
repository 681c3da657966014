"""A round's requests on disk, so that a batch run's memory does not grow with
the number of cases: the collecting pass writes each request's cache key and the
canonical JSON of its key fields, and the fields again in their own order; the engine
reads them back one at a time, the request rebuilt from the fields in their own order
(they hold everything that is sent), so that a batch line's body is byte for byte what
the provider sends for the same call (the canonical JSON sorts every object's keys)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path

from hy_eval._files import private_db_file
from hy_eval.llm.batch._vendors import BatchItem
from hy_eval.llm.core import Request

SPOOL_NAME = "batch_requests.sqlite"


def request_of(fields: Mapping[str, object]) -> Request:
    """The request whose key fields are ``fields`` (``_cache.key_fields`` read back)."""
    f: dict[str, object] = dict(fields)
    return Request.of(
        f["messages"],  # type: ignore[arg-type]
        temperature=f["temperature"],
        max_tokens=f["max_tokens"],
        seed=f["seed"],
        json_schema=f["json_schema"],
        schema_name=f["schema_name"],
        extra_body=f["extra_body"],
        repeat=f["repeat"],
    )


class RequestSpool(Mapping[str, BatchItem]):
    """Cache key -> :class:`BatchItem`, kept in a scratch SQLite file."""

    def __init__(self, path: Path, *, fresh: bool = True) -> None:
        """``fresh``: a scratch spool, emptied (a file a killed run left, of any form, is
        rebuilt); else a kept one (serve's misses, ``_serve.py``), written at once
        and usable from the thread of serve's event loop."""
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        private_db_file(path, follow=False)  # in a run folder: a link there is refused
        self._db = sqlite3.connect(path, check_same_thread=fresh)
        if fresh:
            self._db.execute("PRAGMA synchronous = OFF")
        with self._db:
            if fresh:
                self._db.execute("DROP TABLE IF EXISTS requests")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS requests "
                "(key TEXT PRIMARY KEY, canonical TEXT, ordered TEXT)"
            )

    def reset(self) -> None:
        """Empty it for the next round."""
        with self._db:
            self._db.execute("DELETE FROM requests")

    def add(self, key: str, canonical: str, fields: Mapping[str, object] | None = None) -> None:
        """Keep a request: its key, canonical JSON and (for its order) its ``fields``."""
        ordered = json.dumps(fields, ensure_ascii=False) if fields is not None else canonical
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO requests VALUES (?, ?, ?)", (key, canonical, ordered)
            )

    def __getitem__(self, key: str) -> BatchItem:
        row = self._db.execute(
            "SELECT canonical, ordered FROM requests WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            raise KeyError(key)
        fields = json.loads(row[1])
        return BatchItem(key, fields, row[0], request_of(fields))

    def __iter__(self) -> Iterator[str]:
        # The keys alone are read at once (64 characters each); the rest one at a time.
        keys = [k for (k,) in self._db.execute("SELECT key FROM requests ORDER BY rowid")]
        return iter(keys)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM requests").fetchone()[0])

    def close(self, remove: bool = True) -> None:
        self._db.close()
        if remove:
            self.path.unlink(missing_ok=True)
