"""The on-disk form of a run (rule E2): the one module that writes and reads a run folder.

A run is a folder. ``manifest.json`` (a :class:`RunManifest`) says what ran;
``cases.jsonl`` grows one :class:`CaseRecord` per line as each case finishes, so a killed
run keeps what it finished and ``--resume`` does the rest. A torn last line (a write cut
by a kill) is not a record: readers skip it and :func:`repair_records` drops it.

The runner writes through :class:`RecordWriter` and :func:`write_manifest`; report,
compare, gate, bless, the pages and the DataFrame read through :func:`read_run` (or
:func:`read_records` for the records alone). Both models allow fields they do not name,
so a folder written by a newer version still reads; ``schema_version`` in the manifest
says which form the folder's files have. A record's ``score`` is a
:class:`~hy_eval.harness.runlog._score.ScoreRecord`; the folder's other files have their
models beside this module (``_summary``, ``_perturbation``, ``_comparison``).
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hy_eval._files import open_append
from hy_eval._redact import redact
from hy_eval._terminal import neutralise
from hy_eval.harness.runlog._jsonfile import (
    SCHEMA_VERSION,
    Number,
    RunFolderError,
    first_problem,
    replace_text,
    write_json,
)
from hy_eval.harness.runlog._score import ScoreRecord
from hy_eval.harness.runlog._summary import RunSummary, read_summary

MANIFEST_NAME = "manifest.json"
RECORDS_NAME = "cases.jsonl"


#: Packages whose versions a manifest records (they shape prompts, requests, parsing).
PACKAGES = (
    "hy_eval",
    "openai",
    "anthropic",
    "llama_cpp_python",
    "jinja2",
    "pydantic",
    "pandas",
    "numpy",
    "matplotlib",
)


class RunParams(BaseModel):
    """The run's settings as its manifest records them (``RunConfig.params()``: every
    setting but the key and the progress switch). Each is None when the manifest does not
    say (a run from before the setting existed); the run's code reads them by attribute,
    and a resume takes them through ``RunConfig.resumed``. Types are strict: ``true`` is
    no count and ``"5"`` no number, here as on the command line."""

    model_config = ConfigDict(extra="allow", strict=True)

    suite: str | None = Field(default=None, description="Suite name or folder.")
    system: str | None = Field(default=None, description="The memory system under test.")
    provider: str | None = Field(default=None, description="Provider the run asked.")
    model: str | None = Field(default=None, description="Model id the command line named.")
    base_url: str | None = Field(default=None, description="Endpoint, credentials redacted.")
    structured: str | None = Field(default=None, description="openai's structured mode flag.")
    variant: str | None = Field(default=None, description="Prompt variant.")
    limit: int | None = Field(default=None, description="The first N cases only.")
    sample: int | None = Field(default=None, description="N cases spread over the suite.")
    filter: str | None = Field(default=None, description="Case filter, key=value pairs.")
    concurrency: int | None = Field(default=None, description="Calls at once.")
    cache_mode: str | None = Field(default=None, description="The answer cache's mode.")
    cache_path: str | None = Field(default=None, description="The answer cache file.")
    out: str | None = Field(default=None, description="The run folder asked for.")
    resume: str | None = Field(default=None, description="The folder resumed, if one.")
    guard: bool | None = Field(default=None, description="The cross-subject guard (R2) on.")
    reuse: bool | None = Field(default=None, description="Finished records reused.")
    timeout: Number | None = Field(default=None, description="Seconds per call.")
    case_timeout: Number | None = Field(
        default=None, description="Seconds an external system's worker may take per case."
    )
    threads: int | None = Field(default=None, description="The local model's threads.")
    context: int | None = Field(default=None, description="The local model's context.")
    retries: int | None = Field(default=None, description="Retries per call.")
    retry_base_delay: Number | None = Field(default=None, description="First backoff delay.")
    max_error_rate: Number | None = Field(default=None, description="Tolerated error share.")
    prices: str | None = Field(default=None, description="The price table file.")
    repeats: int | None = Field(default=None, description="Runs of each case.")
    temperature: Number | None = Field(default=None, description="Sampling temperature.")
    pass_k: int | None = Field(default=None, description="Repeats a case must pass.")
    perturb: str | None = Field(default=None, description="The perturbation run.")
    perturb_seed: int | None = Field(default=None, description="The perturbation's seed.")
    matcher: str | None = Field(default=None, description="How facts were paired.")
    judge_provider: str | None = Field(default=None, description="The judge's provider.")
    judge_model: str | None = Field(default=None, description="The judge's model.")
    judge_base_url: str | None = Field(default=None, description="The judge's endpoint.")
    judge_variant: str | None = Field(default=None, description="The judge's prompt variant.")
    batch: bool | None = Field(default=None, description="Answers fetched in batches.")
    batch_poll_interval: Number | None = Field(
        default=None, description="Seconds between two polls of the batches."
    )
    batch_cancel_on_interrupt: bool | None = Field(
        default=None, description="Batches cancelled on Ctrl-C."
    )
    batch_dir: str | None = Field(
        default=None, description="The folder the batch files were written to and read from."
    )

    def saved(self) -> dict[str, Any]:
        """The settings the manifest holds, as written (none it does not name)."""
        return self.model_dump(mode="json", exclude_unset=True)


class RunManifest(BaseModel):
    """``manifest.json``: what a run ran, with what, and when."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = Field(default=SCHEMA_VERSION, description="Form of the folder's files.")
    suite: str = Field(description="Suite name (the folder name under datasets/).")
    dataset_files: list[str] = Field(default_factory=list, description="The suite's files.")
    dataset_hash: str = Field(
        default="", description="SHA-256 over the suite's file names and bytes."
    )
    prompt_hashes: dict[str, str] = Field(
        default_factory=dict, description="SHA-256 of each prompt file the variant uses."
    )
    provider: str = Field(description="Provider name (local, openai, anthropic, ...).")
    model: str = Field(description="Model name as the provider reports it.")
    base_url: str | None = Field(default=None, description="Endpoint, credentials redacted.")
    machine: dict[str, Any] | None = Field(
        default=None,
        description="The embedded model's run only: llama.cpp's system info (CPU features, "
        "kernels), the CPU, the threads per model process and the processes "
        "(llm/cache/_machine.py): answers repeat on a machine where these are equal.",
    )
    structured_output: dict[str, Any] | None = Field(
        default=None,
        description="The openai provider's structured-output mode and how it was chosen.",
    )
    params: RunParams = Field(
        default_factory=RunParams, description="The run's settings (RunConfig.params(), no key)."
    )
    git: dict[str, Any] = Field(
        default_factory=dict, description="Commit and dirty flag of the code that ran."
    )
    packages: dict[str, str | None] = Field(
        default_factory=dict, description="Versions of Python and the libraries."
    )
    started: str | None = Field(default=None, description="UTC start time, ISO 8601.")
    resumed: list[str] = Field(default_factory=list, description="UTC time of each resume.")
    finished: str | None = Field(default=None, description="UTC end time; None while running.")

    @property
    def label(self) -> str:
        """``provider:model/variant``, as comparisons name a run; ``system@`` before it for
        an external memory system."""
        system = self.params.system
        where = "" if system in (None, "hy_eval") else f"{system}@"
        return f"{where}{self.provider}:{self.model}/{self.params.variant}"

    @property
    def matcher(self) -> str:
        """The matcher that paired facts; ``keyword`` for a run from before matchers were
        selectable."""
        return self.params.matcher or "keyword"


class CaseRecord(BaseModel):
    """One line of ``cases.jsonl``: one case (and repeat) as run, with its score.

    A case that failed with a provider or internal error has ``status="error"`` and
    none of the fields from ``rendered`` to ``cost_usd``; those are left out of its line.
    """

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="Case id.")
    repeat: int = Field(default=0, description="Repeat index (0 without --repeats).")
    lang: str = Field(default="", description="Case language (en, zh).")
    rules: list[str] = Field(default_factory=list, description="Spec rule ids the case tests.")
    tags: list[str] = Field(default_factory=list, description="Case tags.")
    input: dict[str, Any] = Field(
        default_factory=dict,
        description="messages, system, history, existing (and aliases) as in the dataset.",
    )
    expect: dict[str, Any] = Field(default_factory=dict, description="The case's gold.")
    status: str = Field(default="ok", description="ok, or error (provider or internal error).")
    error: str | None = Field(default=None, description="The error of an error case.")
    rendered: str | None = Field(
        default=None, description="The conversation as the prompt shows it."
    )
    stages: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="extract (and reconcile): template, prompt, raw answer, tokens, timing.",
    )
    facts: list[dict[str, Any]] = Field(default_factory=list, description="Extracted facts.")
    basic_info: dict[str, Any] | None = Field(default=None, description="Extracted profile fields.")
    profile_issues: list[Any] = Field(default_factory=list, description="Profile problems.")
    operations: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict, description="Reconcile operations: raw and applied."
    )
    guard_events: list[dict[str, Any]] = Field(
        default_factory=list, description="Operations the guard changed (R2)."
    )
    guard_undecided: int = Field(
        default=0, description="Guard events where a subject could not be told (R2)."
    )
    fallback: str | None = Field(default=None, description="Why the R3 fallback ran, if it did.")
    store_after: dict[str, Any] | None = Field(default=None, description="The user's store after.")
    existing_ids: dict[str, int] = Field(
        default_factory=dict, description="Case memory id (m1) -> database id."
    )
    warnings: list[Any] = Field(default_factory=list, description="Pipeline warnings.")
    truncated: dict[str, int] = Field(
        default_factory=dict, description="What was cut to the schemas' limits, by kind."
    )
    round_trips: int | None = Field(default=None, description="Model calls the add made.")
    tokens: dict[str, int] = Field(
        default_factory=dict, description="input and output tokens of the case."
    )
    cost_usd: float | int | None = Field(
        default=None, description="Cost by the price table; None: unknown."
    )
    latency_s: float | None = Field(default=None, description="Seconds the add and scoring took.")
    score: ScoreRecord = Field(
        default_factory=ScoreRecord,
        description="The case's score: counts (metric -> [num, den]), passed, facts, checks.",
    )

    @property
    def key(self) -> str:
        """The record's identity: the case id and the repeat index."""
        return record_key(self.id, self.repeat)

    @property
    def passed(self) -> bool:
        return self.score.passed

    def counts(self) -> dict[str, tuple[float, float]]:
        """Metric -> (numerator, denominator) of this record."""
        return {m: (float(n), float(d)) for m, (n, d) in self.score.counts.items()}

    def to_line(self) -> str:
        """The record as one redacted JSON line: only the fields that were set, in the
        order of the model (an error record has no pipeline fields)."""
        # The field values as they are: model_dump would copy every nested container.
        data = {k: getattr(self, k) for k in type(self).model_fields if k in self.model_fields_set}
        if "score" in data:
            data["score"] = self.score.to_data()
        data.update(self.model_extra or {})
        return redact(json.dumps(data, ensure_ascii=False)) + "\n"


def record_key(case_id: str, repeat: int) -> str:
    """A record's identity: the case id, and the repeat index."""
    return f"{case_id}#{repeat}"


def _complete_lines(path: Path) -> Iterator[str]:
    """Each complete line of ``path``; a torn last line (a killed run) ends the file."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                return  # torn write: the case will be redone
            yield line


def read_records(path: Path) -> Iterator[CaseRecord]:
    """The complete records of a ``cases.jsonl``, in file order. A line that is no case
    record is ``RunFolderError``: one line naming the file, the line and the field, never
    the value (which can be any length, and any text)."""
    for number, line in enumerate(_complete_lines(path), start=1):
        try:
            yield CaseRecord.model_validate_json(line)
        except ValidationError as exc:
            where, problem = first_problem(exc)
            where = neutralise(where, keep="")
            raise RunFolderError(
                f"{path}:{number}: not a case record: {where}: {problem}"
            ) from None


def repair_records(path: Path) -> set[str]:
    """Drop a torn last line, unreadable lines and duplicate records; return the keys of
    the finished ones. The file is rewritten only when something was dropped."""
    if not path.exists():
        return set()
    seen: set[str] = set()
    keep: list[str] = []
    total = 0
    for line in _complete_lines(path):
        total += 1
        try:
            data = json.loads(line)
            key = record_key(data["id"], data.get("repeat", 0))
        except (ValueError, KeyError, TypeError):
            continue
        if key not in seen:
            seen.add(key)
            keep.append(line)
    if len(keep) != total or path.stat().st_size != sum(len(x.encode()) for x in keep):
        replace_text(path, "".join(keep))
    return seen


class RecordWriter:
    """Appends finished records to ``cases.jsonl``, each line flushed as it is written.
    The file is never followed if it is a symbolic link: ``LinkRefused`` (one line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: TextIO = open_append(path)

    def write_line(self, line: str) -> None:
        """Append one record line as it is (a line reused from the cache, byte for byte)."""
        self._fh.write(line)
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def write_manifest(run_dir: Path, manifest: RunManifest) -> None:
    data = manifest.model_dump(mode="json")
    data["params"] = manifest.params.saved()  # as written: no setting it does not name
    write_json(run_dir / MANIFEST_NAME, data)


def read_manifest(run_dir: Path) -> RunManifest:
    """The manifest of ``run_dir``; ``RunFolderError`` with a one-line reason if there is
    none or it is not a manifest."""
    path = run_dir / MANIFEST_NAME
    if not path.is_file():
        raise RunFolderError(f"{run_dir}: not a run folder (no {MANIFEST_NAME})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:
        raise RunFolderError(f"{path}: not a readable manifest ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
        raise RunFolderError(f"{path}: not a run manifest (no 'params' object)")
    try:
        return RunManifest.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise RunFolderError(f"{path}: not a run manifest ({where})") from None


@dataclass(frozen=True)
class RunLog:
    """A run folder as read: its manifest, and its records read on demand."""

    folder: Path
    manifest: RunManifest

    @property
    def records_path(self) -> Path:
        return self.folder / RECORDS_NAME

    def records(self) -> Iterator[CaseRecord]:
        """The finished records, in the order they finished."""
        return read_records(self.records_path)

    def summary(self) -> RunSummary | None:
        """The folder's ``summary.json``, None when the run did not write one;
        ``RunFolderError`` when it is not a summary."""
        return read_summary(self.folder)


def read_run(run_dir: str | Path) -> RunLog:
    """The run in ``run_dir``; ``RunFolderError`` when it holds none."""
    folder = Path(run_dir)
    return RunLog(folder, read_manifest(folder))


# -- provenance recorded in the manifest ------------------------------------------------


def git_state() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": dirty if commit else None}


def package_versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
