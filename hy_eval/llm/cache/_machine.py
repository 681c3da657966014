"""What decides the embedded model's answers beyond the request: the CPU's features and
the kernels llama.cpp was built with and picks, and the threads it runs on. llama.cpp on
the CPU sums floating-point numbers in an order that follows these, so two machines with
other features can give other answers to the same request (a token in about one answer in
two on a long prompt), while one machine gives the same answer every time.

``machine_info`` is recorded in a local run's manifest and beside a recorded cassette
(``FILE.machine.json``), and ``hy-eval cassette agree`` compares the two."""

from __future__ import annotations

import json
import os
import platform
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _system_info() -> str | None:
    """llama.cpp's own line (``CPU : SSE3 = 1 | AVX2 = 1 | ... | REPACK = 1``): the
    features it found and the kernels it was built with; None without llama-cpp-python."""
    try:
        import llama_cpp

        raw = llama_cpp.llama_print_system_info()
    except Exception:  # not installed, or a build without the call: nothing to record
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return " ".join(text.split()).strip(" |") or None


@cache
def _cpu_model() -> str | None:
    try:
        for line in (
            Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
        ):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info(threads: int | None = None, processes: int | None = None) -> dict[str, Any]:
    """This machine as the embedded model's answers depend on it: llama.cpp's system info,
    the CPU model, the machine type, the cores; with the model's threads per process and
    processes when given."""
    info: dict[str, Any] = {
        "llama_system_info": _system_info(),
        "cpu": _cpu_model(),
        "arch": platform.machine() or None,
        "cores": os.cpu_count(),
    }
    if threads is not None:
        info["threads"] = threads
    if processes is not None:
        info["processes"] = processes
    return info


#: What must be equal for two machines to give the same answers (the CPU's name and core
#: count may differ between machines whose kernels are the same).
DECIDING = ("llama_system_info", "arch", "threads")


def machines_match(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether two ``machine_info`` records decide answers alike, and the keys (of
    ``DECIDING``) where they differ; a key either side lacks is not compared."""
    differ = [k for k in DECIDING if k in a and k in b and a[k] != b[k]]
    return not differ, differ


def sidecar(cassette: str | Path) -> Path:
    """Where a cassette's recording machine is written: ``FILE.machine.json``."""
    path = Path(cassette)
    return path.with_name(path.name + ".machine.json")


def read_sidecar(cassette: str | Path) -> dict[str, Any] | None:
    """The recording machine of ``cassette``, or None when it was not recorded (cassettes
    recorded before machines were kept) or does not read as an object."""
    try:
        data = json.loads(sidecar(cassette).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
