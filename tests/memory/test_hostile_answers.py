"""Answers that break the schema's promises, through the real OpenAI provider against the
loopback server: repeated target ids (R3) and answers past the schema's size limits."""

import asyncio

import pytest

from hy_eval.memory import MemoryStore
from hy_eval.memory._extract import EXTRACTION_SCHEMA

from .scripted import ScriptedModel, seed

# The limits the schemas promise (at most 8 facts of 120 characters, L0 values of 80).
MAX_FACTS, MAX_FACT_CHARS, MAX_PROFILE_CHARS, MAX_OP_TEXT_CHARS = 8, 120, 80, 120
assert EXTRACTION_SCHEMA["properties"]["facts"]["maxItems"] == MAX_FACTS

TIM = [{"role": "user", "name": "Tim", "content": "I now like green tea and coffee."}]


def add(client, messages=TIM, user_id="tim"):
    return asyncio.run(client.add(messages, user_id))


@pytest.mark.parametrize(
    "targets",
    [["m1", "m1"], ["m1", "m1", "m1", "m1"], ["m1", "m2", "m1"]],
    ids=["twice", "four-times", "m1-m2-m1"],
)
def test_an_update_naming_a_memory_twice_never_deletes_it(targets):
    store = MemoryStore()
    m1, m2 = seed(store, "tim", "The user likes tea.", "The user likes green tea.")
    new = "The user likes green tea and coffee."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(
            {"operations": [{"op": "UPDATE", "fact": 0, "target_ids": targets, "text": new}]}
        )
        result = add(model.client(store))
    short = result.reconciliation.short_ids  # m1, m2 as the model saw them
    first, other = short["m1"], short["m2"]
    assert {first, other} == {m1, m2}
    assert store.get(first).status == "active" and store.get(first).text == new
    assert new in [m.text for m in store.search("green tea", "tim")]
    merged = "m2" in targets
    assert store.get(other).status == ("deleted" if merged else "active")
    (op,) = result.reconciliation.applied
    assert op.targets == ((first, other) if merged else (first,))
    assert op.note == f"{len(targets) - len(set(targets))} repeated target id(s) ignored"
    assert [e["op"] for e in store.history(first)] == ["ADD", "UPDATE"]


@pytest.mark.parametrize("op", ["DELETE", "SUPERSEDE"])
def test_other_operations_act_once_per_named_memory(op):
    store = MemoryStore()
    [m1] = seed(store, "tim", "The user likes tea.")
    new = "The user likes coffee."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(
            {"operations": [{"op": op, "fact": 0, "target_ids": ["m1", "m1"], "text": new}]}
        )
        add(model.client(store))
    assert [e["op"] for e in store.history(m1)] == ["ADD", op]


CROSSING = {
    "crossing-updates": [("UPDATE", ["m1", "m2"]), ("UPDATE", ["m2", "m1"])],
    "update-then-supersede": [("UPDATE", ["m1"]), ("SUPERSEDE", ["m1"])],
    "update-then-delete": [("UPDATE", ["m1", "m2"]), ("DELETE", ["m2"])],
}


@pytest.mark.parametrize("ops", CROSSING.values(), ids=CROSSING.keys())
def test_a_memory_is_changed_by_one_operation_of_an_answer(ops):
    """R3. Fact 0 ``UPDATE [m1, m2]`` and fact 1 ``UPDATE [m2, m1]``, with no DELETE
    anywhere, ended with m1 and m2 both deleted and neither new text active, and nothing
    said why. The first operation (in fact order) that names a memory takes it; a later
    one loses it, and with nothing left an UPDATE or SUPERSEDE is added and a DELETE does
    nothing, with a note naming the fact that took the memory."""
    store = MemoryStore()
    seed(store, "tim", "The user likes tea.", "The user likes green tea.")
    texts = ["The user likes green tea and coffee.", "The user drinks coffee daily."]
    with ScriptedModel() as model:
        model.extract.append(
            {"facts": [{"text": t, "owner": "user"} for t in texts], "basic_info": {}}
        )
        model.reconcile.append(
            {
                "operations": [
                    {"op": op, "fact": i, "target_ids": ids, "text": texts[i]}
                    for i, (op, ids) in enumerate(ops)
                ]
            }
        )
        result = add(model.client(store))
    active = {m.text for m in store.get_all("tim")}
    assert texts[0] in active  # fact 0's change took effect
    second_op = ops[1][0]
    if second_op != "DELETE":
        assert texts[1] in active  # fact 1's text is kept, not lost with a deleted memory
    later = result.reconciliation.applied[1]
    assert later.targets == ()
    assert later.op == ("NONE" if second_op == "DELETE" else "ADD")
    assert "already changed by fact 0" in later.note
    # The store's history says why as well.
    events = [e for m in store.get_all("tim") for e in store.history(m.id)]
    assert second_op == "DELETE" or any(
        "already changed by fact 0" in (e.get("note") or "") for e in events
    )


def test_an_oversized_extraction_is_cut_to_the_schema_limits_and_counted():
    store = MemoryStore()
    facts = [{"text": f"The user owns bike number {i}.", "owner": "user"} for i in range(10_000)]
    facts[0]["text"] = "The user " + "x" * 300_000
    with ScriptedModel() as model:
        model.extract.append(
            {"facts": facts, "basic_info": {"occupation": "a" * 5000, "location": "Oslo"}}
        )
        result = add(model.client(store))
    memories = store.get_all("tim")
    assert len(memories) == MAX_FACTS
    assert max(len(m.text) for m in memories) == MAX_FACT_CHARS
    assert memories[0].text.endswith("…") and memories[0].text.startswith("The user xxx")
    profile = store.profile("tim")
    assert len(profile["occupation"]) == MAX_PROFILE_CHARS and profile["location"] == "Oslo"
    assert result.truncated == {
        "facts_dropped": 10_000 - MAX_FACTS,
        "fact_texts_cut": 1,
        "profile_values_cut": 1,
    }


def test_an_answer_within_the_limits_is_not_touched():
    store = MemoryStore()
    text = "The user " + "y" * (MAX_FACT_CHARS - len("The user "))
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": text, "owner": "user"}] * 8, "basic_info": {}})
        result = add(model.client(store))
    assert {m.text for m in store.get_all("tim")} == {text}
    assert result.truncated == {}


def test_an_oversized_reconcile_answer_is_cut_and_counted():
    store = MemoryStore()
    # Five: the most memories search shows reconcile for one fact (top_k).
    ids = seed(store, "tim", *[f"The user likes tea number {i}." for i in range(5)])
    new = "The user likes tea number 1 and coffee."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        ops = [
            {
                "op": "UPDATE",
                "fact": 0,
                "target_ids": ["m1", "m2", "m3", "m4", "m5"],
                "text": "The user " + "z" * 1000,
            }
        ] + [{"op": "ADD", "fact": 0, "target_ids": [], "text": "again"}] * 5000
        model.reconcile.append({"operations": ops})
        result = add(model.client(store))
    assert result.reconciliation.fallback is None
    assert result.truncated == {
        "operations_dropped": 5000 + 1 - 24,
        "target_ids_dropped": 1,
        "operation_texts_cut": 1,
    }
    short = result.reconciliation.short_ids
    assert sorted(short.values()) == sorted(ids)
    active = store.get_all("tim")
    # m1 updated, m2-m4 merged into it, m5 past the schema's four targets kept.
    assert {m.id for m in active} == {short["m1"], short["m5"]}
    assert len(store.get(short["m1"]).text) == MAX_OP_TEXT_CHARS
