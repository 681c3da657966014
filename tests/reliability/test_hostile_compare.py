"""``compare`` on run folders nobody vouches for: terminal control sequences planted in
case ids, tags, rules and model names reach the terminal only as visible escapes, and a
record edited into something that is not a case record gives one line naming the file,
the line and the field, exit 2, never a traceback. Everything the package prints goes
through ``hy_eval._terminal`` (scanned below)."""

import ast
import json
import shutil
from pathlib import Path

import pytest

from hy_eval._terminal import neutralise
from hy_eval.cli import main
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel, model_args

ROOT = Path(__file__).resolve().parents[2]

#: OSC 52 (writes the clipboard), OSC 0 (window title), CSI (colour, cursor), a one-byte
#: C1 CSI, BEL, DEL, a carriage return, bidi overrides and isolates, and a line break
#: that would forge a line of output.
HOSTILE = (
    "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;pwned\x07\x1b[2J\x1b[31m\x9b1m\x7f\r"
    "\u202egnp.exe\u202c\u2066x\u2069\nFORGED LINE"
)
#: The characters no output may hold (the bidi ones are checked as well below).
CONTROL = ("\x1b", "\x9b", "\x07", "\x7f", "\r")
BIDI = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069")


def _edit_records(run_dir, edit):
    path = run_dir / "cases.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for record in records:
        edit(record)
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )


def _break(record):
    """Cases t-00 and t-02 fail in B: two flipped cases, changed checks, fragile tags."""
    if record["id"] in ("t-00", "t-02"):
        score = record["score"]
        score["passed"] = False
        score["counts"]["case_pass"] = [0, 1]
        score["counts"]["fact_recall"] = [0, 1]
        score["checks"][0]["ok"] = False
        record["facts"] = [{"text": "John likes tea.", "owner": "user"}]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two runs of one four-case suite by the scripted model; B breaks two cases."""
    tmp = tmp_path_factory.mktemp("compare")
    suite = write_suite(tmp / "toy", 4)
    with SuiteModel(suite.cases) as model:
        for name in ("a", "b"):
            args = ["--suite", str(tmp / "toy"), *model_args(model.server), "--quiet"]
            assert main([*args, "--cache-mode", "off", "--out", str(tmp / name)]) == 0
    _edit_records(tmp / "b", _break)
    return tmp / "a", tmp / "b"


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def _plant(run_dir):
    """ESC, OSC, C1, BEL and bidi characters in every case id, tag and rule, and in the
    manifest's model name (the run's label)."""

    def edit(record):
        record["id"] = f"{record['id']}{HOSTILE}"
        record["tags"] = [f"tag{HOSTILE}"]
        record["rules"] = [f"A1{HOSTILE}"]

    _edit_records(run_dir, edit)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["model"] = f"scripted{HOSTILE}"
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _assert_safe(text):
    for char in (*CONTROL, *BIDI):
        assert char not in text, f"{char!r} printed raw"
    assert not any(line.startswith("FORGED LINE") for line in text.splitlines())


def test_compare_prints_no_control_character_from_the_run_folders(two_runs, tmp_path, capsys):
    a = _copy(two_runs[0], tmp_path / "a")
    b = _copy(two_runs[1], tmp_path / "b")
    _plant(a)
    _plant(b)
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--html", str(tmp_path / "page.html")]) == 0
    out, err = capsys.readouterr()
    _assert_safe(out + err)
    # The values are still shown, as escapes the reader can see and search for.
    shown = neutralise(f"t-00{HOSTILE}", keep="")
    assert f"broken {shown}" in out
    assert f"changed {shown}: fact#0" in out
    assert f"tag tag{neutralise(HOSTILE, keep='')}" in out
    assert neutralise(f"scripted{HOSTILE}", keep="") in out.splitlines()[0]


def test_an_error_naming_a_hostile_path_is_one_safe_line(two_runs, tmp_path, capsys):
    """The error printer neutralises too: the folder's name is the user's input."""
    missing = tmp_path / f"run{HOSTILE}"
    missing.mkdir()
    capsys.readouterr()
    assert main(["compare", str(two_runs[0]), str(missing)]) == 2
    out, err = capsys.readouterr()
    _assert_safe(out + err)
    assert err.count("\n") == 1 and err.startswith("hy-eval: error: ")


def test_the_hostile_corpus_run_reads_as_case_records(hostile_run, capsys):
    """The records of the hostile-input run (control characters, odd Unicode, huge
    answers) are all case records to compare: the checks refuse only broken ones."""
    run_dir = hostile_run[0]
    capsys.readouterr()
    assert main(["compare", str(run_dir), str(run_dir)]) == 0
    out, err = capsys.readouterr()
    _assert_safe(out + err)
    assert f"on {len(hostile_run[4])} shared cases" in out


# -- records that are not case records ----------------------------------------------------


def _set(**fields):
    def edit(record):
        record.update(fields)

    return edit


def _drop_ok(record):
    record["score"]["checks"][0].pop("ok")


def _nan_count(record):
    record["score"]["counts"]["fact_recall"] = [float("nan"), 1]


def _one_number_count(record):
    record["score"]["counts"]["fact_recall"] = [1]


#: (name, edit of the first record or of its line, the field the error must name)
EDITS = [
    ("nan-in-facts", _set(facts=[{"text": float("nan"), "owner": "user"}]), "facts.0.text"),
    ("tags-as-a-string", _set(tags="toy"), "tags"),
    ("score-null", _set(score=None), "score"),
    ("repeat-not-a-number", _set(repeat="x"), "repeat"),
    ("check-without-ok", _drop_ok, "score.checks.0.ok"),
    ("facts-as-a-dict", _set(facts={"text": "The user likes tea.", "owner": "user"}), "facts"),
    ("integer-id", _set(id=7), "id"),
    ("900-deep-line", lambda line: "[" * 900 + "]" * 900, "nested deeper than"),
    ("not-json", lambda line: line[: len(line) // 2], "invalid JSON"),
    ("nan-count", _nan_count, "score.counts.fact_recall"),
    ("count-not-a-pair", _one_number_count, "score.counts.fact_recall"),
]


@pytest.mark.parametrize(("edit", "field"), [e[1:] for e in EDITS], ids=[e[0] for e in EDITS])
def test_a_bad_record_is_one_line_naming_file_line_and_field(
    two_runs, tmp_path, capsys, edit, field
):
    b = _copy(two_runs[1], tmp_path / "b")
    path = b / "cases.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    if edit.__name__ == "<lambda>":  # edits the line's text
        lines[1] = edit(lines[1])
    else:
        record = json.loads(lines[1])
        edit(record)
        lines[1] = json.dumps(record)  # NaN written as json writes it
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(two_runs[0]), str(b)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"hy-eval: error: {path}:2: not a case record: "), line
    assert field in line, line


def test_a_torn_last_line_is_still_skipped(two_runs, tmp_path, capsys):
    """A killed run's half-written last line is not a record (``runlog``), not an error."""
    b = _copy(two_runs[1], tmp_path / "b")
    with (b / "cases.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "t-09", "rep')
    assert main(["compare", str(two_runs[0]), str(b)]) == 0


# -- the rule: nothing prints but through hy_eval._terminal --------------------------------

#: Files that print without ``hy_eval._terminal``, with how many raw uses each holds.
#: ``_llama_worker.py`` runs by path and imports nothing of hy_eval; its one line is a
#: constant.
ALLOWED = {
    "hy_eval/_terminal.py": None,  # the function itself
    "hy_eval/llm/local/_llama_worker.py": 4,
    # The systems' workers run under another interpreter without hy_eval; they move the
    # process's stdout aside for their JSON lines and send stray writes to stderr.
    "hy_eval/harness/systems/workers/hy_memory_worker.py": 2,
    "hy_eval/harness/systems/workers/mem0_worker.py": 4,
}
#: What may be asked of the standard streams without writing to them.
HARMLESS = {"isatty", "fileno", "flush", "encoding"}


def raw_writes(tree):
    """Lines of ``print(...)`` calls and uses of ``sys.stdout``/``sys.stderr`` (and their
    ``__std*__`` originals) other than asking whether they are terminals."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "print":
                found.append(node.lineno)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__")
        ):
            parent = parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.attr in HARMLESS):
                found.append(node.lineno)
    return sorted(found)


def test_every_print_goes_through_the_terminal_function():
    offenders = {}
    for path in sorted((ROOT / "hy_eval").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        lines = raw_writes(ast.parse(path.read_text(encoding="utf-8")))
        if rel in ALLOWED:
            expected = ALLOWED[rel]
            assert expected is None or len(lines) == expected, (rel, lines)
        elif lines:
            offenders[rel] = lines
    assert not offenders, f"print through hy_eval._terminal.echo instead: {offenders}"


def test_the_scan_sees_the_ways_of_printing():
    code = (
        "import sys\nprint('x')\nsys.stdout.write('x')\nsys.stderr.write('x')\n"
        "f(file=sys.stderr)\ns = sys.__stdout__\nsys.stderr.isatty()\n"
    )
    assert raw_writes(ast.parse(code)) == [2, 3, 4, 5, 6]
