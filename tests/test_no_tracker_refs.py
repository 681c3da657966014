"""No tracked file cites the project's issue-tracker numbers, which a reader of the
repository cannot follow, nor points to a spec outside the repository (docs/spec.md is the
repository's copy; rules are cited by their ids there, such as M1 or R2).

Every text file ``git ls-files`` lists is scanned for "issue" or "issues" followed by an
optional space, underscore or hash and digits, also when a line break falls between the
word and the number, and for a path into a shared folder beside the repository. The word
"issue" in its other senses, and third-party issue URLs (".../issues/123"), do not match.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A tracker number: "issue", "Issue #" or "issues" and a number, "issue_" and a number in
#: a test's name, or the number on the next line. Not a third party's ".../issues/<n>" URL
#: nor "profile_issues". (The examples in the tests below are joined from pieces, so that
#: this file passes its own scan.)
TRACKER = re.compile(r"issues?(?:[ _]|[ \t]*\n[ \t]*)?#?[0-9]+", re.IGNORECASE)
#: A spec or other file outside the repository.
OUTSIDE = re.compile(r"\.\./shared|shared[/\\]spec", re.IGNORECASE)


def _tracked_text_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    files = []
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        path = ROOT / name
        if name and path.is_file():
            files.append(path)
    return files


def offending_lines(text: str) -> list[tuple[int, str]]:
    """(line number, matched text) of every tracker number or outside pointer in ``text``."""
    found = []
    for pattern in (TRACKER, OUTSIDE):
        for m in pattern.finditer(text):
            found.append((text.count("\n", 0, m.start()) + 1, " ".join(m.group().split())))
    return sorted(found)


def test_the_pattern_finds_tracker_numbers_and_outside_pointers():
    issue = "issue"
    assert [n for n, _ in offending_lines(f"a\n({issue} 18, item 7)\nIs" + "sue #21\n")] == [2, 3]
    assert offending_lines(f"fixed before {issue}\n28's review") == [(1, f"{issue} 28")]
    assert offending_lines(f"{issue}s 19 and 28") != []
    assert offending_lines(f"def test_x_of_{issue}_18():") != []
    assert offending_lines("see " + "../" + "shared" + "/SPEC.md") != []
    assert offending_lines("shared" + "/spec.md") != []
    assert offending_lines("it issues a request; profile_issues; issues/123 upstream") == []


def test_no_tracked_file_cites_a_tracker_number_or_an_outside_file():
    problems = []
    for path in _tracked_text_files():
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        for line, what in offending_lines(text):
            problems.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {what}")
    assert not problems, (
        "tracker numbers or outside pointers (say in words what the code does and why, "
        "citing rule ids of docs/spec.md):\n" + "\n".join(problems)
    )
