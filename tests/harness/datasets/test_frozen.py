"""datasets/frozen.py: a change to the datasets may only add cases (the hard tier was
added this way: no existing case changed). The repository's own datasets are checked
here, so a test run fails on an edited or removed recorded case."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "datasets"
spec = importlib.util.spec_from_file_location("frozen", ROOT / "frozen.py")
assert spec and spec.loader
frozen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(frozen)


def test_the_repository_only_added_cases(capsys):
    assert frozen.main([]) == 0
    out = capsys.readouterr().out
    assert " 0 added" in out  # every shipped case is recorded


@pytest.fixture
def tree(tmp_path):
    suite = tmp_path / "s"
    suite.mkdir()
    (suite / "suite.toml").write_text('kind = "memory"\n')
    cases = [{"id": f"c{i}", "lang": "en", "rules": ["A1"]} for i in range(3)]
    (suite / "a.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "notasuite").mkdir()
    (tmp_path / "notasuite" / "x.jsonl").write_text('{"id": "z"}\n')
    manifest = tmp_path / "frozen.json"
    assert frozen.main(["--freeze"], root=tmp_path, manifest=manifest) == 0
    assert sorted(json.loads(manifest.read_text())) == ["s/c0", "s/c1", "s/c2"]
    return tmp_path, manifest


def rewrite(path, fn):
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(c) + "\n" for c in fn(lines)))


def test_an_edited_case_fails_and_is_named(tree, capsys):
    root, manifest = tree
    rewrite(
        root / "s" / "a.jsonl",
        lambda cs: [{**c, "rules": ["A2"]} if c["id"] == "c1" else c for c in cs],
    )
    assert frozen.main([], root=root, manifest=manifest) == 1
    assert "changed: s/c1" in capsys.readouterr().err


def test_a_removed_case_fails_and_is_named(tree, capsys):
    root, manifest = tree
    rewrite(root / "s" / "a.jsonl", lambda cs: cs[:2])
    assert frozen.main([], root=root, manifest=manifest) == 1
    assert "removed: s/c2" in capsys.readouterr().err


def test_reindenting_is_no_change_and_new_cases_are_added(tree, capsys):
    root, manifest = tree
    lines = (root / "s" / "a.jsonl").read_text().splitlines()
    (root / "s" / "a.jsonl").write_text(
        "\n".join(json.dumps(json.loads(x), indent=None, separators=(",", ":")) for x in lines)
        + "\n"
    )
    shutil.copy(root / "s" / "a.jsonl", root / "s" / "_ignored.jsonl")
    (root / "s" / "b.jsonl").write_text(json.dumps({"id": "new", "lang": "zh"}) + "\n")
    assert frozen.main([], root=root, manifest=manifest) == 0
    assert "3 recorded cases unchanged, 1 added" in capsys.readouterr().out
    assert frozen.main(["--freeze"], root=root, manifest=manifest) == 0
    assert "s/new" in json.loads(manifest.read_text())


def test_a_released_case_is_recorded_again_with_its_new_content(tree, capsys):
    root, manifest = tree
    rewrite(
        root / "s" / "a.jsonl",
        lambda cs: [{**c, "lang": "zh"} if c["id"] == "c0" else c for c in cs],
    )
    assert frozen.main([], root=root, manifest=manifest) == 1
    assert frozen.main(["--release", "s/c0"], root=root, manifest=manifest) == 0
    assert frozen.main([], root=root, manifest=manifest) == 0
    assert frozen.main(["--release", "s/nope"], root=root, manifest=manifest) == 2
