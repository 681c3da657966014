"""A virtualenv of its own for each external memory system, made on first use from the
hash-pinned requirements file beside its worker (``workers/requirements/NAME.txt``,
written by ``lock.sh`` there from ``NAME.in``).

pip installs it with ``--require-hashes --only-binary :all:``: every distribution must be
pinned with its sha256, and only wheels are taken, so neither a replaced file nor a
``setup.py`` runs code as the user. The few sdists a system cannot do without are named in
:data:`SOURCE_BUILDS`; they are built without build isolation, by the hash-pinned build
tools of ``_build.txt`` installed first (an isolated build would fetch its tools unchecked).

The folder is named by the system and a hash of its requirements (and build tools) and of
this Python's version, so a changed pin makes a new environment and an old one is never
half-updated. It is built in a ``.partial`` folder and renamed when pip succeeded: an
interrupted install leaves nothing that looks ready.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

WORKERS = Path(__file__).parent / "workers"

#: Where the environments live unless ``HY_EVAL_SYSTEMS_DIR`` says otherwise.
DEFAULT_DIR = Path(".hy_eval") / "systems"

#: The sdists each system is allowed to build from source, because PyPI serves no wheel of
#: the pinned version (every other distribution must come as a wheel).
SOURCE_BUILDS: dict[str, tuple[str, ...]] = {"hy_memory": ("jieba", "langdetect")}
#: The hash-pinned build tools (setuptools, wheel) of the sdists of :data:`SOURCE_BUILDS`.
BUILD_TOOLS = "_build"
#: pip's flags for every install: hashes required, wheels only.
PIP_INSTALL = (
    "install",
    "--disable-pip-version-check",
    "--no-input",
    "-q",
    "--require-hashes",
    "--only-binary",
    ":all:",
)


class SystemInstallError(RuntimeError):
    """An external system's environment could not be made; the message is one line."""


def requirements_file(name: str) -> Path:
    """The pinned requirements of system ``name``."""
    return WORKERS / "requirements" / f"{name}.txt"


def worker_script(name: str) -> Path:
    """The worker script of system ``name``."""
    return WORKERS / f"{name}_worker.py"


def systems_dir() -> Path:
    """Where the environments are made (``HY_EVAL_SYSTEMS_DIR`` or ``.hy_eval/systems``),
    made absolute: a worker runs in a folder of its own, where a relative interpreter path
    would name nothing."""
    return Path(os.environ.get("HY_EVAL_SYSTEMS_DIR") or DEFAULT_DIR).absolute()


def env_folder(name: str) -> Path:
    """The environment folder of ``name`` for its current requirements and this Python."""
    digest = hashlib.sha256(requirements_file(name).read_bytes())
    if SOURCE_BUILDS.get(name):
        digest.update(requirements_file(BUILD_TOOLS).read_bytes())
    digest.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return systems_dir() / f"{name}-{digest.hexdigest()[:12]}"


def venv_python(folder: Path) -> Path:
    """The interpreter of the environment in ``folder``."""
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(name: str, *, timeout: float = 1800.0) -> Path:
    """The interpreter of ``name``'s environment, made first if it is not there. Raises
    :class:`SystemInstallError` (one line; pip's output kept in ``NAME-install.log``)."""
    req = requirements_file(name)
    if not req.is_file():
        raise SystemInstallError(f"{name}: no pinned requirements at {req}")
    folder = env_folder(name)
    ready = folder / ".ready"
    if ready.is_file():
        return venv_python(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second run waits for the first's install
        if not ready.is_file():
            _install(name, req, folder, timeout)
    return venv_python(folder)


def _install(name: str, req: Path, folder: Path, timeout: float) -> None:
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    log = folder.parent / f"{name}-install.log"
    steps = [[sys.executable, "-m", "venv", str(partial)], *pip_steps(name, venv_python(partial))]
    with open(log, "w", encoding="utf-8") as out:
        for cmd in steps:
            out.write("$ " + " ".join(cmd) + "\n")
            out.flush()
            try:
                done = subprocess.run(
                    cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired:
                shutil.rmtree(partial, ignore_errors=True)
                raise SystemInstallError(
                    f"{name}: install took over {timeout:.0f} s; see {log}"
                ) from None
            if done.returncode != 0:
                shutil.rmtree(partial, ignore_errors=True)
                raise SystemInstallError(f"{name}: install failed: {_last_line(log)} (see {log})")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)  # the venv's python finds its prefix from pyvenv.cfg beside it
    (folder / ".ready").write_text(req.read_text(encoding="utf-8"), encoding="utf-8")


def pip_steps(name: str, python: Path) -> list[list[str]]:
    """The pip commands that fill ``name``'s environment whose interpreter is ``python``:
    the build tools first when the system has sdists to build, then its requirements."""
    pip = [str(python), "-m", "pip", *PIP_INSTALL]
    sources = SOURCE_BUILDS.get(name, ())
    if not sources:
        return [[*pip, "-r", str(requirements_file(name))]]
    return [
        [*pip, "-r", str(requirements_file(BUILD_TOOLS))],
        [
            *pip,
            "--no-binary",
            ",".join(sources),
            "--no-build-isolation",
            "-r",
            str(requirements_file(name)),
        ],
    ]


def _last_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or [ln for ln in lines if ln] or ["no output"])[-1][:300]
