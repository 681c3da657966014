"""``hy-eval matchers draw`` and ``matchers agree``: which pairs are drawn
from a run's records, the judges' blind copy, Cohen's kappa by hand, and bad files."""

import json

import pytest

from hy_eval.cli import main
from hy_eval.harness.analysis import (
    VerdictFileError,
    agreement,
    case_candidates,
    cohen_kappa,
    draw,
    read_verdicts,
)
from hy_eval.harness.runlog import CaseRecord, RunManifest, write_manifest


def record(case_id, lang, predicted, golds, names=("Ava", "Kenji")):
    messages = [{"role": "user", "name": names[0], "content": "hi"}]
    messages += [{"role": "assistant", "name": n, "content": "hello"} for n in names[1:]]
    return CaseRecord(
        id=case_id,
        lang=lang,
        input={"messages": messages},
        expect={"facts": golds},
        facts=[{"text": p, "owner": "user"} for p in predicted],
    )


GOLD_PEANUT = {"subject": "Kenji", "text": "Kenji is allergic to peanuts.", "keywords": ["peanut"]}
GOLD_TOKYO = {"subject": "user", "text": "The user moves to Tokyo in May.", "keywords": ["Tokyo"]}
GOLD_NO_TEXT = {"subject": "user", "text": None, "keywords": ["tea"]}

RECORDS = [
    record(
        "c1",
        "en",
        [
            "The user is allergic to peanuts.",  # related to the peanut fact (keyword and words)
            "Kenji carries an EpiPen.",  # unrelated to both
            "The user moves to Tokyo in May.",  # identical to a gold text: nothing to judge
            "The user is allergic to peanuts.",  # a repeat of a prediction
        ],
        [GOLD_PEANUT, GOLD_TOKYO, GOLD_NO_TEXT],
    ),
    record(
        "c2",
        "zh",
        ["用户在大阪旅行。", "王伟在学校教钢琴。"],
        [
            {"subject": "user", "text": "用户下个月去大阪出差。", "keywords": ["大阪"]},
            {"subject": "user", "text": "用户养了一只柴犬。", "keywords": ["柴犬"]},
        ],
    ),
]


def test_related_pairs_are_all_drawn_and_a_gold_without_one_gets_its_closest():
    pairs = {(c.predicted, c.gold): c for c in case_candidates(RECORDS[0])}
    # The peanut fact: only the related prediction (the EpiPen one shares no content word).
    assert ("The user is allergic to peanuts.", GOLD_PEANUT["text"]) in pairs
    assert ("Kenji carries an EpiPen.", GOLD_PEANUT["text"]) not in pairs
    # The Tokyo fact: its identical prediction is left out; the others share nothing, so
    # the closest one stands as its unrelated pair.
    tokyo = [c for c in pairs.values() if c.gold == GOLD_TOKYO["text"]]
    assert len(tokyo) == 1 and not tokyo[0].related
    # No pair for a gold fact without text.
    assert all(c.gold for c in pairs.values())
    peanut = pairs[("The user is allergic to peanuts.", GOLD_PEANUT["text"])]
    assert peanut.keyword_hit and peanut.accepted and peanut.names == ("Ava", "Kenji")


def test_draw_keeps_every_related_pair_then_fills_with_unrelated_ones_by_language():
    everything = draw(RECORDS)
    related = [c for c in everything if c.related]
    unrelated = [c for c in everything if not c.related]
    assert len(related) == 2 and len(unrelated) == 2  # peanut, 大阪 / Tokyo, 柴犬
    assert len({(c.predicted, c.gold) for c in everything}) == len(everything)
    three = draw(RECORDS, limit=3)
    assert len(three) == 3 and sum(c.related for c in three) == 2
    assert draw(RECORDS, limit=3, seed=5) == draw(RECORDS, limit=3, seed=5)  # seeded
    assert len(draw(RECORDS, limit=1)) == 1


def test_cohen_kappa_by_hand():
    # Observed agreement 3/4; the first says yes to 2/4, the second to 1/4:
    # expected agreement 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa (0.75 - 0.5) / 0.5 = 0.5.
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == 0.5
    assert cohen_kappa([True, False], [True, False]) == 1.0
    assert cohen_kappa([False, False], [False, False]) is None  # no variation at all
    with pytest.raises(ValueError):
        cohen_kappa([True], [True, False])


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_agreement_lists_the_pairs_judged_differently(tmp_path):
    a = _write(
        tmp_path / "a.jsonl",
        [
            {"pair": "p1", "same": True, "kind": "paraphrase"},
            {"pair": "p2", "same": False, "kind": "unrelated"},
            {"pair": "p3", "same": True, "kind": "partial"},
        ],
    )
    b = _write(
        tmp_path / "b.jsonl",
        [
            {"pair": "p3", "same": False, "kind": "partial"},
            {"pair": "p1", "same": True, "kind": "near_copy"},
            {"pair": "p2", "same": False, "kind": "unrelated"},
        ],
    )
    result = agreement(read_verdicts(a), read_verdicts(b))
    assert result["agree"] == 2 and result["differ"] == ["p3"] and result["kind_agree"] == 2
    # p_o 2/3; yes rates 2/3 and 1/3: p_e = 2/9 + 2/9 = 4/9; kappa (2/3 - 4/9) / (5/9) = 0.4
    assert result["kappa"] == pytest.approx(0.4)


def test_agreement_refuses_files_that_do_not_cover_the_same_pairs(tmp_path):
    a = _write(tmp_path / "a.jsonl", [{"pair": "p1", "same": True}])
    b = _write(tmp_path / "b.jsonl", [{"pair": "p2", "same": True}])
    with pytest.raises(VerdictFileError, match="different pairs"):
        agreement(read_verdicts(a), read_verdicts(b))
    c = _write(tmp_path / "c.jsonl", [{"pair": "p1", "same": "yes"}])
    with pytest.raises(VerdictFileError, match="true or false"):
        read_verdicts(c)


def test_draw_and_agree_on_the_command_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    write_manifest(run, RunManifest(suite="s", provider="local", model="m", params={}))
    (run / "cases.jsonl").write_text("".join(r.to_line() for r in RECORDS), encoding="utf-8")
    out, blind = tmp_path / "pairs.jsonl", tmp_path / "blind.jsonl"
    assert main(["matchers", "draw", str(run), "--out", str(out), "--blind", str(blind)]) == 0
    assert "wrote 4 pairs (2 related, 2 unrelated;" in capsys.readouterr().out
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    # Model "m" is not the embedded model: its pairs are capable_run's, ids c0001...
    assert [r["pair"] for r in rows] == ["c0001", "c0002", "c0003", "c0004"]
    assert all(r["same"] is None and r["kind"] is None and "keywords" in r for r in rows)
    seen = [json.loads(x) for x in blind.read_text(encoding="utf-8").splitlines()]
    assert all(set(r) == {"pair", "lang", "gold", "predicted", "names"} for r in seen)

    verdicts = _write(tmp_path / "v.jsonl", [{"pair": r["pair"], "same": False} for r in rows])
    assert main(["matchers", "agree", str(verdicts), str(verdicts)]) == 0
    assert "same verdict on 4 (100.0%)" in capsys.readouterr().out

    assert main(["matchers", "draw", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert main(["matchers", "agree", str(verdicts), str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_agree_writes_the_judged_pairs_with_the_agreed_or_settled_verdicts(tmp_path, capsys):
    drawn = _write(
        tmp_path / "drawn.jsonl",
        [
            {
                "pair": "p1",
                "lang": "en",
                "gold": "g1",
                "predicted": "x1",
                "same": None,
                "kind": None,
            },
            {
                "pair": "p2",
                "lang": "zh",
                "gold": "g2",
                "predicted": "x2",
                "same": None,
                "kind": None,
            },
        ],
    )
    a = _write(
        tmp_path / "a.jsonl",
        [
            {"pair": "p1", "same": True, "kind": "paraphrase"},
            {"pair": "p2", "same": True, "kind": "partial"},
        ],
    )
    b = _write(
        tmp_path / "b.jsonl",
        [
            {"pair": "p1", "same": True, "kind": "paraphrase"},
            {"pair": "p2", "same": False, "kind": "partial"},
        ],
    )
    out = tmp_path / "pairs.jsonl"
    args = ["matchers", "agree", str(a), str(b), "--drawn", str(drawn), "--out", str(out)]
    assert main(args) == 2  # p2 differs and nobody settled it
    assert "p2: the judges differ and it is not settled" in capsys.readouterr().err
    settled = _write(tmp_path / "s.jsonl", [{"pair": "p2", "same": False, "kind": "near_miss"}])
    assert main([*args, "--settled", str(settled)]) == 0
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["same"], r["kind"]) for r in rows] == [(True, "paraphrase"), (False, "near_miss")]
    assert rows[1]["judges"] == {"first": True, "second": False, "settled": False}
    assert rows[0]["judges"]["settled"] is None
    # The written file is a judged-pairs file that matchers evaluate reads.
    assert main(["matchers", "evaluate", str(out), "--matcher", "fuzzy"]) == 0


def _run(tmp_path, name, model):
    run = tmp_path / name
    run.mkdir()
    write_manifest(run, RunManifest(suite="s", provider="local", model=model, params={}))
    (run / "cases.jsonl").write_text("".join(r.to_line() for r in RECORDS), encoding="utf-8")
    return str(run)


def _rows(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_draw_records_source_model_and_prefix_and_keeps_them_from_the_judges(tmp_path, capsys):
    run = _run(tmp_path, "run", "gpt-x")
    out, blind = tmp_path / "pairs.jsonl", tmp_path / "blind.jsonl"
    args = ["matchers", "draw", run, "--out", str(out), "--blind", str(blind)]
    assert main([*args, "--source", "capable_run", "--model", "gpt-4o", "--prefix", "g4-"]) == 0
    assert "source capable_run, model gpt-4o, ids g4-0001..." in capsys.readouterr().out
    rows = _rows(out)
    assert [r["pair"] for r in rows] == ["g4-0001", "g4-0002", "g4-0003", "g4-0004"]
    assert {(r["source"], r["model"]) for r in rows} == {("capable_run", "gpt-4o")}
    # Blind as before: the two facts, the language and the names; no source, model,
    # keywords, case or verdict.
    assert all(set(r) == {"pair", "lang", "gold", "predicted", "names"} for r in _rows(blind))

    # Without the flags: the run's model, and the source that fits it.
    assert main(["matchers", "draw", run, "--out", str(out)]) == 0
    assert {(r["source"], r["model"], r["pair"][0]) for r in _rows(out)} == {
        ("capable_run", "gpt-x", "c")
    }
    embedded = _run(tmp_path, "embedded", "SmolLM2-135M-Instruct")
    assert main(["matchers", "draw", embedded, "--out", str(out)]) == 0
    rows = _rows(out)
    assert {(r["source"], r["model"]) for r in rows} == {("embedded_run", "SmolLM2-135M-Instruct")}
    assert rows[0]["pair"] == "p0001"  # today's ids for the embedded model's pairs


def test_draw_refuses_an_unnamed_model_among_several_and_a_bad_prefix(tmp_path, capsys):
    a, b = _run(tmp_path, "a", "gpt-x"), _run(tmp_path, "b", "claude-y")
    out = str(tmp_path / "pairs.jsonl")
    assert main(["matchers", "draw", a, b, "--out", out]) == 2
    assert "2 models (claude-y, gpt-x): name the one to record with --model" in (
        capsys.readouterr().err
    )
    assert main(["matchers", "draw", a, b, "--out", out, "--model", "mixed"]) == 0
    assert {r["model"] for r in _rows(tmp_path / "pairs.jsonl")} == {"mixed"}
    assert main(["matchers", "draw", a, "--out", out, "--prefix", "c 1"]) == 2
    assert "--prefix 'c 1'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: not a source draw can record
        main(["matchers", "draw", a, "--out", out, "--source", "written"])


def test_even_langs_takes_the_related_pairs_from_each_language_in_turn():
    # Three English related pairs and one Chinese: a limit of 2 gives one of each
    # (the plain draw may give two English), and every pair once.
    many = [
        record(f"e{i}", "en", [f"The user is allergic to peanuts {i}."], [GOLD_PEANUT])
        for i in range(3)
    ] + [RECORDS[1]]
    even = draw(many, limit=2, seed=0, even_langs=True)
    assert sorted(c.lang for c in even) == ["en", "zh"]
    assert all(c.related for c in even)
    assert len(draw(many, limit=10, even_langs=True)) == len(draw(many))
