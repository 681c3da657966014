"""``hy-eval matchers evaluate`` on a small judged-pairs file written here:
hand-computed precision and recall per matcher, kind and language, pooled and per source
(with quality.json's ``by_source``), the judge through the
loopback server (a malformed answer counts as "not the same"), and bad files refused."""

import json
from pathlib import Path

import pytest

from hy_eval.cli import main
from hy_eval.harness.analysis import wilson_interval
from tests.loopback import LoopbackServer, Reply, openai_completion

PAIRS = [
    # 1: a paraphrase the keywords miss.
    dict(
        predicted="The user is a nurse at a Berlin hospital.",
        gold="The user works as a nurse at a hospital in Berlin.",
        lang="en",
        same=True,
        kind="paraphrase",
        keywords=["nurse", "Charité"],
    ),
    # 2: another object.
    dict(
        predicted="The user likes tea.",
        gold="The user likes coffee.",
        lang="en",
        same=False,
        kind="easy",
        keywords=["coffee"],
    ),
    # 3: the same words.
    dict(
        predicted="The user likes coffee.",
        gold="The user likes coffee.",
        lang="en",
        same=True,
        kind="easy",
        keywords=["coffee"],
    ),
    # 4: the other language: neither keyword nor fuzzy can see it.
    dict(
        predicted="The user is a nurse in Berlin.",
        gold="用户在柏林当护士",
        lang="zh",
        same=True,
        kind="other_language",
        keywords=["护士"],
    ),
    # 5: a number in another form: the keyword rule reads 两 as 2.
    dict(
        predicted="用户有两个孩子",
        gold="用户有2个孩子",
        lang="zh",
        same=True,
        kind="number_form",
        keywords=["2"],
    ),
    # 6: a part that drops the main point; no keywords, so keyword cannot decide.
    dict(
        predicted="The user went to Paris.",
        gold="The user went to Paris and Rome with Anna in May to see the museums.",
        lang="en",
        same=False,
        kind="partial",
    ),
]


def write_pairs(path, pairs=PAIRS):
    path.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in pairs) + "\n")
    return str(path)


def rate(num, den):
    lo, hi = wilson_interval(num / den, den)
    return {"value": num / den, "ci": [lo, hi], "num": num, "den": den}


def evaluate(tmp_path, *extra):
    out = tmp_path / "result.json"
    code = main(
        ["matchers", "evaluate", write_pairs(tmp_path / "p.jsonl"), "--json", str(out), *extra]
    )
    assert code == 0
    return json.loads(out.read_text())


def test_keyword_and_fuzzy_against_hand_computed_counts(tmp_path, capsys):
    result = evaluate(tmp_path)
    keyword, fuzzy = result["matchers"]["keyword"], result["matchers"]["fuzzy"]
    # keyword: accepts 3 and 5 (both the same); misses 1 and 4; pair 6 undecided.
    assert keyword["all"]["precision"] == rate(2, 2)
    assert keyword["all"]["recall"] == rate(2, 4)
    assert keyword["all"]["undecided"] == 1
    # fuzzy: also accepts the paraphrase 1; rejects 2 and the partial 6; misses 4.
    assert fuzzy["all"]["precision"] == rate(3, 3)
    assert fuzzy["all"]["recall"] == rate(3, 4)
    assert fuzzy["all"]["confusion"] == {"tp": 3, "fp": 0, "fn": 1, "tn": 2}
    assert fuzzy["kind"]["paraphrase"]["recall"] == rate(1, 1)
    assert keyword["kind"]["paraphrase"]["recall"] == rate(0, 1)
    assert fuzzy["lang"]["zh"]["recall"] == rate(1, 2)
    assert fuzzy["kind"]["partial"]["precision"]["value"] is None  # nothing accepted
    text = capsys.readouterr().out
    assert "6 judged pairs" in text
    assert "kind=other_language" in text and "lang=zh" in text
    assert "(1 undecided: no keywords)" in text


#: PAIRS' sources: the embedded model's run (1-3), written (4), a capable model's run (5, 6).
SOURCES = ["embedded_run"] * 3 + ["written", "capable_run", "capable_run"]


def test_every_matcher_per_source_language_and_kind(tmp_path, capsys):
    with_sources = [{**p, "source": s} for p, s in zip(PAIRS, SOURCES, strict=True)]
    path = write_pairs(tmp_path / "p.jsonl", with_sources)
    out, quality = tmp_path / "r.json", tmp_path / "quality.json"
    args = ["matchers", "evaluate", path, "--json", str(out), "--quality", str(quality)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    keyword, fuzzy = result["matchers"]["keyword"], result["matchers"]["fuzzy"]
    assert sorted(fuzzy["source"]) == ["capable_run", "embedded_run", "written"]
    # fuzzy accepts 1, 3, 5 (all the same), rejects 2, 4 (the same) and 6.
    embedded = fuzzy["source"]["embedded_run"]
    assert embedded["all"]["precision"] == rate(2, 2) and embedded["all"]["recall"] == rate(2, 2)
    assert list(embedded["lang"]) == ["en"]
    assert fuzzy["source"]["written"]["all"]["recall"] == rate(0, 1)
    assert fuzzy["source"]["written"]["all"]["precision"]["value"] is None
    capable = fuzzy["source"]["capable_run"]
    assert capable["lang"]["zh"]["recall"] == rate(1, 1)
    assert capable["lang_kind"]["en"]["partial"]["confusion"] == {
        "tp": 0,
        "fp": 0,
        "fn": 0,
        "tn": 1,
    }
    # keyword misses the paraphrase 1, accepts 3: per source, language and kind.
    k = keyword["source"]["embedded_run"]
    assert k["all"]["recall"] == rate(1, 2)
    assert k["lang_kind"]["en"]["paraphrase"]["recall"] == rate(0, 1)
    assert k["lang_kind"]["en"]["easy"]["precision"] == rate(1, 1)
    assert keyword["source"]["capable_run"]["all"]["undecided"] == 1  # pair 6: no keywords
    # Pooled as before.
    assert fuzzy["all"]["recall"] == rate(3, 4)
    text = capsys.readouterr().out
    assert "source=embedded_run lang=en kind=paraphrase" in text
    assert "source=written lang=zh" in text
    assert "pooled and per source" in text

    q = json.loads(quality.read_text())
    assert q["source"] == f"{Path(path).as_posix()} (6 judged pairs)"
    assert set(q["matchers"]) == {"strict", "keyword", "fuzzy"}
    assert q["matchers"]["fuzzy"]["all"] == fuzzy["all"]
    part = q["by_source"]["capable_run"]
    assert part["source"] == f"the capable_run pairs of {Path(path).as_posix()} (2 judged pairs)"
    assert part["matchers"]["fuzzy"] == {"all": capable["all"], **capable["lang"]}


def test_pairs_without_a_source_have_no_source_breakdown(tmp_path, capsys):
    result = evaluate(tmp_path)
    assert all(entry["source"] == {} for entry in result["matchers"].values())
    assert "source=" not in capsys.readouterr().out


def test_the_judge_through_the_loopback_server(tmp_path):
    def script(req):
        prompt = req.messages[-1]["content"]
        if "The user likes tea." in prompt:
            return Reply(body=openai_completion('{"same": "yes"}'))  # malformed: no boolean
        return Reply(body=openai_completion(json.dumps({"same": True, "reason": "x"})))

    with LoopbackServer(script) as server:
        result = evaluate(
            tmp_path,
            "--matcher",
            "judge",
            "--provider",
            "openai",
            "--model",
            "judge",
            "--base-url",
            server.openai_url,
            "--api-key",
            "sk-dummy",
            "--cache-mode",
            "off",
            "--retries",
            "0",
        )
        assert server.count == len(PAIRS)
    judge = result["matchers"]["judge"]
    # Said "same" to every pair but the malformed one (pair 2, counted as not the same):
    # right on 1, 3, 4, 5, wrong on 6.
    assert judge["all"]["precision"] == rate(4, 5)
    assert judge["all"]["recall"] == rate(4, 4)
    assert judge["all"]["confusion"]["tn"] == 1


def test_the_judges_answers_recorded_replay_the_same_figures(tmp_path):
    def script(req):
        return Reply(body=openai_completion(json.dumps({"same": True, "reason": "x"})))

    flags = ["--matcher", "judge", "--provider", "openai", "--model", "judge"]
    with LoopbackServer(script) as server:
        live = evaluate(
            tmp_path,
            *flags,
            "--base-url",
            server.openai_url,
            "--api-key",
            "sk-dummy",
            "--cache",
            str(tmp_path / "live.sqlite"),
            "--record",
            str(tmp_path / "judge.jsonl"),
        )
        asked = server.count
    replay_cache = str(tmp_path / "replay.sqlite")
    assert main(["cassette", "import", str(tmp_path / "judge.jsonl"), "--cache", replay_cache]) == 0
    (tmp_path / "result.json").unlink()
    replayed = evaluate(
        tmp_path,
        *flags,
        "--base-url",
        server.openai_url,
        "--api-key",
        "sk-dummy",
        "--cache",
        replay_cache,
        "--cache-mode",
        "replay-only",
    )
    assert asked == len(PAIRS) and replayed["matchers"] == live["matchers"]


def test_the_judge_replay_only_on_an_empty_cache_is_one_line_and_exit_4(tmp_path, capsys):
    # No answer stored: the judge's first pair misses; the command says so in one line.
    code = main(
        [
            "matchers",
            "evaluate",
            write_pairs(tmp_path / "p.jsonl"),
            "--matcher",
            "judge",
            "--provider",
            "openai",
            "--model",
            "judge",
            "--api-key",
            "sk-dummy",
            "--cache",
            str(tmp_path / "empty.sqlite"),
            "--cache-mode",
            "replay-only",
        ]
    )
    err = capsys.readouterr().err
    assert code == 4
    assert "no cached answer in replay-only mode" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"predicted": "a", "gold": "b", "lang": "fr", "same": true, "kind": "x"}', '"lang"'),
        ('{"predicted": "a", "gold": "b", "lang": "en", "same": 1, "kind": "x"}', '"same"'),
        ('{"predicted": "a", "gold": "b", "lang": "en", "same": true}', '"kind"'),
        (
            '{"predicted": "a", "gold": "b", "lang": "en", "same": true, "kind": "x", '
            '"keywords": [""]}',
            '"keywords"',
        ),
        (
            '{"predicted": "a", "gold": "b", "lang": "en", "same": true, "kind": "x", '
            '"source": "run"}',
            '"source"',
        ),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_line_is_refused_with_its_number(tmp_path, capsys, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(PAIRS[0]) + "\n" + line + "\n")
    assert main(["matchers", "evaluate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and message in err


def test_an_unknown_matcher_is_refused(tmp_path, capsys):
    assert main(["matchers", "evaluate", write_pairs(tmp_path / "p.jsonl"), "--matcher", "x"]) == 2
    assert "unknown x" in capsys.readouterr().err


def test_the_command_line_offers_exactly_the_registered_matchers():
    """``--matcher`` spells the list out so that ``--help`` imports nothing; it must
    still be the registry's list, in its order."""
    from hy_eval.cli._matchers import MATCHER_CHOICES
    from hy_eval.harness.scoring import MATCHERS

    assert tuple(MATCHERS) == MATCHER_CHOICES
