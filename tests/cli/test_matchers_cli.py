"""``hy-eval matchers evaluate`` on a small judged-pairs file written here:
hand-computed precision and recall per matcher, kind and language, the judge through the
loopback server (a malformed answer counts as "not the same"), and bad files refused."""

import json

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
