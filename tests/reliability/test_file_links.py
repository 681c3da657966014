"""Writers that meet symbolic links, and what they create being private (rule
E2; docs/reliability.md, "Files and links").

A run folder may come from anyone. Each writer that writes into a folder it did not make
gets a link planted where it writes, pointing at a file outside; the file outside must be
byte for byte as it was. A whole file is written by a new temporary file and a rename (the
link is replaced); a file that is appended to, and a folder that is written into, are
refused in one line with exit 2 when they are links."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from hy_eval.cli import main
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, model_args

DATA = Path(__file__).parents[1] / "data" / "runlog_v1"
OUTSIDE = b"a file outside the run folder\n"


def outside_file(tmp_path, name="outside.txt"):
    """A file the user cares about, outside every folder the commands write."""
    path = tmp_path / "elsewhere" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(OUTSIDE)
    return path


def plant(folder, names, target):
    """Links named ``names`` in ``folder``, each to ``target``."""
    for name in names:
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(target)


def copied_run(tmp_path, name="run"):
    """A copy of the committed finished run folder (its perturbed run left out)."""
    run = tmp_path / name
    shutil.copytree(DATA / "run", run, ignore=shutil.ignore_patterns("perturb"))
    return run


def error_lines(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("hy-eval: error:")]


def mode(path):
    return stat.S_IMODE(path.lstat().st_mode)


# -- item 1: writers never follow a link ------------------------------------------------


def test_report_replaces_links_and_leaves_their_targets(tmp_path):
    """``hy-eval report DIR`` with report.html, report.md, the plots, summary.json and the
    old fixed temporary name summary.json.tmp as links: each outside file unchanged (the
    page, the markdown and a PNG were written into it), the reports written in DIR."""
    run = copied_run(tmp_path)
    target = outside_file(tmp_path)
    names = ["report.html", "report.md", "metrics.png", "confusion.png", "rules.png"]
    plant(run, [*names, "summary.json", "summary.json.tmp"], target)
    assert main(["report", str(run)]) == 0
    assert target.read_bytes() == OUTSIDE
    for name in [*names, "summary.json"]:
        assert not (run / name).is_symlink() and (run / name).stat().st_size > 0, name
    assert (run / "report.html").read_text().startswith("<!doctype html>")
    assert (run / "metrics.png").read_bytes().startswith(b"\x89PNG")


def test_report_refuses_a_run_folder_that_is_a_link(tmp_path, capsys):
    """A run folder that is itself a link: the reports would be renamed into the folder it
    points to (replacing that folder's report.html), so it is refused in one line."""
    real = copied_run(tmp_path, "real")
    before = {p.name: p.read_bytes() for p in real.iterdir()}
    (tmp_path / "run").symlink_to(real)
    assert main(["report", str(tmp_path / "run")]) == 2
    (line,) = error_lines(capsys)
    assert "the run folder is a symbolic link" in line
    assert {p.name: p.read_bytes() for p in real.iterdir()} == before


def test_compare_html_and_json_replace_a_link(tmp_path):
    """``compare --html OUT --json OUT`` where both are links to a file outside."""
    run = copied_run(tmp_path)
    target = outside_file(tmp_path)
    plant(tmp_path, ["page.html", "cmp.json"], target)
    args = ["compare", str(run), str(run), "--html", str(tmp_path / "page.html")]
    assert main([*args, "--json", str(tmp_path / "cmp.json")]) == 0
    assert target.read_bytes() == OUTSIDE
    assert "<html" in (tmp_path / "page.html").read_text()
    assert json.loads((tmp_path / "cmp.json").read_text())


def test_table_replaces_links_and_refuses_an_out_folder_that_is_a_link(tmp_path, capsys):
    """``table`` into a folder holding links as matrix.md, matrix.json and the page; then
    ``--out`` itself a link to a folder outside."""
    a, b = copied_run(tmp_path, "a"), copied_run(tmp_path, "b")
    target = outside_file(tmp_path)
    out = tmp_path / "t"
    out.mkdir()
    plant(out, ["matrix.md", "matrix.json", "compare-b.html"], target)
    assert main(["table", str(a), str(b), "--out", str(out)]) == 0
    assert target.read_bytes() == OUTSIDE
    assert (out / "matrix.md").read_text().startswith("| metric | a | b |")
    (tmp_path / "t2").symlink_to(target.parent)
    capsys.readouterr()
    assert main(["table", str(a), str(b), "--out", str(tmp_path / "t2")]) == 2
    (line,) = error_lines(capsys)
    assert "t2: the folder is a symbolic link" in line
    assert sorted(p.name for p in target.parent.iterdir()) == ["outside.txt"]


def test_bless_replaces_a_baseline_that_is_a_link(tmp_path):
    run = copied_run(tmp_path)
    target = outside_file(tmp_path)
    plant(tmp_path, ["baseline.json"], target)
    assert main(["baseline", "bless", str(run), "--out", str(tmp_path / "baseline.json")]) == 0
    assert target.read_bytes() == OUTSIDE
    assert json.loads((tmp_path / "baseline.json").read_text())["cases"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A toy suite of two cases and its scripted model, for the whole module."""
    folder = tmp_path_factory.mktemp("suite") / "toy"
    suite = write_suite(folder, 2)
    with SuiteModel(suite.cases) as model:
        yield folder, model


def run_args(toy, out, *extra):
    folder, model = toy
    args = ["--suite", str(folder), *model_args(model.server), "--quiet"]
    return [*args, "--cache-mode", "off", "--out", str(out), *extra]


def resume_args(toy, finished, run, *extra):
    """A resume of ``run`` (a copy of ``finished``) with the cache file it was run with."""
    _, model = toy
    cache = finished.parent / ".hy_eval" / "cache.sqlite"
    args = ["--resume", str(run), *model_args(model.server), "--quiet"]
    return [*args, "--cache", str(cache), *extra]


@pytest.fixture(scope="module")
def finished(toy, tmp_path_factory):
    """A finished run of the toy suite with an answer cache in ``.hy_eval/``, made once
    under umask 0 (modes must not depend on it); tests change copies of it."""
    base = tmp_path_factory.mktemp("finished")
    cache = base / ".hy_eval" / "cache.sqlite"
    old = os.umask(0)
    try:
        folder, model = toy
        args = ["--suite", str(folder), *model_args(model.server), "--quiet"]
        assert main([*args, "--cache", str(cache), "--out", str(base / "run")]) == 0
    finally:
        os.umask(old)
    return base / "run"


def copy_of(finished, to):
    shutil.copytree(finished, to, symlinks=True, ignore=shutil.ignore_patterns(".lock"))
    return to


def test_resume_refuses_cases_jsonl_that_is_a_link(tmp_path, toy, finished, capsys):
    """``cases.jsonl`` is appended to on a resume, which a rename cannot do: a link there
    is refused. The file outside holds one whole record (so the resume's repair leaves it
    as it is); the resume appended the other case's record to it."""
    run = copy_of(finished, tmp_path / "run")
    first = (run / "cases.jsonl").read_text().splitlines(keepends=True)[0].encode()
    target = outside_file(tmp_path)
    target.write_bytes(first)
    plant(run, ["cases.jsonl"], target)
    capsys.readouterr()
    assert main(resume_args(toy, finished, run)) == 2
    (line,) = error_lines(capsys)
    assert "cases.jsonl: the case records is a symbolic link" in line
    assert target.read_bytes() == first


def test_resume_and_gate_replace_the_files_they_rewrite(tmp_path, toy, finished):
    """A resume rewrites manifest.json, summary.json, the reports and (``--gate``)
    gates.json: each a link to a file outside, each replaced."""
    run = copy_of(finished, tmp_path / "run")
    lines = (run / "cases.jsonl").read_text().splitlines(keepends=True)
    (run / "cases.jsonl").write_text(lines[0])
    target = outside_file(tmp_path)
    names = ["manifest.json", "summary.json", "report.md", "report.html", "gates.json"]
    manifest = (run / "manifest.json").read_bytes()
    plant(run, names, target)
    (run / "real-manifest.json").write_bytes(manifest)
    (run / "manifest.json").unlink()
    (run / "manifest.json").symlink_to(run / "real-manifest.json")
    gates = tmp_path / "gates.toml"
    gates.write_text("[metrics.case_pass]\nmin = 0.0\n")
    assert main(resume_args(toy, finished, run, "--gate", str(gates))) == 0
    assert target.read_bytes() == OUTSIDE
    assert (run / "real-manifest.json").read_bytes() == manifest
    for name in names:
        assert not (run / name).is_symlink(), name
    assert len((run / "cases.jsonl").read_text().splitlines()) == 2


def test_resume_refuses_a_run_folder_that_is_a_link(tmp_path, toy, finished, capsys):
    real = copy_of(finished, tmp_path / "real")
    before = {p.name: p.read_bytes() for p in real.iterdir() if p.is_file()}
    (tmp_path / "run").symlink_to(real)
    capsys.readouterr()
    assert main(resume_args(toy, finished, tmp_path / "run")) == 2
    (line,) = error_lines(capsys)
    assert "the folder is a symbolic link" in line
    assert {p.name: p.read_bytes() for p in real.iterdir() if p.is_file()} == before


def test_a_perturb_folder_that_is_a_link_is_refused(tmp_path, toy, finished, capsys):
    """A copied run folder whose ``perturb`` is a link to a folder outside: the perturbed
    run would be written there (its manifest.json replacing the one outside)."""
    run = copy_of(finished, tmp_path / "run")
    target = outside_file(tmp_path, "manifest.json")
    (run / "perturb").symlink_to(target.parent)
    capsys.readouterr()
    assert main(resume_args(toy, finished, run, "--perturb", "rename")) == 2
    (line,) = error_lines(capsys)
    assert "perturb: the folder is a symbolic link" in line
    assert sorted(p.name for p in target.parent.iterdir()) == ["manifest.json"]
    assert target.read_bytes() == OUTSIDE


def test_a_batch_spool_that_is_a_link_is_refused(tmp_path):
    """SQLite opens a database through a link: the batch path's scratch file in a run
    folder, a link to a database outside, got its table made there and was emptied."""
    import sqlite3

    from hy_eval._files import LinkRefused
    from hy_eval.llm.batch._spool import SPOOL_NAME, RequestSpool

    target = tmp_path / "elsewhere" / "mine.sqlite"
    target.parent.mkdir()
    db = sqlite3.connect(target)
    db.execute("CREATE TABLE notes (text TEXT)")
    db.commit()
    db.close()
    before = target.read_bytes()
    plant(tmp_path, [SPOOL_NAME], target)
    with pytest.raises(LinkRefused, match="the database file is a symbolic link"):
        RequestSpool(tmp_path / SPOOL_NAME)
    assert target.read_bytes() == before


def test_a_json_file_is_never_written_through_a_link_at_a_temporary_name(tmp_path):
    """The temporary file is new (``O_EXCL``): a link planted under the fixed temporary
    name the JSON writer used (``x.json.tmp``) was followed; now nothing beside the file
    is followed, and nothing is left behind."""
    from hy_eval.harness.runlog import write_json

    target = outside_file(tmp_path)
    planted = {"x.json.tmp", "x.tmp"}
    for name in planted:
        (tmp_path / name).symlink_to(target)
    write_json(tmp_path / "x.json", {})
    assert target.read_bytes() == OUTSIDE
    assert json.loads((tmp_path / "x.json").read_text()) == {}
    assert {p.name for p in tmp_path.iterdir()} == planted | {"x.json", "elsewhere"}


# -- item 12: private folders and files ---------------------------------------------------


@pytest.fixture
def open_umask():
    """A umask that takes nothing away (modes must not depend on it)."""
    old = os.umask(0)
    yield
    os.umask(old)


def test_a_run_folder_and_its_files_are_private(finished):
    """Made under umask 0, a run folder was 0777 and its files 0666; now 0700 and 0600."""
    assert mode(finished) == 0o700
    files = list(finished.iterdir())
    assert {p.name for p in files} >= {"manifest.json", "cases.jsonl", "summary.json"}
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_the_cache_folder_and_files_are_private(finished):
    """``.hy_eval/`` 0700; ``cache.sqlite`` and the WAL files SQLite makes beside it
    0600 (they were 0777 and 0666 under umask 0)."""
    cache = finished.parent / ".hy_eval"
    assert mode(cache) == 0o700
    files = list(cache.iterdir())
    assert "cache.sqlite" in {p.name for p in files}
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}


def test_an_old_world_readable_cache_is_tightened_when_opened(tmp_path):
    """A cache made before this rule (0755 folder, 0644 files, its WAL files among them)
    is made 0700/0600 the next time it is opened."""
    from hy_eval.llm import AnswerCache

    folder = tmp_path / ".hy_eval"
    first = AnswerCache(str(folder / "cache.sqlite"))  # kept open: its -wal and -shm stay
    os.chmod(folder, 0o755)
    for p in folder.iterdir():
        os.chmod(p, 0o644)
    second = AnswerCache(str(folder / "cache.sqlite"))
    try:
        assert mode(folder) == 0o700
        modes = {p.name: mode(p) for p in folder.iterdir()}
        assert modes == {f"cache.sqlite{s}": 0o600 for s in ("", "-wal", "-shm")}
    finally:
        first.close()
        second.close()


def test_a_memory_store_file_is_private(tmp_path, open_umask):
    """A new store's folder and files, its -wal and -shm included, under umask 0."""
    from hy_eval.memory import MemoryStore

    store = MemoryStore(tmp_path / "mem" / "store.sqlite")
    try:
        assert mode(tmp_path / "mem") == 0o700
        modes = {p.name: mode(p) for p in (tmp_path / "mem").iterdir()}
        assert modes == {f"store.sqlite{s}": 0o600 for s in ("", "-wal", "-shm")}
    finally:
        store.db.close()
