"""The batch engine: requests sent through a vendor's batch endpoints, their
answers written to the answer cache under the key a normal call of the same request
uses, so that the normal call that follows is a cache hit.

A round takes the requests a run still needs (as :class:`BatchItem`, keyed like the
cache), splits them at the vendor's limits (OpenAI 50,000 requests or 200 MB per file,
Anthropic 100,000 requests or 256 MB per batch), submits each part, and polls every
batch not yet collected until it ends; then reads its answers (in whatever order they
come) into the cache. Each batch id is written to the run folder's ``batches.json``
(replaced atomically) as soon as the vendor gives it, so a run killed at any point
resumes by polling the kept batches: a request in a kept batch is never submitted again.
Requests that failed, expired or were cancelled are reported and left uncached: the
normal run asks them interactively.

An offline vendor (a folder, ``_folder.py``) is not waited for: a round whose
batches have no answers yet raises :class:`BatchesWaiting` (the process ends and a later
one collects them), and a request whose answer failed is put in the next round's batch
again, up to the client's retry limit, since no interactive call can follow.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from hy_eval._files import replace_file
from hy_eval.llm.batch._vendors import (
    BatchItem,
    RemoteState,
    Vendor,
    batch_id_problem,
    same_model,
    vendor_for,
)
from hy_eval.llm.core import ConfigError, ProviderError, short_text
from hy_eval.llm.providers import LLMClient, finished_completion

STATE_NAME = "batches.json"
#: Reasons of failed requests kept in a round's report (the counts are whole).
FAILURES_SHOWN = 20

T = TypeVar("T")


@dataclass
class KeptBatch:
    """A submitted batch as ``batches.json`` keeps it."""

    id: str
    vendor: str
    model: str
    round: int
    #: The cache keys (custom ids) of its requests.
    keys: list[str]
    #: ``submitted`` until its answers are read, then ``collected``.
    status: str = "submitted"
    #: Requests per outcome once collected (succeeded, failed, expired, canceled).
    outcome: dict[str, int] = field(default_factory=dict)


class BatchesWaiting(Exception):
    """An offline vendor's batches have no answers yet: ``requests`` wait in ``files``."""

    def __init__(self, requests: int, files: list[str]) -> None:
        super().__init__(f"{requests} requests wait")
        self.requests = requests
        self.files = files


class BatchStateError(ConfigError):
    """``batches.json`` is not what this program writes: one line naming it."""


#: The type of each field of a kept batch, as ``batches.json`` holds it.
_KEPT_TYPES: dict[str, type] = {
    "id": str,
    "vendor": str,
    "model": str,
    "round": int,
    "keys": list,
    "status": str,
    "outcome": dict,
}
#: Each batch's ``keys`` are cache keys: hex digests.
_KEY_RE = re.compile(r"[0-9a-f]{16,128}")


def kept_batch(entry: Any, where: str) -> KeptBatch:
    """The kept batch in one entry of ``batches.json``; ``BatchStateError`` if it is not
    one (unknown or missing fields, wrong types, an id that is no batch id)."""
    if not isinstance(entry, dict) or set(entry) != set(_KEPT_TYPES):
        raise BatchStateError(f"{where}: not a kept batch (fields {sorted(_KEPT_TYPES)})")
    for name, kind in _KEPT_TYPES.items():
        value = entry[name]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BatchStateError(f"{where}: {name} is not a {kind.__name__}")
    problem = batch_id_problem(entry["id"])
    if problem:
        raise BatchStateError(f"{where}: {problem}")
    if not all(isinstance(k, str) and _KEY_RE.fullmatch(k) for k in entry["keys"]):
        raise BatchStateError(f"{where}: keys are not cache keys")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in entry["outcome"].values()):
        raise BatchStateError(f"{where}: outcome counts are not whole numbers")
    return KeptBatch(**entry)


class BatchState:
    """The batches of one run folder, in ``batches.json``. A file this program did not
    write (garbage, an extra key, a batch id like ``../files/x``) is refused with one line
    (``BatchStateError``): its ids would go into the vendor's URLs with the key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches: list[KeptBatch] = []
        if path.exists():
            self.batches = self._read(path)

    @staticmethod
    def _read(path: Path) -> list[KeptBatch]:
        fix = "delete it to submit the batches again"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise BatchStateError(f"{path}: not readable as JSON ({exc}); {fix}") from None
        if not isinstance(data, dict) or set(data) != {"version", "batches"}:
            raise BatchStateError(f"{path}: not a batch list (version, batches); {fix}")
        if data["version"] != 1 or not isinstance(data["batches"], list):
            raise BatchStateError(f"{path}: not a version 1 batch list; {fix}")
        return [kept_batch(entry, f"{path}: batch {i}") for i, entry in enumerate(data["batches"])]

    def known_keys(self) -> set[str]:
        """Keys of every request ever submitted from this folder."""
        return {k for b in self.batches for k in b.keys}

    def attempts(self) -> Counter[str]:
        """How many batches each key was submitted in."""
        return Counter(k for b in self.batches for k in b.keys)

    def totals(self) -> dict[str, int]:
        """Batches and requests of the folder, and the collected requests per outcome."""
        out: Counter[str] = Counter()
        for b in self.batches:
            out.update(b.outcome)
        return {
            "batches": len(self.batches),
            "requests": sum(len(b.keys) for b in self.batches),
            **{k: out[k] for k in ("succeeded", "failed", "expired", "canceled")},
        }

    def pending(self) -> list[KeptBatch]:
        return [b for b in self.batches if b.status != "collected"]

    def add(self, batch: KeptBatch) -> None:
        self.batches.append(batch)
        self.save()

    def save(self) -> None:
        """Write the file whole and swap it in, so a kill never leaves half of it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"version": 1, "batches": [asdict(b) for b in self.batches]}
        replace_file(self.path, json.dumps(data, ensure_ascii=False), sync=True)


@dataclass
class RoundReport:
    """What one round did: requests submitted now, and the outcomes of the batches it
    collected (with the reasons of the first failures)."""

    submitted: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    #: Output lines that were no answer to a request of their batch (unreadable, an
    #: unknown custom id, a second answer to one request): (custom id, why).
    ignored: list[tuple[str, str]] = field(default_factory=list)
    ignored_count: int = 0

    def line(self) -> str:
        o = self.outcomes
        return (
            f"{self.submitted} submitted; {o['succeeded']} answered, {o['failed']} failed, "
            f"{o['expired']} expired, {o['canceled']} cancelled"
            + (f"; {self.ignored_count} output lines ignored" if self.ignored_count else "")
        )


def split_items(
    items: Iterable[BatchItem],
    line: Callable[[BatchItem], bytes],
    max_requests: int,
    max_bytes: int,
) -> Iterator[tuple[list[str], list[bytes]]]:
    """The items in parts of at most ``max_requests`` lines and ``max_bytes`` bytes, as
    (keys, lines). A line over ``max_bytes`` alone goes in a part of its own (the vendor
    refuses it; that batch's error names it)."""
    keys: list[str] = []
    lines: list[bytes] = []
    size = 0
    for item in items:
        data = line(item)
        if lines and (len(lines) >= max_requests or size + len(data) > max_bytes):
            yield keys, lines
            keys, lines, size = [], [], 0
        keys.append(item.key)
        lines.append(data)
        size += len(data)
    if lines:
        yield keys, lines


class BatchEngine:
    """Submits, polls and collects the batches of one run folder for one client."""

    def __init__(
        self,
        llm: LLMClient,
        state: BatchState,
        *,
        poll_interval: float = 30.0,
        say: Callable[[str], None] | None = None,
        vendor: Vendor | None = None,
    ) -> None:
        if llm.cache is None:
            raise ConfigError("--batch needs the answer cache (a cache mode other than off)")
        self.llm = llm
        self.state = state
        self.poll_interval = poll_interval
        self.say = say or (lambda _line: None)
        self.vendor = vendor or vendor_for(llm.provider)
        self._rng = random.Random(0)

    async def run_round(self, items: Mapping[str, BatchItem], round_no: int) -> RoundReport:
        """Submit the items no kept batch holds, then wait for every batch not yet
        collected (this round's and any a killed run left) and read their answers."""
        report = RoundReport()
        known = self.settled_keys()
        new = (item for key, item in items.items() if key not in known)  # one at a time
        v = self.vendor
        for keys, lines in split_items(new, v.line, v.max_requests, v.max_bytes):
            batch_id = await self._retrying(partial(v.submit, lines))
            model = self.llm.provider.model
            self.state.add(KeptBatch(batch_id, v.name, model, round_no, keys))
            report.submitted += len(keys)
            n = len(keys)
            self.say(
                f"round {round_no}: submitted {v.name} batch {batch_id} "
                f"({n} request{'' if n == 1 else 's'})"
            )
        await self._wait(items, report, round_no)
        return report

    @property
    def offline(self) -> bool:
        return bool(getattr(self.vendor, "offline", False))

    @property
    def max_attempts(self) -> int:
        """Batches one request may go in with an offline vendor: the client's retries + 1."""
        return self.llm.retry.max_retries + 1

    def settled_keys(self) -> set[str]:
        """Keys a round does not submit again: every key a batch held; with an offline
        vendor only those of batches not yet collected and those whose attempts are spent
        (an answered key is in the cache, so no round asks for it)."""
        if not self.offline:
            return self.state.known_keys()
        pending = {k for b in self.state.pending() for k in b.keys}
        spent = {k for k, n in self.state.attempts().items() if n >= self.max_attempts}
        return pending | spent

    async def collect_ended(
        self, items: Mapping[str, BatchItem], report: RoundReport
    ) -> dict[str, RemoteState]:
        """Look at every batch not yet collected once and read the answers of those that
        ended; each one's state."""
        states: dict[str, RemoteState] = {}
        for kept in self.state.pending():
            st = await self._retrying(partial(self.vendor.state, kept.id))
            states[kept.id] = st
            if st.ended:
                await self._collect(kept, items, report)
        return states

    async def _wait(
        self, items: Mapping[str, BatchItem], report: RoundReport, round_no: int
    ) -> None:
        started = time.monotonic()
        while True:
            states = await self.collect_ended(items, report)
            if states and not self.offline:
                self.say(progress_line(round_no, states, time.monotonic() - started))
            pending = self.state.pending()
            if not pending:
                return
            if self.offline:
                files = getattr(self.vendor, "requests_path", None)
                names = [str(files(b.id)) if files else b.id for b in pending]
                raise BatchesWaiting(sum(len(b.keys) for b in pending), names)
            await asyncio.sleep(self.poll_interval)

    async def _collect(
        self, kept: KeptBatch, items: Mapping[str, BatchItem], report: RoundReport
    ) -> None:
        """Read an ended batch's answers into the cache (any order, each key once)."""
        cache = self.llm.cache
        assert cache is not None
        wanted = set(kept.keys)
        counts: Counter[str] = Counter()

        def failed(key: str, outcome: str, reason: str) -> None:
            counts[outcome] += 1
            if len(report.failures) < FAILURES_SHOWN:
                # The vendor's words: one line, secrets out (an error may echo the key).
                report.failures.append((key, outcome, short_text(reason)))

        asked = self.llm.provider.model
        check = getattr(self.vendor, "answer_problem", None)
        seen: set[str] = set()
        async for result in self.vendor.results(kept.id):
            if result.key not in wanted:
                # Not one of this batch's requests, or given twice, or unreadable: no
                # answer to anything, said in one line (a vendor's own files never hold one).
                if result.key in seen:
                    why = "a second answer to one request (the first counts)"
                else:
                    why = result.reason or "no request of this batch"
                report.ignored_count += 1
                if len(report.ignored) < FAILURES_SHOWN:
                    report.ignored.append((result.key, short_text(why)))
                continue
            wanted.discard(result.key)
            seen.add(result.key)
            item = items.get(result.key)
            problem = None
            if item is not None and result.completion is not None and check is not None:
                problem = check(item.request, result.completion)
            if result.outcome != "succeeded" or result.completion is None:
                failed(result.key, result.outcome, result.reason)
            elif problem is not None:
                failed(result.key, "failed", problem)
            elif item is None and cache.get(result.key) is not None:
                # Read into the cache by a run killed before it marked this batch
                # collected: answered already.
                counts["succeeded"] += 1
            elif item is None:
                # A request this run no longer makes (its suite or prompts changed).
                failed(result.key, "failed", "not a request of this run")
            elif not same_model(result.completion.model_id, asked):
                # Cached, it would be taken for this model's answer by every later run.
                model = result.completion.model_id
                failed(result.key, "failed", f"answered by model {model}, not {asked}")
            else:
                completion = finished_completion(item.request, result.completion)
                cache.put(item.key, item.fields, completion, item.canonical)
                counts["succeeded"] += 1
        for key in wanted:
            failed(key, "failed", "no result in the batch's output")
        kept.status, kept.outcome = "collected", dict(counts)
        self.state.save()
        report.outcomes.update(counts)

    async def cancel_pending(self) -> list[str]:
        """Ask the vendor to cancel every batch not yet collected; their ids. A resume
        still collects what they finished before the cancel."""
        ids = []
        for kept in self.state.pending():
            await self._retrying(partial(self.vendor.cancel, kept.id))
            ids.append(kept.id)
        return ids

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, tried again on the errors a retry can cure (the client's policy)."""
        attempt = 0
        while True:
            try:
                return await call()
            except ProviderError as exc:
                if not exc.retryable or attempt >= self.llm.retry.max_retries:
                    raise
                attempt += 1
                await asyncio.sleep(self.llm.retry.delay(attempt, exc.retry_after, self._rng))


def progress_line(round_no: int, states: dict[str, RemoteState], elapsed: float) -> str:
    """One line on the batches being waited for: requests done, failed and expired of
    all, the time waited, and each batch's state in the vendor's words."""
    total = sum(s.total for s in states.values())
    done = sum(s.succeeded for s in states.values())
    failed = sum(s.failed for s in states.values())
    expired = sum(s.expired for s in states.values())
    shown = ", ".join(f"{bid} {s.state}" for bid, s in list(states.items())[:3])
    more = f" and {len(states) - 3} more" if len(states) > 3 else ""
    return (
        f"round {round_no}: {done}/{total} done, {failed} failed, {expired} expired, "
        f"{elapsed:.0f} s; {shown}{more}"
    )
