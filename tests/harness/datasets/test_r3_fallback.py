"""R3 on the dataset: every multi_speaker case that claims rule R3 is run with
reconcile answers that cannot be used (unparseable text, unknown memory ids, a provider
error from the loopback server). Each must reach the reconcile step (it has existing
memories the store search returns for its facts), ADD every new fact, and leave every
existing memory as it was."""

import asyncio

import pytest

from hy_eval.harness import Case, load_suite, run_case
from hy_eval.llm import LLMClient, PriceTable, RetryPolicy, make_provider
from hy_eval.memory import PromptLibrary
from tests.harness.scripted_suite import SuiteModel, gold_text
from tests.loopback import Reply

R3_CASES = [c for c in load_suite("multi_speaker").cases if "R3" in c.rules]


def gold_extraction(case):
    """The gold facts as extracted, in their reference wording where the case gives one
    (it shares words with the memories, as a good model's fact would)."""
    facts = [
        {"text": f.text or gold_text(case, f.subject, f.keywords), "owner": f.owner}
        for f in case.expect.facts
    ]
    return {"facts": facts, "basic_info": {}}


UNUSABLE = {
    "unparseable": lambda case: '{"operations": [{"op": "UPDATE", "fact": 0, "target',
    "unknown_ids": lambda case: {
        "operations": [
            {"op": "UPDATE", "fact": i, "target_ids": ["m999"], "text": ""}
            for i in range(len(case.expect.facts))
        ]
    },
    "provider_error": lambda case: Reply(status=500, body={"error": {"message": "down"}}),
}
FALLBACK = {
    "unparseable": "unusable answer",
    "unknown_ids": "unusable answer: unknown memory id(s) m999",
    "provider_error": "provider error",
}


def _problems(case, record, kind):
    """What breaks R3 in one case's record (an empty list when it holds)."""
    if record["status"] != "ok":
        return [f"{case.id}: {record['error']}"]
    if "reconcile" not in record["stages"]:
        return [f"{case.id}: reconcile never ran (no existing memory found for its facts)"]
    out = []
    if not (record["fallback"] or "").startswith(FALLBACK[kind]):
        out.append(f"{case.id}: fallback {record['fallback']!r}")
    applied = record["operations"]["applied"]
    if [o["op"] for o in applied] != ["ADD"] * len(record["facts"]):
        out.append(f"{case.id}: applied {[o['op'] for o in applied]}")
    after = {m["id"]: m for m in record["store_after"]["memories"]}
    for mem in case.existing:
        row = after.get(record["existing_ids"][mem.id])
        if row is None or row["text"] != mem.text or row["status"] != "active":
            out.append(f"{case.id}: existing {mem.id} changed to {row}")
    if len(after) != len(case.existing) + len(record["facts"]):
        out.append(f"{case.id}: {len(after)} memories after, not existing + facts")
    return out


async def _run_all(model, cases, kind):
    provider = make_provider("openai", "scripted", base_url=model.server.openai_url, api_key="k")
    llm = LLMClient(provider, retry=RetryPolicy(max_retries=0, base_delay=0.01))
    problems = []
    for case in cases:
        record = await run_case(case, llm, PromptLibrary("default"), PriceTable(), guard=True)
        problems += _problems(case, record.model_dump(mode="json"), kind)
    return problems


@pytest.mark.parametrize("kind", sorted(UNUSABLE))
def test_unusable_reconcile_answers_add_every_fact_and_change_nothing(kind):
    assert R3_CASES, "no multi_speaker case claims R3"
    extraction = {c.id: gold_extraction(c) for c in R3_CASES}
    reconcile = {c.id: UNUSABLE[kind](c) for c in R3_CASES}
    with SuiteModel(R3_CASES, extraction, reconcile) as model:
        problems = asyncio.run(_run_all(model, R3_CASES, kind))
    assert problems == []


def test_the_suite_has_ten_r3_cases():
    # The suite is built to hold at least 10 cases that reach the R3 fallback.
    assert len(R3_CASES) >= 10, [c.id for c in R3_CASES]


SAMPLE = Case.model_validate(
    {
        "id": "r3-sample",
        "lang": "en",
        "rules": ["R3"],
        "existing": [{"id": "m1", "text": "The user drinks black coffee every morning."}],
        "messages": [
            {"role": "user", "name": "Tim", "content": "Coffee time."},
            {"role": "assistant", "name": "John", "content": "I drink black coffee too."},
        ],
        "expect": {
            "facts": [
                {
                    "subject": "John",
                    "owner": "user",
                    "keywords": ["black coffee"],
                    "text": "John drinks black coffee every morning.",
                }
            ],
            "untouched": ["m1"],
        },
    }
)


def _sample_problems(kind, answer):
    with SuiteModel([SAMPLE], {SAMPLE.id: gold_extraction(SAMPLE)}, {SAMPLE.id: answer}) as model:
        return asyncio.run(_run_all(model, [SAMPLE], kind))


@pytest.mark.parametrize("kind", sorted(UNUSABLE))
def test_the_r3_check_passes_a_case_that_reaches_the_fallback(kind):
    assert _sample_problems(kind, UNUSABLE[kind](SAMPLE)) == []


def test_the_r3_check_can_fail():
    # A usable answer that UPDATEs the existing memory is no fallback: the check says so
    # (the guard turns the cross-subject UPDATE into ADD, so only the fallback differs).
    answer = {"operations": [{"op": "UPDATE", "fact": 0, "target_ids": ["m1"], "text": ""}]}
    problems = _sample_problems("unknown_ids", answer)
    assert problems == ["r3-sample: fallback None"]
