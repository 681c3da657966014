"""Live answers of the embedded model repeat on one machine, not across machines: a
local run's manifest records what decides them (llama.cpp's system info, the
threads), a recorded cassette keeps its machine beside it, and ``hy-eval cassette agree``
says which answers of a cache differ from a cassette's and whether the machines match."""

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

from hy_eval.cli import main
from hy_eval.harness.run._runner import local_machine
from hy_eval.llm.cache._machine import machine_info, machines_match, read_sidecar, sidecar

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "tests" / "cassettes" / "multi_speaker.default.local.jsonl"


def test_a_local_run_records_its_machine_and_a_remote_one_does_not():
    local = SimpleNamespace(provider=SimpleNamespace(name="local", threads=2, processes=1))
    info = local_machine(local)  # type: ignore[arg-type]
    assert info is not None and info["threads"] == 2 and info["processes"] == 1
    assert info["llama_system_info"].startswith("CPU :")  # llama.cpp's own line
    remote = SimpleNamespace(provider=SimpleNamespace(name="openai"))
    assert local_machine(remote) is None  # type: ignore[arg-type]


def test_machines_match_on_what_decides_answers_only():
    a = machine_info(threads=2)
    assert machines_match(a, {**a, "cpu": "another name", "cores": 64}) == (True, [])
    other = {**a, "llama_system_info": "CPU : AVX2 = 1"}
    assert machines_match(a, other) == (False, ["llama_system_info"])
    assert machines_match(a, {**a, "threads": 4}) == (False, ["threads"])


def _cassette_and_cache(tmp_path, change_one: bool):
    cassette = tmp_path / "c.jsonl"
    cassette.write_text("".join(CASSETTE.read_text("utf-8").splitlines(True)[:3]), "utf-8")
    cache = tmp_path / "cache.sqlite"
    assert main(["cassette", "import", str(cassette), "--cache", str(cache)]) == 0
    if change_one:
        with sqlite3.connect(cache) as db:
            key, completion = db.execute("SELECT key, completion FROM answers LIMIT 1").fetchone()
            data = json.loads(completion)
            data["text"] += " (another machine)"
            db.execute("UPDATE answers SET completion = ? WHERE key = ?", (json.dumps(data), key))
    return cassette, cache


def test_agree_lists_the_answers_that_differ_and_the_machines(tmp_path, capsys):
    cassette, cache = _cassette_and_cache(tmp_path, change_one=True)
    capsys.readouterr()
    code = main(["cassette", "agree", "--cassette", str(cassette), "--cache", str(cache)])
    out = capsys.readouterr().out
    assert code == 1
    assert "3 equal" not in out and ": 2 equal, 1 differ" in out
    assert "the cassette does not say which machine recorded it" in out
    assert "the committed cassette's replay is the reference" in out
    theirs = {**machine_info(), "llama_system_info": "CPU : SSE3 = 1 | AVX = 1"}
    sidecar(cassette).write_text(json.dumps(theirs), "utf-8")
    assert read_sidecar(cassette) == theirs
    main(["cassette", "agree", "--cassette", str(cassette), "--cache", str(cache)])
    assert "machines differ in llama_system_info" in capsys.readouterr().out


def test_agree_exits_0_when_every_answer_is_the_cassettes(tmp_path, capsys):
    cassette, cache = _cassette_and_cache(tmp_path, change_one=False)
    sidecar(cassette).write_text(json.dumps(machine_info()), "utf-8")
    capsys.readouterr()
    assert main(["cassette", "agree", "--cassette", str(cassette), "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert ": 3 equal, 0 differ" in out and "machines: the same llama.cpp features" in out
    assert (
        main(
            ["cassette", "agree", "--cassette", str(tmp_path / "none.jsonl"), "--cache", str(cache)]
        )
        == 2
    )
