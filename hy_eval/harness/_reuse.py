"""Re-runs that cost next to nothing: finished case records and finished reports, kept in
the answer cache's SQLite file and reused when nothing that made them has changed.

A case record is reused when the case's line in the dataset (as written), the repeat
index, the run parameters that define results, the prompt files, the model's identity
(provider, model, base URL, answer-changing options), its price, the versions of Python
and the libraries in the manifest, and the code of ``hy_eval`` are all the same as when
it was computed: the record is then what the pipeline would compute again from the
cached answers. The stored line is written back byte for byte, so its
``latency_s`` and per-stage ``cached`` flags are those of the run that computed it; the
run's ``summary.json`` counts reused records under ``calls.records_reused``.

A report (metrics with their bootstrap CIs, breakdowns, confusion, plots, the HTML
drill-down) is reused when the multiset of ``cases.jsonl`` lines is the same, whatever
their order, along with the selected cases, ``--pass-k``, the library versions and the
code.

Only ``--cache-mode read-write`` reuses anything. ``refresh`` recomputes and stores,
``replay-only`` recomputes every case (its point is to prove each answer is in the
cassette) and ``off`` neither reads nor writes.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from hy_eval._redact import redact
from hy_eval.llm import canonical_json, open_db

_SCHEMA = """
CREATE TABLE IF NOT EXISTS case_records (
    key TEXT PRIMARY KEY,
    line TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS report_memo (
    key TEXT PRIMARY KEY,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
"""

#: Records stored per transaction; a killed run loses at most this many (they are a cache).
_BATCH = 64


@cache
def code_fingerprint() -> str:
    """SHA-256 over every source file of the ``hy_eval`` package (path and bytes)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def digest(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON, the answer cache's own form."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def lines_digest(path: Path) -> str:
    """An order-independent digest of a file's complete lines: the sum of their SHA-256
    values modulo 2**256, so the same records finished in another order match."""
    total = 0
    count = 0
    if path.exists():
        with path.open("rb") as fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                total = (total + int.from_bytes(hashlib.sha256(line).digest(), "big")) % (1 << 256)
                count += 1
    return f"{count}:{total:064x}"


class ResultCache:
    """Case records and report memos in the SQLite file at ``path`` (the answer cache's)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = open_db(self.path, _SCHEMA)
        self._pending: list[tuple[str, str, float]] = []

    # -- case records ----------------------------------------------------------------

    def get_record(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT line FROM case_records WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def put_record(self, key: str, line: str) -> None:
        with self._lock:
            self._pending.append((key, line, time.time()))
            if len(self._pending) >= _BATCH:
                self._flush()

    def _flush(self) -> None:
        if self._pending:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO case_records (key, line, created) VALUES (?, ?, ?)",
                    self._pending,
                )
            self._pending.clear()

    # -- reports ---------------------------------------------------------------------

    def get_report(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT payload FROM report_memo WHERE key = ?", (key,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def put_report(self, key: str, payload: Mapping[str, Any]) -> None:
        text = redact(json.dumps(payload, ensure_ascii=False))
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO report_memo (key, payload, created) VALUES (?, ?, ?)",
                (key, text, time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._flush()
            self._db.close()


def record_identity(
    params: Mapping[str, Any],
    prompt_hashes: Mapping[str, str],
    llm_identity: Mapping[str, Any],
    price: Any,
    packages: Mapping[str, Any],
) -> str:
    """What every record of a run shares: a case's key adds the case and the repeat.
    ``packages`` are the versions of Python and the libraries that shape prompts, requests
    and parsing (the manifest's): an upgrade recomputes every record."""
    return digest(
        {
            "params": dict(params),
            "prompts": dict(prompt_hashes),
            "llm": dict(llm_identity),
            "price": price,
            "packages": dict(packages),
            "code": code_fingerprint(),
        }
    )


def case_record_key(identity: str, case_line: str, repeat: int) -> str:
    """A finished record's key: the run's identity, the repeat, the case's dataset line."""
    return hashlib.sha256(f"{identity}\0{repeat}\0{case_line}".encode()).hexdigest()


def report_key(
    records: Path,
    wanted: Iterable[str] | None,
    pass_k: int | None,
    packages: Mapping[str, Any] | None = None,
) -> str:
    return digest(
        {
            "packages": dict(packages or {}),
            "lines": lines_digest(records),
            "wanted": None
            if wanted is None
            else hashlib.sha256("\0".join(sorted(wanted)).encode()).hexdigest(),
            "pass_k": pass_k,
            "code": code_fingerprint(),
        }
    )
