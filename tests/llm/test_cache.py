"""The answer cache: what goes into a key, record/replay, concurrency, no secrets (E6)."""

import asyncio
import dataclasses
import sqlite3

import pytest

from hy_eval.llm import AnswerCache, CacheMiss, LLMClient, Request, make_provider
from tests.loopback import LoopbackServer, Reply, openai_completion

BASE = Request.of(
    [{"role": "user", "content": "hi"}],
    model="",
    temperature=0.0,
    max_tokens=100,
    seed=1,
    json_schema={"type": "object"},
    schema_name="s",
    extra_body={"top_k": 5},
    repeat=0,
)
SECRET = "sk-test-SECRET-abc123"


def echo(req):
    return Reply(body=openai_completion(req.messages[-1]["content"]))


def client_for(server, cache, mode="read-write", model="gpt-test", **kw):
    provider = make_provider("openai", model, base_url=server.openai_url, api_key=SECRET)
    return LLMClient(provider, cache=cache, cache_mode=mode, **kw)


@pytest.mark.parametrize(
    "change",
    [
        {"messages": ({"role": "user", "content": "hi!"},)},
        {"temperature": 0.7},
        {"max_tokens": 101},
        {"seed": 2},
        {"json_schema": {"type": "object", "required": ["x"]}},
        {"schema_name": "t"},
        {"extra_body": {"top_k": 6}},
        {"repeat": 1},
    ],
)
def test_key_changes_with_every_answer_changing_field(change):
    with LoopbackServer(echo) as s:
        c = client_for(s, None, "off")
        base = c.key_fields(BASE)
        changed = c.key_fields(dataclasses.replace(BASE, **change))
    from hy_eval.llm import cache_key

    assert cache_key(base) != cache_key(changed)


def test_key_covers_provider_model_and_base_url_not_timeout_or_concurrency():
    from hy_eval.llm import cache_key

    with LoopbackServer(echo) as s1, LoopbackServer(echo) as s2:
        a = client_for(s1, None, "off", timeout=5, concurrency=2)
        b = client_for(s1, None, "off", timeout=60, concurrency=30)
        other_model = client_for(s1, None, "off", model="gpt-other")
        other_url = client_for(s2, None, "off")
        key = cache_key(a.key_fields(BASE))
        assert key == cache_key(b.key_fields(BASE))
        assert key != cache_key(other_model.key_fields(BASE))
        assert key != cache_key(other_url.key_fields(BASE))


def run_many(client, n, prefix="q"):
    async def go():
        reqs = [Request.of([{"role": "user", "content": f"{prefix}{i}"}]) for i in range(n)]
        out = await asyncio.gather(*(client.complete(r) for r in reqs))
        await client.aclose()
        return out

    return asyncio.run(go())


def test_second_identical_run_makes_zero_requests(tmp_path):
    path = tmp_path / "cache.sqlite"
    with LoopbackServer(echo) as s:
        first = run_many(client_for(s, AnswerCache(path)), 30)
        assert s.count == 30
        second_client = client_for(s, AnswerCache(path))
        second = run_many(second_client, 30)
        assert s.count == 30  # nothing new reached the server
    assert [c.text for c in first] == [c.text for c in second]
    assert all(c.cached for c in second) and second_client.stats.cache_hits == 30


def test_replay_only_miss_names_the_call(tmp_path):
    cache = AnswerCache(tmp_path / "c.sqlite")
    with LoopbackServer(echo) as s:
        client = client_for(s, cache, "replay-only")

        async def go():
            await client.complete(BASE, label="case ms-en-0001 extract")

        with pytest.raises(CacheMiss) as info:
            asyncio.run(go())
        assert s.count == 0
    msg = str(info.value)
    assert msg.startswith("case ms-en-0001 extract: no cached answer in replay-only mode")
    assert "openai:gpt-test" in msg and "hy-eval cache explain" in msg


def test_refresh_and_off_modes(tmp_path):
    cache = AnswerCache(tmp_path / "c.sqlite")
    with LoopbackServer(echo) as s:
        run_many(client_for(s, cache), 3)
        run_many(client_for(s, cache, "refresh"), 3)
        assert s.count == 6  # refresh asks again and overwrites
        run_many(client_for(s, cache, "off"), 3)
        assert s.count == 9
    assert cache.stats()["answers"] == 3


def test_errors_are_never_cached(tmp_path):
    cache = AnswerCache(tmp_path / "c.sqlite")
    from hy_eval.llm import ProviderError, RetryPolicy

    with LoopbackServer(lambda r: Reply(400, {"error": {"message": "no"}})) as s:
        client = client_for(s, cache, retry=RetryPolicy(max_retries=0))
        with pytest.raises(ProviderError):
            run_many(client, 1)
    assert cache.stats()["answers"] == 0


def test_concurrent_writers_do_not_corrupt(tmp_path):
    path = tmp_path / "c.sqlite"
    with LoopbackServer(echo) as s:
        clients = [client_for(s, AnswerCache(path), concurrency=16) for _ in range(3)]

        async def go():
            await asyncio.gather(
                *(
                    c.complete(Request.of([{"role": "user", "content": f"w{i % 40}"}]))
                    for i, c in enumerate(clients * 40)
                )
            )

        asyncio.run(go())
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 40
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_stored_rows_contain_no_key_and_explain_shows_fields(tmp_path):
    path = tmp_path / "c.sqlite"
    with LoopbackServer(echo) as s:
        run_many(client_for(s, AnswerCache(path)), 2)
    raw = path.read_bytes() + (tmp_path / "c.sqlite-wal").read_bytes()
    assert SECRET.encode() not in raw
    cache = AnswerCache(path)
    key, _, _ = next(cache.rows())
    [row] = cache.explain(key[:12])
    assert row["request"]["model"] == "gpt-test"
    assert row["request"]["messages"][0]["content"].startswith("q")
    assert SECRET not in str(row)
