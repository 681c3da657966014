"""Hostile answers to the ``judge`` matcher, and hostile fields in any answer: the judge's
model calls run under the pipeline's per-case rule (an answer costs its own verdict or
case, never the run), and what a server writes is bounded before a record keeps it
(docs/reliability.md, "Hostile input, round two").

Every request goes through the real OpenAI or Anthropic SDK to loopback servers."""

import json

import pytest

from hy_eval.harness.run import Runner
from hy_eval.harness.scoring import REASON_LIMIT, Judge
from hy_eval.llm.core._base import LABEL_LIMIT
from tests.harness.run.test_matcher_runs import CASES, JudgedSuiteModel, write_suite
from tests.harness.scripted_suite import scripted_config
from tests.loopback import LoopbackServer, Reply, anthropic_message, openai_completion

SAME = '{"same": true, "reason": "the same"}'


def judge_body(**usage):
    body = openai_completion(SAME)
    body["usage"].update(usage)
    return body


class HostileJudge(JudgedSuiteModel):
    """The scripted pipeline model, whose judge answers every pair with ``body``."""

    def __init__(self, cases, body):
        super().__init__(cases)
        self.body = body

    def answer(self, req):
        fmt = (req.body.get("response_format") or {}).get("json_schema") or {}
        if fmt.get("name") != "fact_judgement":
            return super().answer(req)
        self.judge_requests.append(req)
        return Reply(body=self.body)


def run(model, tmp_path, matcher="judge", **kw):
    cfg = scripted_config(
        model.server,
        tmp_path / "run",
        suite=str(tmp_path / "m"),
        retries=0,
        concurrency=2,
        matcher=matcher,
        **kw,
    )
    return Runner(cfg).run()


def records(run_dir):
    lines = (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


HOSTILE_OPENAI = {
    "prompt_tokens Infinity": judge_body(prompt_tokens=float("inf")),
    "prompt_tokens -1e9": judge_body(prompt_tokens=-(10**9)),
    "completion_tokens 1e40": judge_body(completion_tokens=10**40),
    "prompt_tokens a string": judge_body(prompt_tokens="12"),
}


@pytest.mark.parametrize("body", HOSTILE_OPENAI.values(), ids=HOSTILE_OPENAI.keys())
def test_a_hostile_openai_judge_answer_costs_its_verdict_not_the_run(tmp_path, body):
    """``usage.prompt_tokens: Infinity`` from the judge was a traceback, exit 1, no
    summary; token counts of -10^9 and 10^40 were accepted into the cost. Now each such
    answer is malformed: its verdict is unusable (no match, reported), the run ends."""
    suite = write_suite(tmp_path / "m")
    with HostileJudge(suite.cases, body) as model:
        run_dir, summary, code = run(model, tmp_path)
    assert code == 0 and (run_dir / "summary.json").exists()
    assert len(records(run_dir)) == len(CASES)
    assert summary.judge.unusable == len(CASES)
    assert summary.metrics["fact_recall"].num == 0
    detail = records(run_dir)["en-nurse"]["score"]["checks"][0]["detail"]
    (problem,) = detail["match"]["judge_unusable"].values()
    assert problem.startswith("provider error: server: openai: malformed response body")
    # The judge's tokens count nothing they did not report truthfully.
    judged = summary.calls.tokens_by_stage.get("judge")
    assert judged is None or judged.input_tokens < 10**6


def test_a_hostile_anthropic_judge_answer_costs_its_verdict_not_the_run(tmp_path, monkeypatch):
    """Anthropic ``content: null`` from a judge on another provider: a traceback and exit 1;
    now unusable verdicts and a finished run. The same body costs the pipeline a case."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dummy-judge-0001")
    suite = write_suite(tmp_path / "m")
    body = anthropic_message(tool_input={"same": True, "reason": "x"})
    body["content"] = None
    judge = LoopbackServer(lambda req: Reply(body=body))
    with JudgedSuiteModel(suite.cases) as model, judge:
        run_dir, summary, code = run(
            model,
            tmp_path,
            judge_provider="anthropic",
            judge_model="claude-judge",
            judge_base_url=judge.anthropic_url,
        )
    assert code == 0 and judge.count == len(CASES)
    assert summary.judge.unusable == len(CASES)
    assert len(records(run_dir)) == len(CASES)


def test_an_unexpected_error_while_matching_costs_its_case_only(tmp_path, monkeypatch):
    """Whatever the judge raises that no check foresaw is handled as the pipeline's
    unexpected errors are: the case's record says why, the other cases are scored."""
    suite = write_suite(tmp_path / "m")
    real = Judge.same

    async def failing(self, predicted, gold, lang, label=""):
        if lang == "zh":
            raise OverflowError("cannot convert float infinity to integer")
        return await real(self, predicted, gold, lang, label)

    monkeypatch.setattr(Judge, "same", failing)
    with JudgedSuiteModel(suite.cases, same={"The user is a nurse at a Berlin hospital."}) as m:
        run_dir, summary, _ = run(m, tmp_path)
    recs = records(run_dir)
    assert recs["zh-nurse"]["status"] == "error"
    assert recs["zh-nurse"]["error"] == (
        "internal error while matching (judge): OverflowError: cannot convert float "
        "infinity to integer"
    )
    assert recs["en-nurse"]["status"] == "ok" and recs["en-nurse"]["score"]["passed"]
    assert summary.metrics["error_rate"].num == 1


def test_judge_reasons_and_server_labels_are_bounded(tmp_path):
    """A 3,000,000-character judge reason was kept whole (a 3 MB record, a 3.2 MB
    report.html) and a 1 MB ``finish_reason`` was stored: now the reason is cut to the
    schema's 300 characters and the labels to a line."""
    suite = write_suite(tmp_path / "m")
    body = openai_completion(
        json.dumps({"same": True, "reason": "r" * 3_000_000}),
        finish_reason="f" * 1_000_000,
        model="m" * 1_000_000,
    )
    with HostileJudge(suite.cases, body) as model:
        run_dir, summary, code = run(model, tmp_path)
    assert code == 0 and summary.metrics["fact_recall"].num == len(CASES)
    detail = records(run_dir)["en-nurse"]["score"]["checks"][0]["detail"]
    assert detail["match"]["reason"] == "r" * REASON_LIMIT
    text = (run_dir / "cases.jsonl").read_text(encoding="utf-8")
    assert "f" * (LABEL_LIMIT + 1) not in text and "m" * (LABEL_LIMIT + 1) not in text
    assert len(text) < 100_000
    assert (run_dir / "report.html").stat().st_size < 1_000_000


@pytest.mark.parametrize("usage", [{"prompt_tokens": -(10**9)}, {"completion_tokens": 10**40}])
def test_impossible_token_counts_from_the_pipeline_cost_the_case(tmp_path, usage):
    """The pipeline's own answers with impossible token counts: the case is a provider
    error (malformed answer), not a cost of -10^9 or 10^40 tokens in the summary."""
    suite = write_suite(tmp_path / "m")

    class Lying(JudgedSuiteModel):
        def answer(self, req):
            reply = super().answer(req)
            if reply.body and "usage" in reply.body:
                reply.body["usage"].update(usage)
            return reply

    with Lying(suite.cases) as model:
        run_dir, summary, _ = run(model, tmp_path, matcher="strict")
    assert {r["status"] for r in records(run_dir).values()} == {"error"}
    assert all("malformed response body" in r["error"] for r in records(run_dir).values())
    tokens = summary.calls.tokens_by_stage
    assert all(0 <= v.input_tokens < 10**6 for v in tokens.values())
