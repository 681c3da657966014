"""The seed examples end to end through the real OpenAI provider against the loopback
server with scripted answers (A1-A4, P1-P3, R1-R3, H1), in English and Chinese."""

import asyncio

import pytest

from hy_eval.memory import MemoryStore
from tests.loopback import Reply

from .scripted import ScriptedModel, schema_name, seed

TIM_JOHN = {
    "en": [
        {"role": "user", "name": "Tim", "content": "I work at Stripe."},
        {"role": "assistant", "name": "John", "content": "I am a nurse in Berlin."},
    ],
    "zh": [
        {"role": "user", "name": "Tim", "content": "我在 Stripe 工作。"},
        {"role": "assistant", "name": "John", "content": "我是住在柏林的护士。"},
    ],
}
TIM_JOHN_FACTS = {
    "en": ["The user works at Stripe.", "John is a nurse in Berlin."],
    "zh": ["用户在 Stripe 工作。", "John 是住在柏林的护士。"],
}


def add(client, messages, user_id="tim"):
    return asyncio.run(client.add(messages, user_id))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_A2_A4_P2_P3_tim_and_john(lang):
    with ScriptedModel() as model:
        # The model omits the user's name and gives nothing about John in basic_info.
        model.extract.append(
            {
                "facts": [{"text": t, "owner": "user"} for t in TIM_JOHN_FACTS[lang]],
                "basic_info": {"employer": "Stripe"},
            }
        )
        client = model.client()
        result = add(client, TIM_JOHN[lang])
        assert model.server.count == 1  # nothing related yet: no reconcile call
    assert result.lang == lang and result.round_trips == 1
    stored = {m.text: m.owner for m in client.get_all("tim")}
    assert stored == {t: "user" for t in TIM_JOHN_FACTS[lang]}  # A4: John is not "agent"
    profile = client.profile("tim")
    assert profile == {"name": "Tim", "employer": "Stripe"}  # P2 name written though omitted
    assert "nurse" not in str(profile) and "护士" not in str(profile)  # P3
    # H1: the conversation is stored in L1_RAW in its rendered form.
    assert client.store.l1_raw("tim") == [result.rendered]
    assert result.rendered.splitlines()[0] == (
        "用户名叫Tim" if lang == "zh" else "The user's name is Tim"
    )


def test_P2_model_name_for_another_speaker_is_dropped_and_visible():
    with ScriptedModel() as model:
        model.extract.append({"facts": [], "basic_info": {"name": "John"}})
        client = model.client()
        result = add(client, TIM_JOHN["en"])
    assert client.profile("tim")["name"] == "Tim"
    assert any("another speaker" in issue for issue in result.extraction.profile_issues)


COFFEE = {
    "en": (
        "The user likes coffee.",
        "John likes coffee.",
        [
            {"role": "user", "name": "Tim", "content": "John, do you drink coffee?"},
            {"role": "assistant", "name": "John", "content": "Yes, I love coffee."},
        ],
    ),
    "zh": (
        "用户喜欢咖啡。",
        "John 喜欢咖啡。",
        [
            {"role": "user", "name": "Tim", "content": "John，你喝咖啡吗？"},
            {"role": "assistant", "name": "John", "content": "喝啊，我很喜欢咖啡。"},
        ],
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_R1_R2_guard_blocks_cross_subject_update(lang):
    old, new, messages = COFFEE[lang]
    store = MemoryStore()
    [m1] = seed(store, "tim", old)
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(
            {"operations": [{"op": "UPDATE", "fact": 0, "target_ids": ["m1"], "text": new}]}
        )
        client = model.client(store)
        result = add(client, messages)
        assert model.server.count == 2  # extraction, then reconcile: two round trips
        reconcile_prompt = model.server.requests[1].body["messages"][1]["content"]
    assert "m1: " + old in reconcile_prompt and f"m{m1 + 1}" not in reconcile_prompt
    assert [o.op for o in result.reconciliation.raw] == ["UPDATE"]
    assert [o.op for o in result.reconciliation.applied] == ["ADD"]
    [event] = result.reconciliation.guard_events
    assert (event.fact_subject, event.target_subject) == ("named:john", "user")
    texts = sorted(m.text for m in client.get_all("tim"))
    assert texts == sorted([old, new])
    assert store.get(m1).text == old  # untouched


def test_R2_guard_off_lets_the_prompt_alone_be_measured():
    old, new, messages = COFFEE["en"]
    store = MemoryStore()
    [m1] = seed(store, "tim", old)
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(
            {"operations": [{"op": "UPDATE", "fact": 0, "target_ids": ["m1"], "text": new}]}
        )
        result = add(model.client(store, guard=False), messages)
    assert result.reconciliation.guard_events == []
    assert store.get(m1).text == new  # merged: exactly what the guard exists to stop


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(
    "answer",
    [
        "this is not json",
        '{"operations": [{"op": "UPDATE", "fact": 0, "target_ids": ["m9"], "text": "x"}]}',
        '{"operations": [{"op": "MERGE", "fact": 0, "target_ids": [], "text": "x"}]}',
        Reply(500, {"error": {"message": "down"}}),
    ],
    ids=["unparseable", "unknown-id", "wrong-schema", "provider-error"],
)
def test_R3_fallback_adds_and_touches_nothing(lang, answer):
    old, new, messages = COFFEE[lang]
    store = MemoryStore()
    [m1] = seed(store, "tim", old)
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.extend([answer, answer])  # a provider error is retried once
        result = add(model.client(store), messages)
    assert result.reconciliation.fallback
    assert [o.op for o in result.reconciliation.applied] == ["ADD"]
    assert store.get(m1).text == old and store.get(m1).status == "active"
    assert sorted(m.text for m in store.get_all("tim")) == sorted([old, new])
    assert store.history(m1) == [store.history(m1)[0]]  # only its own ADD event


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_supersede_keeps_history(lang):
    old, new = (
        ("John lives in Berlin.", "John lives in Hamburg.")
        if lang == "en"
        else ("John 住在柏林。", "John 住在汉堡。")
    )
    store = MemoryStore()
    [m1] = seed(store, "tim", old)
    with ScriptedModel() as model:
        model.extract.append({"facts": [{"text": new, "owner": "user"}], "basic_info": {}})
        model.reconcile.append(
            {"operations": [{"op": "SUPERSEDE", "fact": 0, "target_ids": ["m1"], "text": new}]}
        )
        result = add(model.client(store), [{"role": "assistant", "name": "John", "content": new}])
    new_id = result.written[0]["id"]
    assert store.get(m1).status == "superseded" and store.get(m1).superseded_by == new_id
    assert [m.text for m in store.get_all("tim")] == [new]
    assert [e["op"] for e in store.history(m1)] == ["ADD", "SUPERSEDE"]
    assert store.history(m1)[1]["before"] == old and store.history(m1)[1]["after"] == new


def test_jinja_in_content_reaches_the_model_verbatim():
    with ScriptedModel() as model:
        model.extract.append({"facts": [], "basic_info": {}})
        add(model.client(), [{"role": "user", "content": "{{ 7*7 }} {% if x %}y{% endif %}"}])
        sent = model.server.requests[0].body["messages"][1]["content"]
    assert "[user]: {{ 7*7 }} {% if x %}y{% endif %}" in sent and "49" not in sent


def test_history_is_given_as_context_with_H5_truncation():
    with ScriptedModel() as model:
        model.extract.append({"facts": [], "basic_info": {}})
        model.extract.append({"facts": [], "basic_info": {}})
        client = model.client()
        client.history_limit = 20

        async def two_adds():  # one event loop: the SDK client is bound to its loop
            await client.add(
                [
                    {"role": "user", "name": "Tim", "content": "U" * 50},
                    {"role": "assistant", "name": "John", "content": "J" * 50},
                ],
                "tim",
            )
            await client.add([{"role": "user", "name": "Tim", "content": "next"}], "tim")

        asyncio.run(two_adds())
        second = model.server.requests[1].body["messages"][1]["content"]
    assert "[user]: " + "U" * 50 in second
    assert "[John]: " + "J" * 19 + "…" in second and "J" * 20 not in second


def test_bad_messages_write_nothing():
    from hy_eval.conversation import MessageError

    with ScriptedModel() as model:
        client = model.client()
        with pytest.raises(MessageError):
            add(client, [{"role": "user", "content": 1}])
        assert model.server.count == 0
    assert client.store.snapshot("tim")["l1_raw"] == []


def test_crash_between_store_writes_leaves_store_as_before(monkeypatch):
    store = MemoryStore()
    seed(store, "tim", "The user likes tea.")
    with ScriptedModel() as model:
        model.extract.append(
            {
                "facts": [{"text": "The user works at Stripe.", "owner": "user"}],
                "basic_info": {"employer": "Stripe"},
            }
        )
        model.reconcile.append(
            {
                "operations": [
                    {"op": "ADD", "fact": 0, "target_ids": [], "text": "The user works at Stripe."}
                ]
            }
        )
        client = model.client(store)
        before = store.snapshot("tim")

        def crash(*a, **k):
            raise RuntimeError("injected crash between writes")

        monkeypatch.setattr(store, "write_profile", crash)  # after the memory insert
        with pytest.raises(RuntimeError, match="injected"):
            add(client, TIM_JOHN["en"])
    assert store.snapshot("tim") == before


def test_reconcile_request_uses_its_schema_name():
    store = MemoryStore()
    seed(store, "tim", "The user likes coffee.")
    with ScriptedModel() as model:
        model.extract.append(
            {"facts": [{"text": "The user likes coffee a lot.", "owner": "user"}], "basic_info": {}}
        )
        model.reconcile.append(
            {"operations": [{"op": "NONE", "fact": 0, "target_ids": ["m1"], "text": ""}]}
        )
        result = add(model.client(store), [{"role": "user", "content": "I really like coffee."}])
        names = [schema_name(r) for r in model.server.requests]
    assert names == ["memory_extraction", "memory_reconcile"]
    assert [o.op for o in result.reconciliation.applied] == ["NONE"]
    assert len(store.get_all("tim")) == 1
