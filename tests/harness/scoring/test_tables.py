"""Derived tables kept on disk (``hy_eval.harness.text._tables``): built once, read back
equal, built again when their data or their code changes, and never a run's failure."""

from __future__ import annotations

import marshal
import os

import pytest

from hy_eval.harness.text import cached_table


def _builder(calls: list[int]):  # type: ignore[no-untyped-def]
    def build() -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
        calls.append(1)
        return {"壳牌": ("shell",), "浙大": ("zhejiang university", "zju")}, {"a": "b"}

    return build


@pytest.fixture
def files(tmp_path):
    """A table's data file and its builder's module file."""
    source, code = tmp_path / "data.txt", tmp_path / "code.py"
    source.write_text("one\n")
    code.write_text("# builder\n")
    return source, code


def test_a_table_is_built_once_then_read_back_equal(tmp_path, monkeypatch, files):
    monkeypatch.setenv("HY_EVAL_TABLES", str(tmp_path / "tables"))
    source, code = files
    calls: list[int] = []
    first = cached_table("t", [source], code, _builder(calls))
    again = cached_table("t", [source], code, _builder(calls))
    assert first == again and calls == [1]
    assert oct((tmp_path / "tables").stat().st_mode & 0o777) == "0o700"


def test_a_changed_source_or_code_builds_again(tmp_path, monkeypatch, files):
    monkeypatch.setenv("HY_EVAL_TABLES", str(tmp_path / "tables"))
    source, code = files
    calls: list[int] = []
    cached_table("t", [source], code, _builder(calls))
    source.write_text("one\ntwo\n")
    cached_table("t", [source], code, _builder(calls))
    code.write_text("# builder, edited\n")
    cached_table("t", [source], code, _builder(calls))
    assert calls == [1, 1, 1]


def test_an_unreadable_or_unwritable_cache_costs_the_build_only(tmp_path, monkeypatch, files):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HY_EVAL_TABLES", str(blocker / "tables"))  # cannot be made
    source, code = files
    calls: list[int] = []
    assert cached_table("t", [source], code, _builder(calls))[1] == {"a": "b"}
    # A torn or foreign file where the table should be is built over.
    monkeypatch.setenv("HY_EVAL_TABLES", str(tmp_path / "tables"))
    cached_table("t", [source], code, _builder(calls))
    [written] = os.listdir(tmp_path / "tables")
    (tmp_path / "tables" / written).write_bytes(b"\x00garbage")
    assert cached_table("t", [source], code, _builder(calls))[0]["壳牌"] == ("shell",)
    (tmp_path / "tables" / written).write_bytes(marshal.dumps(7))  # reads, but is no table
    assert cached_table("t", [source], code, _builder(calls))[1] == {"a": "b"}
    assert calls == [1, 1, 1, 1]
