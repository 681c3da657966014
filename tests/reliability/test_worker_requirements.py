"""The external systems' virtualenvs install only hash-pinned wheels
(docs/systems.md, "Pinned and hash-checked installs"; docs/reliability.md). Every
distribution of ``workers/requirements/NAME.txt`` is pinned with ``==`` and its sha256
lines, at the version ``NAME.in`` pins; pip runs with ``--require-hashes --only-binary
:all:``, and only the sdists ``SOURCE_BUILDS`` names are built, by hash-pinned tools.

Before: 0 hash lines, no ``--require-hashes``, no ``--only-binary``."""

import re
import shutil
from pathlib import Path

import pytest

from hy_eval.harness.systems import SystemInstallError, ensure_venv
from hy_eval.harness.systems._venv import (
    BUILD_TOOLS,
    SOURCE_BUILDS,
    WORKERS,
    pip_steps,
    requirements_file,
)

SYSTEMS = ["hy_memory", "mem0"]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+) \\$")
HASH = re.compile(r"^    --hash=sha256:[0-9a-f]{64}( \\)?$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(name: str) -> dict[str, tuple[str, int]]:
    """``NAME.txt`` read strictly: each distribution's version and number of hashes."""
    pins: dict[str, tuple[str, int]] = {}
    current = None
    for n, line in enumerate(requirements_file(name).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if match := PIN.match(line):
            current = norm(match[1])
            assert current not in pins, f"{name}.txt:{n}: {current} twice"
            pins[current] = (match[3], 0)
        elif HASH.match(line) and current is not None:
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
        else:
            pytest.fail(f"{name}.txt:{n}: neither a pin nor a hash: {line!r}")
    return pins


@pytest.mark.parametrize("name", [*SYSTEMS, BUILD_TOOLS])
def test_every_distribution_is_pinned_with_its_hashes_at_the_version_of_the_in_file(name):
    pins = locked(name)
    assert pins and all(hashes >= 1 for _version, hashes in pins.values())
    wanted = {}
    source = WORKERS / "requirements" / f"{name}.in"
    for line in source.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            dist, version = line.split("==")
            wanted[norm(dist.split("[")[0])] = version.strip()
    # The .in pins every distribution: the lock adds none and moves no version.
    assert {k: v for k, (v, _h) in pins.items()} == wanted


@pytest.mark.parametrize("name", SYSTEMS)
def test_pip_is_told_to_require_hashes_and_take_wheels_only(name, tmp_path):
    steps = pip_steps(name, tmp_path / "python")
    for step in steps:
        assert "--require-hashes" in step
        assert step[step.index("--only-binary") + 1] == ":all:"
    last = steps[-1]
    assert last[-2:] == ["-r", str(requirements_file(name))]
    sources = SOURCE_BUILDS.get(name, ())
    if sources:
        # The few sdists, built by the hash-checked tools installed one step before.
        assert steps[0][-2:] == ["-r", str(requirements_file(BUILD_TOOLS))]
        assert last[last.index("--no-binary") + 1] == ",".join(sources)
        assert "--no-build-isolation" in last
        assert set(sources) <= set(locked(name))
    else:
        assert len(steps) == 1 and "--no-binary" not in last


@pytest.mark.skipif(shutil.which("python3") is None, reason="needs a python3 to make a venv")
def test_a_pin_without_its_hash_is_refused_in_one_line(tmp_path, monkeypatch):
    """A requirement with no hash never installs: pip says so before it runs anything
    (before the change it installed, and so would a replaced file)."""
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "mem0.txt").write_text("six==1.17.0\n")
    monkeypatch.setattr("hy_eval.harness.systems._venv.WORKERS", tmp_path)
    monkeypatch.setenv("HY_EVAL_SYSTEMS_DIR", str(tmp_path / "envs"))
    with pytest.raises(SystemInstallError) as caught:
        ensure_venv("mem0")
    message = str(caught.value)
    assert message.startswith("mem0: install failed: ") and "\n" not in message
    assert "hash" in message.lower()
    assert not [p for p in Path(tmp_path / "envs").iterdir() if p.is_dir()]
