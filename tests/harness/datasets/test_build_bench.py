"""datasets/matcher_pairs/build_bench.py: every benchmark pair carries the source of the
file it came from (embedded_run, written, capable_run), capable-run pairs are split by the
same rule as the others, and adding them moves no existing pair's split."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FOLDER = ROOT / "datasets" / "matcher_pairs"


@pytest.fixture(scope="module")
def bb():
    spec = importlib.util.spec_from_file_location("build_bench", FOLDER / "build_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows_of(path):
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


def pair(pid, case, gold, **extra):
    return {
        "pair": pid,
        "case": case,
        "lang": "en",
        "gold": gold,
        "predicted": "p " + gold,
        "names": [],
        "same": True,
        "kind": "paraphrase",
        "keywords": ["x"],
        **extra,
    }


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_committed_bench_is_what_build_bench_makes_with_a_source_per_file(bb):
    built = bb.bench_rows(bb.source_rows(FOLDER), bb.suite_facts())
    assert built == rows_of(FOLDER / "bench.jsonl")
    for name, source in bb.SOURCES.items():
        path = FOLDER / name
        ids = {r["pair"] for r in rows_of(path)} if path.exists() else set()
        assert {r["pair"] for r in built if r["source"] == source} == ids
    assert {r["source"] for r in built} <= {"embedded_run", "written", "capable_run"}
    assert all(r["split"] == bb.split_of(r["case"], r["gold"]) for r in built)


def test_capable_pairs_join_with_their_source_model_and_the_same_split_rule(bb, tmp_path):
    embedded = [pair("p0001", "ms-x-1", "Gold one."), pair("p0002", "ms-x-2", "Gold two.")]
    written = [pair("w1-0001", "ms-x-3", "Gold three.")]
    write(tmp_path / "pairs.jsonl", embedded)
    write(tmp_path / "written.jsonl", written)
    assert bb.main(tmp_path) == 0  # no capable_pairs.jsonl: fine
    before = rows_of(tmp_path / "bench.jsonl")
    assert [r["source"] for r in before] == ["embedded_run", "embedded_run", "written"]

    (tmp_path / "capable_pairs.jsonl").write_text("", encoding="utf-8")
    assert bb.main(tmp_path) == 0  # empty: the same bench
    assert rows_of(tmp_path / "bench.jsonl") == before

    capable = [
        # the same gold fact as p0001: it must fall in p0001's part
        pair("c0001", "ms-x-1", "Gold one.", source="capable_run", model="gpt-x"),
        pair("c0002", "ms-x-9", "Gold nine.", model="gpt-x"),
    ]
    write(tmp_path / "capable_pairs.jsonl", capable)
    assert bb.main(tmp_path) == 0
    after = rows_of(tmp_path / "bench.jsonl")
    assert after[:3] == before  # existing pairs unchanged, split included
    added = after[3:]
    assert [r["source"] for r in added] == ["capable_run", "capable_run"]
    assert [r["model"] for r in added] == ["gpt-x", "gpt-x"]
    assert added[0]["split"] == before[0]["split"]
    assert added[1]["split"] == bb.split_of("ms-x-9", "Gold nine.")


def test_a_repeated_id_or_a_pair_in_the_wrong_file_is_refused(bb, tmp_path, capsys):
    write(tmp_path / "pairs.jsonl", [pair("p0001", "ms-x-1", "Gold one.")])
    write(tmp_path / "capable_pairs.jsonl", [pair("p0001", "ms-x-2", "Gold two.")])
    assert bb.main(tmp_path) == 2
    assert "p0001" in capsys.readouterr().err
    assert not (tmp_path / "bench.jsonl").exists()
    write(
        tmp_path / "capable_pairs.jsonl",
        [pair("c0001", "ms-x-2", "Gold two.", source="embedded_run")],
    )
    with pytest.raises(bb.BenchError, match="not its file's"):
        bb.bench_rows(bb.source_rows(tmp_path), {})
