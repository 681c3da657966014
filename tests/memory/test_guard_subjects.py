"""Memories keep their subject and the guard compares it (A5, A8, R1, R2):
a numbered migration adds the column and backfills it, writes record the subject read
with the conversation's speakers, and ``unknown`` is no wildcard."""

import asyncio
import sqlite3

import pytest

from hy_eval.conversation import MessageError
from hy_eval.memory import MemoryStore
from hy_eval.memory._schema import MIGRATIONS

from .scripted import ScriptedModel, seed


def add(client, messages, user_id="tim", **kw):
    return asyncio.run(client.add(messages, user_id, **kw))


def update_answer(text, op="UPDATE"):
    return {"operations": [{"op": op, "fact": 0, "target_ids": ["m1"], "text": text}]}


def test_migration_3_adds_the_subject_and_backfills_existing_rows(tmp_path):
    # A store written before subjects were stored: migrations 1 and 2 only, rows without a subject.
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name, applied)")
    for version, name, steps in MIGRATIONS[:2]:
        for step in steps:
            db.execute(step)
        db.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    texts = ["The user likes coffee.", "John is a nurse in Berlin.", "助手推荐了攀岩馆。", "x"]
    for text in texts:
        db.execute(
            "INSERT INTO memories (user_id, text, owner, created, updated) "
            "VALUES ('tim', ?, 'user', 0, 0)",
            (text,),
        )
    db.close()
    store = MemoryStore(path)
    assert [v for v, _ in store.migrations()] == [1, 2, 3]
    assert store.subjects([1, 2, 3, 4]) == {
        1: "user",
        2: "other:john",  # no speakers are known to a migration
        3: "assistant",
        4: "unknown",
    }
    assert store.search("nurse Berlin", "tim")[0].text == texts[1]  # FTS untouched
    store.close()


def test_writes_record_the_subject():
    store = MemoryStore()
    with store.transaction():
        a = store.insert("tim", "John likes coffee.", "user")
        b = store.insert("tim", "He likes tea.", "user", subject="named:john")
        store.update(a, "The user likes coffee.")
    assert store.subjects([a, b]) == {a: "user", b: "named:john"}
    assert not hasattr(store.get(a), "subject")  # not a field of Memory (design note)


def test_guard_blocks_an_update_of_a_non_speaker_memory_ms_en_0083():
    # Tim and Jo speak; "John is a nurse in Berlin." is about John (other), not Jo.
    store = MemoryStore()
    [m1] = seed(store, "tim", "John is a nurse in Berlin.")
    new = "Jo is a nurse at the children's hospital."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(update_answer(new))
        result = add(
            model.client(store),
            [
                {"role": "user", "name": "Tim", "content": "You're a nurse too, Jo?"},
                {"role": "assistant", "name": "Jo", "content": "Yes, at the children's hospital."},
            ],
        )
    [event] = result.reconciliation.guard_events
    assert (event.fact_subject, event.target_subject, event.reason) == (
        "named:jo",
        "other:john",
        "cross_subject",
    )
    assert store.get(m1).text == "John is a nurse in Berlin."
    assert result.reconciliation.undecided == 0


@pytest.mark.parametrize("op", ["UPDATE", "DELETE", "SUPERSEDE"])
def test_unknown_is_no_wildcard(op):
    store = MemoryStore()
    [m1] = seed(store, "tim", "Works night shifts.")  # whose? nobody can tell
    new = "The user works day shifts now."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(update_answer(new, op))
        result = add(model.client(store), [{"role": "user", "name": "Tim", "content": "x"}])
    assert [o.op for o in result.reconciliation.applied] == ["ADD"]
    assert result.reconciliation.applied[0].note == f"guard: subject unknown, was {op}"
    [event] = result.reconciliation.guard_events
    assert (event.target_subject, event.reason) == ("unknown", "unknown_subject")
    assert result.reconciliation.undecided == 1
    assert store.get(m1).status == "active" and store.get(m1).text == "Works night shifts."


def test_guard_trusts_the_stored_subject_and_same_subject_merges():
    # Written while John spoke, the text alone no longer says whose it is.
    store = MemoryStore()
    with store.transaction():
        m1 = store.insert("tim", "He drinks coffee every day.", "user", subject="named:john")
    new = "John drinks espresso every day now."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(update_answer(new))
        result = add(
            model.client(store),
            [
                {"role": "user", "name": "Tim", "content": "Still on coffee, John?"},
                {"role": "assistant", "name": "John", "content": "Espresso now, every day."},
            ],
        )
    assert result.reconciliation.guard_events == []
    assert store.get(m1).text == new and store.subjects([m1]) == {m1: "named:john"}


def _alias_run(aliases):
    store = MemoryStore()
    [m1] = seed(store, "tim", "王伟 likes coffee.")  # found by search: "coffee"
    new = "Wang Wei prefers tea to coffee now."
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(update_answer(new))
        result = add(
            model.client(store),
            [
                {"role": "user", "name": "Tim", "content": "Still drinking coffee, Wang Wei?"},
                {"role": "assistant", "name": "王伟", "content": "No, tea now."},
            ],
            aliases=aliases,
        )
    return store, m1, result


def test_an_alias_counts_as_the_speaker_in_the_guard():
    store, m1, result = _alias_run({"王伟": ["Wang Wei"]})
    assert result.reconciliation.guard_events == []
    assert store.get(m1).text == "Wang Wei prefers tea to coffee now."
    assert store.subjects([m1]) == {m1: "named:王伟"}
    # Without the alias "Wang Wei" is someone else: added, not merged.
    store, m1, result = _alias_run(None)
    [event] = result.reconciliation.guard_events
    assert (event.fact_subject, event.target_subject) == ("other:wang wei", "named:王伟")
    assert store.get(m1).text == "王伟 likes coffee."


def test_an_alias_of_someone_who_does_not_speak_is_refused_and_nothing_written():
    store = MemoryStore()
    with ScriptedModel() as model, pytest.raises(MessageError, match="aliases: alias for 'Jo'"):
        add(
            model.client(store),
            [{"role": "user", "name": "Tim", "content": "x"}],
            aliases={"Jo": ["Joanna"]},
        )
    assert store.get_all("tim") == [] and store.l1_raw("tim") == []
