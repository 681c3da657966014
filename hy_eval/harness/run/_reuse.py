"""Re-runs that cost next to nothing: finished case records, kept in the answer cache's
SQLite file and reused when nothing that made them has changed.

A case record is reused when the case's line in the dataset (as written), the repeat
index, the run parameters that define results, the prompt files, the model's identity
(provider, model, base URL, answer-changing options), its price, the versions of Python
and the libraries in the manifest, and the code of ``hy_eval`` are all the same as when
it was computed: the record is then what the pipeline would compute again from the
cached answers. The stored line is written back byte for byte, so its
``latency_s`` and per-stage ``cached`` flags are those of the run that computed it; the
run's ``summary.json`` counts reused records under ``calls.records_reused``.

Only ``--cache-mode read-write`` reuses anything. ``refresh`` recomputes and stores,
``replay-only`` recomputes every case (its point is to prove each answer is in the
cassette) and ``off`` neither reads nor writes.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from hy_eval.llm import canonical_json, open_db

_SCHEMA = """
CREATE TABLE IF NOT EXISTS case_records (
    key TEXT PRIMARY KEY,
    line TEXT NOT NULL,
    created REAL NOT NULL
);
"""

#: Records stored per transaction; a killed run loses at most this many (they are a cache).
_BATCH = 64


#: What a record's score can depend on inside the package: its code, and data files such
#: as the strict matcher's word list (``scoring/data/``).
FINGERPRINTED = (".py", ".txt")


@cache
def code_fingerprint() -> str:
    """SHA-256 over every source and data file of the ``hy_eval`` package (path and
    bytes)."""
    return fingerprint_of(Path(__file__).resolve().parents[2])


def fingerprint_of(root: Path) -> str:
    """SHA-256 over the paths and bytes of the files under ``root`` whose suffix is in
    ``FINGERPRINTED``."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in FINGERPRINTED):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def digest(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON, the answer cache's own form."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


class RecordCache:
    """Finished case records in the SQLite file at ``path`` (the answer cache's)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = open_db(self.path, _SCHEMA)
        self._pending: list[tuple[str, str, float]] = []

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

    def close(self) -> None:
        with self._lock:
            self._flush()
            self._db.close()


#: How each ``RunConfig`` field reaches a case record's identity. A field that can change
#: what a record holds is in the identity, directly or through the model's, the judge's or
#: the price's part, or through the record's key (the case's line as run, the repeat);
#: the others are listed with the reason they cannot change a record.
#: tests/harness/run/test_reuse_identity.py fails on a field in none of these.
RECORD_SETTINGS = (
    "system",  # another memory system computes another record (docs/systems.md)
    "variant",
    "guard",
    "temperature",
    "structured",
    "matcher",
    "perturb",
    "perturb_seed",
)
#: Through the model's identity: provider name, model as resolved, base URL and the
#: answer-changing options (the local model's context among them).
THROUGH_MODEL = ("provider", "model", "base_url", "context")
#: Through the judge's identity (its model and prompt files), in a ``--matcher judge`` run.
THROUGH_JUDGE = ("judge_provider", "judge_model", "judge_base_url", "judge_variant")
#: Through the price per million tokens (a record's cost): the price table, and batch
#: prices being half.
THROUGH_PRICE = ("prices", "batch")
#: Through the record's key: the case's dataset line as written (``suite`` names the
#: files it comes from) and the repeat index.
THROUGH_KEY = ("suite", "repeats")
#: Fields that cannot change a record, each with why.
NOT_IN_RECORD = {
    "api_key": "a key authorises calls; it does not change an answer",
    "limit": "chooses which cases run, not what a case's record holds",
    "sample": "chooses which cases run",
    "filter": "chooses which cases run",
    "concurrency": "how many calls at once; answers do not depend on it",
    "cache_mode": "where answers come from; a record is computed from the answers alone",
    "cache_path": "where answers are kept",
    "out": "where the run folder is",
    "resume": "which run folder goes on",
    "reuse": "whether records are reused at all",
    "timeout": "only a provider error depends on it, and such a record is never kept",
    "threads": "not in the answer cache's key either (ModelOptions.threads)",
    "retries": "only a provider error depends on it, and such a record is never kept",
    "retry_base_delay": "only when a retry happens",
    "max_error_rate": "the run's exit code, not a record",
    "progress": "the terminal's status line",
    "pass_k": "how the summary reads repeats, not a record",
    "batch_poll_interval": "how often batches are polled",
    "batch_cancel_on_interrupt": "what Ctrl-C does to remote batches",
    "batch_dir": "where a batch's request and answer files are kept; the answers are the "
    "model's, as from its endpoint (and --batch, which it implies, is in the price)",
    "case_timeout": "only a worker that hangs depends on it, and its case is an error, never kept",
}


def identity_settings(config: Any) -> dict[str, Any]:
    """The ``RECORD_SETTINGS`` of a ``RunConfig``, as the identity takes them."""
    return {name: getattr(config, name) for name in RECORD_SETTINGS}


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
