"""Runs with ``--matcher`` through the real OpenAI provider against the loopback server:
the matcher changes fact_recall and is named in the summary, the reports and
the comparison; the judge goes through the LLM layer (its own stage, the cache, another
model when asked) and an unusable judge answer is counted as no match and reported."""

import json
import re
from pathlib import Path

import pytest

from hy_eval.harness import load_suite
from hy_eval.harness.analysis import CompareError, compare, run_outcomes
from hy_eval.harness.report import comparison_text, write_compare_page
from hy_eval.harness.run import Runner
from hy_eval.harness.runlog import RunSummary
from tests.harness.scripted_suite import SuiteModel, scripted_config
from tests.loopback import Reply, openai_completion

CASES = [
    # A paraphrase the keywords miss (no "Charité"), in English and in Chinese.
    (
        "en-nurse",
        "en",
        "The user works as a nurse at a hospital in Berlin.",
        ["nurse", "Charité"],
        "The user is a nurse at a Berlin hospital.",
    ),
    ("zh-nurse", "zh", "用户在柏林当护士", ["护士", "夏里特"], "用户是柏林的护士"),
    # Another object: no matcher should pair these.
    ("en-drink", "en", "The user likes coffee.", ["coffee"], "The user likes tea."),
]


def write_suite(folder):
    folder.mkdir()
    lines = []
    for cid, lang, text, keywords, _ in CASES:
        lines.append(
            json.dumps(
                {
                    "id": cid,
                    "lang": lang,
                    "rules": ["A1"],
                    "messages": [
                        {"role": "user", "name": "Tim", "content": f"story {cid}"},
                        {"role": "assistant", "name": "John", "content": "Nice."},
                    ],
                    "expect": {
                        "facts": [
                            {"subject": "user", "owner": "user", "text": text, "keywords": keywords}
                        ]
                    },
                },
                ensure_ascii=False,
            )
        )
    (folder / "m.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_suite(str(folder))


JUDGE_PARTS = re.compile(
    r"(?:Reference fact:|参考事实：)\n(.*)\n\n(?:System's fact:|系统写的事实：)\n(.*)", re.S
)


class JudgedSuiteModel(SuiteModel):
    """The scripted pipeline model, which also judges: ``same`` holds the predicted
    texts judged the same as their gold fact; ``malformed`` those answered with text that
    is no JSON."""

    def __init__(self, cases, same=(), malformed=()):
        ext = {
            cid: {"facts": [{"text": pred, "owner": "user"}], "basic_info": {}}
            for cid, _, _, _, pred in CASES
        }
        super().__init__(cases, ext)
        self.same, self.malformed = set(same), set(malformed)
        self.judge_requests = []

    def answer(self, req):
        fmt = (req.body.get("response_format") or {}).get("json_schema") or {}
        if fmt.get("name") != "fact_judgement":
            return super().answer(req)
        self.judge_requests.append(req)
        _gold, predicted = JUDGE_PARTS.search(req.messages[-1]["content"]).groups()
        if predicted.strip() in self.malformed:
            return Reply(body=openai_completion("I think they are the same"))
        same = predicted.strip() in self.same
        return Reply(body=openai_completion(json.dumps({"same": same, "reason": "scripted"})))


def run(model, tmp_path, name, **kw):
    cfg = scripted_config(
        model.server, tmp_path / name, suite=str(tmp_path / "m"), retries=0, concurrency=4, **kw
    )
    return Runner(cfg).run()


def recall(summary):
    m = summary.metrics["fact_recall"]
    return m.num, m.den


@pytest.fixture
def suite(tmp_path):
    return write_suite(tmp_path / "m")


def test_keyword_and_fuzzy_runs_name_their_matcher_and_differ(tmp_path, suite):
    with JudgedSuiteModel(suite.cases) as model:
        kdir, keyword, _ = run(model, tmp_path, "k", matcher="keyword")
        fdir, fuzzy, _ = run(model, tmp_path, "f", matcher="fuzzy")
        sdir, strict, _ = run(model, tmp_path, "s")
    # Strict is the default, and every result says how far it can be trusted.
    assert strict.matcher == "strict"
    assert strict.matcher_quality.of("zh").precision.den > 0
    # A model that is not the embedded one reads the capable_run pairs' figures.
    assert (
        "How far it can be trusted: measured on the capable_run pairs of the test part"
        in (sdir / "report.md").read_text()
    )
    assert (
        "How far it can be trusted: measured on the capable_run pairs of the test part"
        in (sdir / "report.html").read_text()
    )
    assert keyword.matcher == "keyword" and keyword.judge is None
    assert recall(keyword) == (0, 3)
    assert fuzzy.matcher == "fuzzy" and recall(fuzzy) == (2, 3)  # not tea for coffee
    assert "matched by the `fuzzy` matcher" in (fdir / "report.md").read_text()
    assert "matched by the <code>fuzzy</code> matcher" in (fdir / "report.html").read_text()
    manifest = json.loads((fdir / "manifest.json").read_text())
    assert manifest["params"]["matcher"] == "fuzzy"
    # Runs of two matchers are not compared unless asked; then the output says so.
    with pytest.raises(CompareError, match="different matchers"):
        compare(run_outcomes(kdir), run_outcomes(fdir))
    result = compare(run_outcomes(kdir), run_outcomes(fdir), mixed_matchers=True)
    assert result.matcher.to_data() == {"a": "keyword", "b": "fuzzy"}
    assert "MIXED MATCHERS" in comparison_text(result)
    page = write_compare_page(str(tmp_path / "cmp.html"), result, str(kdir), str(fdir))
    assert "<strong>Mixed matchers</strong>" in Path(page).read_text()
    same = compare(run_outcomes(kdir), run_outcomes(kdir))
    assert "by the keyword matcher in both runs" in comparison_text(same)


def test_judge_run_counts_its_verdicts_and_reports_an_unusable_answer(tmp_path, suite):
    same = {"The user is a nurse at a Berlin hospital."}
    with JudgedSuiteModel(suite.cases, same=same, malformed={"用户是柏林的护士"}) as model:
        run_dir, summary, code = run(model, tmp_path, "j", matcher="judge")
    assert code == 0
    assert len(model.judge_requests) == 3  # one pair per case
    assert recall(summary) == (1, 3)  # the malformed verdict on the zh pair is no match
    assert summary.matcher == "judge"
    assert summary.judge.unusable == 1 and summary.judge.model == "scripted"
    assert summary.calls.tokens_by_stage["judge"].input_tokens > 0
    assert summary.calls.judge_calls is None  # the pipeline's own client judged
    records = {
        r["id"]: r for r in map(json.loads, (run_dir / "cases.jsonl").read_text().splitlines())
    }
    zh = records["zh-nurse"]["score"]["checks"][0]["detail"]
    assert list(zh["match"]["judge_unusable"].values())[0].startswith("unparsable answer")
    assert "1 unusable judge answers" in (run_dir / "report.md").read_text()
    # The Chinese pair was asked with the Chinese prompt.
    zh_prompt = [r for r in model.judge_requests if "用户是柏林的护士" in r.prompt_text]
    assert zh_prompt and "参考事实" in zh_prompt[0].prompt_text


def test_judge_on_another_model_is_cached_like_any_call(tmp_path, suite):
    same = {"The user is a nurse at a Berlin hospital.", "用户是柏林的护士"}
    cache = str(tmp_path / "cache.sqlite")
    with JudgedSuiteModel(suite.cases, same=same) as model:
        kw = dict(matcher="judge", judge_model="judge-m", cache_mode="read-write", cache_path=cache)
        _, first, _ = run(model, tmp_path, "j1", **kw)
        asked = len(model.judge_requests)
        _, second, _ = run(model, tmp_path, "j2", reuse=False, **kw)
    assert {r.body["model"] for r in model.judge_requests} == {"judge-m"}
    assert asked == 3 and len(model.judge_requests) == 3  # the second run asked nothing
    assert recall(first) == recall(second) == (2, 3)
    assert first.judge.model == "judge-m"
    assert first.calls.judge_calls.calls == 3
    assert second.calls.judge_calls.cache_hits == 3


def test_the_command_line_chooses_the_matcher_and_compare_refuses_a_mix(tmp_path, suite, capsys):
    from hy_eval.cli import main
    from tests.harness.scripted_suite import model_args

    base = [*suite_flag(suite), "--cache-mode", "off", "--quiet", "--retries", "0"]
    with JudgedSuiteModel(suite.cases, same={"用户是柏林的护士"}) as model:
        flags = [*model_args(model.server), "--api-key", "sk-dummy", *base]
        assert main(["run", *flags, "--matcher", "keyword", "--out", str(tmp_path / "k")]) == 0
        judged = ["--matcher", "judge", "--judge-model", "judge-m", "--out", str(tmp_path / "j")]
        assert main(["run", *flags, *judged]) == 0
    summary = json.loads((tmp_path / "j" / "summary.json").read_text())
    assert summary["matcher"] == "judge" and summary["judge"]["model"] == "judge-m"
    assert recall(RunSummary.model_validate(summary)) == (1, 3)
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "k"), str(tmp_path / "j")]) == 2
    assert "different matchers (A keyword, B judge)" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "k"), str(tmp_path / "j"), "--mixed-matchers"]) == 0
    assert "MIXED MATCHERS" in capsys.readouterr().out


def suite_flag(suite):
    """``--suite`` naming the folder the fixture wrote."""
    return ["--suite", str(suite.files[0].parent)]
