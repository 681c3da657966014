"""``operation_accuracy`` end to end: a scripted model that applies the
expected operations scores 1.0 in summary.json; one that only ADDs, or whose same-subject
UPDATE the guard keeps but the case did not expect, scores the hand-counted share."""

import json

from hy_eval.harness import RunConfig, Runner, load_suite
from tests.harness.scripted_suite import SuiteModel

CASES = [
    {
        "id": "op-1",
        "lang": "en",
        "rules": ["R1"],
        "existing": [
            {"id": "m1", "text": "The user lives in Leeds."},
            {"id": "m2", "text": "The user drinks black coffee every morning."},
        ],
        "messages": [
            {"role": "user", "name": "Tim", "content": "I left Leeds, I live in York now."},
            {"role": "assistant", "name": "John", "content": "I drink black coffee too."},
        ],
        "expect": {
            "facts": [
                {
                    "subject": "user",
                    "owner": "user",
                    "keywords": ["York"],
                    "text": "The user lives in York, not Leeds.",
                },
                {
                    "subject": "John",
                    "owner": "user",
                    "keywords": ["black coffee"],
                    "text": "John drinks black coffee every morning.",
                },
            ],
            "operations": {"m1": ["SUPERSEDE", "UPDATE"], "m2": "NONE"},
        },
    },
    {
        "id": "op-2",
        "lang": "zh",
        "rules": ["R1"],
        "existing": [{"id": "m1", "text": "用户在上海工作。"}],
        "messages": [{"role": "user", "name": "小王", "content": "我不在上海工作了，去了杭州。"}],
        "expect": {
            "facts": [
                {
                    "subject": "user",
                    "owner": "user",
                    "keywords": ["杭州"],
                    "text": "用户不在上海工作了，在杭州工作。",
                }
            ],
            "operations": {"m1": "SUPERSEDE"},
        },
    },
]


def _run(tmp_path, cases, reconcile=None):
    folder = tmp_path / "ops"
    folder.mkdir(exist_ok=True)
    (folder / "cases.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8"
    )
    suite = load_suite(str(folder))
    # The gold texts as the extracted facts: they share words with the memories, so the
    # store search shows those to the reconcile step.
    extraction = {
        c.id: {"facts": [{"text": f.text, "owner": f.owner} for f in c.expect.facts]}
        for c in suite.cases
    }
    with SuiteModel(suite.cases, extraction, reconcile) as model:
        cfg = RunConfig(
            suite=str(folder),
            provider="openai",
            model="scripted",
            base_url=model.server.openai_url,
            api_key="sk-dummy",
            cache_mode="off",
            out=str(tmp_path / "run"),
            progress=False,
            retries=1,
        )
        run_dir, _, _ = Runner(cfg).run()
    on_disk = json.loads((run_dir / "summary.json").read_text())
    return on_disk["metrics"]["operation_accuracy"]


def test_expected_operations_score_one_in_summary_json(tmp_path):
    metric = _run(tmp_path, CASES)
    assert metric["value"] == 1.0 and metric["n"] == 2


def test_add_only_answers_meet_only_the_none_expectations(tmp_path):
    def add_all(n):
        return {
            "operations": [{"op": "ADD", "fact": i, "target_ids": [], "text": ""} for i in range(n)]
        }

    metric = _run(tmp_path, CASES, reconcile={"op-1": add_all(2), "op-2": add_all(1)})
    assert metric["value"] == 1 / 3  # only op-1's m2 (NONE) is met
