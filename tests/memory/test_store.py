"""The SQLite store: migrations, full-text search in English and Chinese, history, L0
versions, transactions."""

import sqlite3

import pytest

from hy_eval.memory import MemoryStore
from hy_eval.memory._schema import MIGRATIONS
from hy_eval.memory._search import search_terms


def test_migrations_are_recorded_and_run_once(tmp_path):
    path = tmp_path / "m.sqlite"
    store = MemoryStore(path)
    assert [v for v, _ in store.migrations()] == [v for v, _, _ in MIGRATIONS]
    store.close()
    store = MemoryStore(path)  # reopening runs nothing again
    assert len(store.migrations()) == len(MIGRATIONS)
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def seeded():
    store = MemoryStore()
    with store.transaction():
        for text in [
            "The user likes coffee.",
            "John likes coffee.",
            "John is a nurse in Berlin.",
            "用户喜欢喝咖啡。",
            "王伟在学校教钢琴。",
            "The user plays chess.",
        ]:
            store.insert("tim", text, "user")
        store.insert("other", "The user likes coffee.", "user")
    return store


def test_search_english_and_user_scoped():
    store = seeded()
    texts = [m.text for m in store.search("Does John drink coffee?", "tim", 3)]
    assert "John likes coffee." in texts and len(texts) <= 3
    assert all(m.user_id == "tim" for m in store.search("coffee", "tim", 10))
    assert store.search("zzzz", "tim") == []


def test_search_chinese_with_trigrams_and_two_character_words():
    store = seeded()
    assert [m.text for m in store.search("用户喜欢喝咖啡吗", "tim", 2)][0] == "用户喜欢喝咖啡。"
    assert "王伟在学校教钢琴。" in [m.text for m in store.search("钢琴", "tim")]
    assert search_terms("用户喜欢咖啡") == ["用户喜", "户喜欢", "喜欢咖", "欢咖啡"]
    assert search_terms("The user likes coffee") == ["likes", "coffee"]


def test_a_two_character_noun_inside_a_longer_run_is_searched():
    store = MemoryStore()
    with store.transaction():
        store.insert("tim", "用户在备考日语N2。", "user")
        store.insert("tim", "用户每周三练瑜伽。", "user")
        store.insert("tim", "用户喜欢吃辣。", "user")
    # No trigram is shared: 日语 sits in 用户日语 here, in 考日语 there.
    assert search_terms("用户日语考过了") and not {
        "用户日",
        "户日语",
        "日语考",
        "语考过",
        "考过了",
    } & set(search_terms("用户在备考日语N2。"))
    assert [m.text for m in store.search("用户日语考过了", "tim")] == ["用户在备考日语N2。"]
    assert [m.text for m in store.search("用户改练普拉提和瑜伽", "tim")] == ["用户每周三练瑜伽。"]
    # A verb or adverb inside a run is no search word: 喜欢 would find every liking.
    assert store.search("用户不太喜欢这部电影", "tim") == []


def test_update_delete_supersede_keep_events_and_fts_in_sync():
    store = seeded()
    with store.transaction():
        store.update(1, "The user likes tea.")
        store.delete(2)
        new = store.insert("tim", "John is a doctor in Berlin.", "user")
        store.supersede(3, new)
    assert [m.text for m in store.search("tea", "tim")] == ["The user likes tea."]
    assert [e["op"] for e in store.history(1)] == ["ADD", "UPDATE"]
    assert store.get(2).status == "deleted" and store.search("John likes coffee", "tim", 10)
    assert all(m.id != 2 for m in store.search("coffee", "tim", 10))
    assert store.get(3).superseded_by == new


def test_profile_versions():
    store = MemoryStore()
    with store.transaction():
        store.write_profile("tim", {"name": "Tim"})
        store.write_profile("tim", {"name": "Tim", "employer": "Stripe"})
    assert store.profile("tim") == {"name": "Tim", "employer": "Stripe"}
    assert [v["version"] for v in store.profile_versions("tim")] == [1, 2]


def test_transaction_rolls_back_on_error():
    store = seeded()
    before = store.snapshot("tim")
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.insert("tim", "half", "user")
            raise RuntimeError("boom")
    assert store.snapshot("tim") == before


def test_owner_is_constrained():
    store = MemoryStore()
    with pytest.raises(sqlite3.IntegrityError):
        with store.transaction():
            store.insert("tim", "x", "john")


def _workload(store, texts):
    """Writes of every kind, then what a case reads back: ids, snapshot, search order."""
    with store.transaction():
        ids = [store.insert("u1", t, "user" if i % 2 else "agent") for i, t in enumerate(texts)]
        store.insert("u2", "another user's coffee", "user")
        store.update(ids[0], texts[0] + " every morning")
        store.supersede(ids[1], ids[2])
        store.delete(ids[3])
        store.write_profile("u1", {"name": "Tim"})
        store.write_profile("u1", {"name": "Tim", "employer": "Stripe"})
        store.add_l1_raw("u1", "[user]: hello")
    return (
        ids,
        store.snapshot("u1"),
        [m.id for m in store.search("coffee tea morning 喜欢喝咖啡", "u1")],
        store.history(ids[0]),
    )


def _without_times(result):
    ids, snap, found, history = result
    return ids, snap, found, [{k: v for k, v in e.items() if k != "at"} for e in history]


def test_a_cleared_store_behaves_as_a_fresh_one():
    """The harness reuses one in-memory store per worker (MemoryStore.clear): whatever a
    case left, the next case must see ids from 1, an empty profile, no L1_RAW and the
    same full-text ranking as on a new store (E6: a case's result does not depend on the
    cases run before it)."""
    first = ["The user likes coffee.", "John drinks tea.", "用户喜欢喝咖啡", "Mary likes coffee."]
    second = ["I drink coffee every day.", "tea is fine", "John likes coffee too.", "喜欢喝咖啡"]
    used = MemoryStore()
    _workload(used, first)
    used.clear()
    assert used.snapshot("u1") == {
        "memories": [],
        "profile": {},
        "profile_versions": 0,
        "l1_raw": [],
        "events": 0,
    }
    assert used.search("coffee", "u1") == [] and used.search("coffee", "u2") == []
    assert _without_times(_workload(used, second)) == _without_times(
        _workload(MemoryStore(), second)
    )
    assert [v for v, _ in used.migrations()] == [v for v, _, _ in MIGRATIONS]
