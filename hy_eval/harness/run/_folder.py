"""Rules that keep a run folder whole and a resume honest (E2).

- A folder is written by one run at a time: an OS lock (``fcntl.flock``) on
  ``DIR/.lock``, held while the run writes. The kernel drops it when the process dies,
  so a killed run leaves no stale lock.
- ``--resume DIR`` takes every endpoint and credential-bearing setting from the command
  line, the pipeline's and the judge's alike, and never from ``DIR/manifest.json`` (a
  copied folder could name any server, and the key would go there): a manifest naming
  another provider, model or endpoint is refused. The same holds for the answer cache
  file, so a resume cannot write answers where the later runs will not look. The original
  run's settings (which cases, cache mode, concurrency, timeouts) are kept unless the
  command line sets them to something other than their default.
- Settings are checked before anything is made: a count below one, a negative time or a
  rate outside 0..1 is a one-line error, and a run folder never lies in a dataset folder.

The checks return a one-line problem (or ``None``) for the runner to raise as its error.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from hy_eval._redact import redact
from hy_eval.harness.run._config import RunConfig
from hy_eval.harness.runlog import RunManifest
from hy_eval.llm import DEFAULT_CACHE_PATH

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: runs are not locked there
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"


class FolderLock:
    """An exclusive lock on a run folder, held until :meth:`release` or process exit."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def lock_folder(run_dir: Path) -> tuple[FolderLock | None, str | None]:
    """Lock ``run_dir`` (which must exist) for this process, or say why not: another
    process holds it, or the lock file cannot be opened (it is never followed if it is a
    symbolic link, as a copied folder could hold one)."""
    path = run_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        return None, f"{path}: cannot open the run folder's lock file ({exc.strerror})"
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None, f"{run_dir}: another run is writing this folder; wait for it to end"
    return FolderLock(fd), None


def model_mismatch(
    run_dir: Path, manifest: RunManifest, name: str, model: str, url: str
) -> str | None:
    """Why the command line's model is not the one ``manifest`` ran, or ``None``."""
    want = (manifest.provider, manifest.model, redact(str(manifest.base_url or "")))
    have = (name, model, redact(url or ""))
    if want == have:
        return None

    def show(p: Any, m: Any, u: Any) -> str:
        return f"{p}:{m}" + (f" at {u}" if u else "")

    return (
        f"{run_dir} was run with {show(*want)}, this command line gives {show(*have)}; "
        f"resume with the same model flags: {resume_command(run_dir, manifest)}"
    )


#: Command-line flags of the settings a resume must be given again, by ``params`` key:
#: the judge's endpoint and the answer cache file.
RESUME_FLAGS = (
    ("--judge-provider", "judge_provider"),
    ("--judge-model", "judge_model"),
    ("--judge-base-url", "judge_base_url"),
    ("--cache", "cache_path"),
)


def resume_command(run_dir: Path, manifest: RunManifest) -> str:
    """The command that resumes ``run_dir``, with the model, judge and cache flags it was
    run with."""
    params = manifest.params
    parts = ["python", "run_eval.py", "--resume", str(run_dir)]
    if manifest.provider not in (None, "local"):
        parts += ["--provider", str(manifest.provider)]
    for flag, key in (("--model", "model"), ("--base-url", "base_url")):
        if getattr(params, key):
            parts += [flag, str(getattr(params, key))]
    for flag, key in RESUME_FLAGS:
        value = getattr(params, key)
        if value and value != _DEFAULTS.get(key):
            parts += [flag, str(value)]
    return redact(" ".join(shlex.quote(p) for p in parts))


#: The defaults of the settings in ``RESUME_FLAGS`` (``None``: the pipeline's model).
_DEFAULTS: dict[str, Any] = {"cache_path": DEFAULT_CACHE_PATH}


def endpoint_mismatch(run_dir: Path, manifest: RunManifest, cfg: RunConfig) -> str | None:
    """Why a resume's command line does not name the judge endpoint or the cache file the
    run was started with, or ``None``. The judge's provider, model and base URL are the
    command line's and must equal the manifest's, so no folder can choose where a key is
    sent. The cache file may be named anew (``--cache``), but a resume that leaves it at
    its default while the run used another file is refused: its answers would be written
    where later runs with that ``--cache`` do not look."""
    params = manifest.params
    judged = cfg.matcher == "judge" or params.matcher == "judge"
    for flag, key in RESUME_FLAGS:
        saved, given = getattr(params, key), getattr(cfg, key)
        if key == "cache_path":
            if given != DEFAULT_CACHE_PATH or saved in (None, DEFAULT_CACHE_PATH):
                continue
        elif not judged or redact(str(saved or "")) == redact(str(given or "")):
            continue
        return redact(
            f"{run_dir} was run with {flag} {saved or '(none)'}, this command line "
            f"gives {given or '(none)'}; resume with: {resume_command(run_dir, manifest)}"
        )
    return None


def folder_problem(run_dir: Path, dataset_dirs: list[Path]) -> str | None:
    """Why ``run_dir`` may not hold a run: it lies in a folder of dataset files."""
    where = run_dir.resolve()
    for folder in dataset_dirs:
        base = folder.resolve()
        if where == base or base in where.parents:
            return (
                f"{run_dir}: is inside the dataset folder {folder}; a run folder there "
                "would be read as part of the suite. Choose --out elsewhere"
            )
    return None
