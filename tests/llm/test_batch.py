"""The batch engine through the real providers' SDK clients against the
loopback server's Files and Batches endpoints, in both vendors' wire formats: submit,
poll, results out of order, partly failed and expired batches, the size split, resume
from the kept batch ids without a second submit, and cancel."""

import asyncio
import json

import pytest

from hy_eval.llm import ProviderError, Request, build_client
from hy_eval.llm.batch._engine import STATE_NAME, BatchEngine, BatchState, split_items
from hy_eval.llm.batch._vendors import BatchItem
from hy_eval.llm.cache._cache import cache_key, canonical_json
from tests.loopback import BatchScript, LoopbackServer, Reply, anthropic_message, openai_completion

SCHEMA = {"type": "object", "properties": {"echo": {"type": "string"}}}


def echo_script(fail=()):
    """Answers each request with its own last message (so an answer shows which request
    it belongs to); a request whose text is in ``fail`` gets an HTTP 400."""

    def answer(req):
        text = req.messages[-1]["content"]
        if text in fail:
            return Reply(400, {"error": {"message": f"refused {text}", "code": 400}})
        # Answered by the model asked, as a vendor does (a batch result naming another
        # model is refused).
        model = req.body["model"]
        if req.path.endswith("/messages"):
            return Reply(body=anthropic_message(tool_input={"echo": text}, model=model))
        return Reply(body=openai_completion(json.dumps({"echo": text}), model=model))

    return answer


def client(vendor, server, tmp_path):
    if vendor == "openai":
        return build_client(
            "openai",
            "batch-model",
            base_url=server.openai_url,
            api_key="sk-dummy",
            options={"structured": "json_schema"},
            cache_path=tmp_path / "cache.sqlite",
            retries=0,
        )
    return build_client(
        "anthropic",
        "batch-claude",
        base_url=server.anthropic_url,
        api_key="sk-dummy",
        cache_path=tmp_path / "cache.sqlite",
        retries=0,
    )


def requests(n):
    return [
        Request.of([{"role": "user", "content": f"q{i}"}], json_schema=SCHEMA, schema_name="echo")
        for i in range(n)
    ]


def items_of(llm, reqs):
    out = {}
    for r in reqs:
        fields = llm.key_fields(r)
        canonical = canonical_json(fields)
        key = cache_key(fields, canonical)
        out[key] = BatchItem(key, fields, canonical, r)
    return out


def engine(llm, tmp_path, lines=None):
    say = lines.append if lines is not None else None
    state = BatchState(tmp_path / "run" / STATE_NAME)
    return BatchEngine(llm, state, poll_interval=0.01, say=say)


async def ask_all(llm, reqs):
    """Each request through the normal client: its answer, or its error."""
    out = []
    try:
        for r in reqs:
            try:
                out.append(await llm.complete(r))
            except ProviderError as exc:
                out.append(exc)
        return out
    finally:
        await llm.aclose()


async def one_round(eng, items):
    try:
        return await eng.run_round(items, 1)
    finally:
        await eng.llm.aclose()


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_batch_answers_land_in_the_cache_under_the_normal_keys(vendor, tmp_path):
    reqs = requests(7)
    with LoopbackServer(echo_script(), batch=BatchScript(polls=3, reverse=True)) as server:
        llm = client(vendor, server, tmp_path)
        lines = []
        report = asyncio.run(one_round(engine(llm, tmp_path, lines), items_of(llm, reqs)))
        assert server.batch.submissions == 1
        assert server.batch.polls >= 4  # three answered "in progress", then the end
        assert report.outcomes["succeeded"] == 7 and report.submitted == 7
        assert any("0/7 done" in line for line in lines)
        # A normal client of the same requests: every answer a cache hit, and the right one
        # although the results came back in reverse order.
        again = client(vendor, server, tmp_path)
        answers = asyncio.run(ask_all(again, reqs))
        assert server.count == 0
    assert again.stats.cache_hits == 7
    assert [a.parsed for a in answers] == [{"echo": f"q{i}"} for i in range(7)]


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_failed_and_expired_requests_are_reported_and_left_uncached(vendor, tmp_path):
    reqs = requests(6)
    script = BatchScript(polls=1)
    with LoopbackServer(echo_script(fail={"q1"}), batch=script) as server:
        llm = client(vendor, server, tmp_path)
        items = items_of(llm, reqs)
        expired_key = list(items)[4]
        script.expire = lambda cid: cid == expired_key
        report = asyncio.run(one_round(engine(llm, tmp_path), items))
        assert report.outcomes == {"succeeded": 4, "failed": 1, "expired": 1}
        reasons = {outcome: reason for _key, outcome, reason in report.failures}
        assert "refused q1" in reasons["failed"]
        # The normal run asks the two interactively; the rest are hits.
        again = client(vendor, server, tmp_path)
        asyncio.run(ask_all(again, reqs))
        assert server.count == 2
        batch = next(iter(server.batch.batches.values()))
        assert batch.status == ("expired" if vendor == "openai" else "ended")


def test_requests_are_split_at_the_vendor_limits(tmp_path):
    with LoopbackServer(echo_script(), batch=BatchScript(polls=0)) as server:
        llm = client("openai", server, tmp_path)
        eng = engine(llm, tmp_path)
        eng.vendor.max_requests = 3
        report = asyncio.run(one_round(eng, items_of(llm, requests(10))))
        assert server.batch.submissions == 4  # 3 + 3 + 3 + 1
        assert report.outcomes["succeeded"] == 10
    items = list(items_of(llm, requests(5)).values())
    size = len(eng.vendor.line(items[0]))
    parts = list(split_items(items, eng.vendor.line, 100, 2 * size + 1))
    assert [len(keys) for keys, _lines in parts] == [2, 2, 1]


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_resumed_engine_polls_the_kept_batch_instead_of_submitting(vendor, tmp_path):
    reqs = requests(4)
    script = BatchScript(polls=10**6)  # never ends while the first engine waits
    with LoopbackServer(echo_script(), batch=script) as server:
        llm = client(vendor, server, tmp_path)
        items = items_of(llm, reqs)

        async def killed():
            task = asyncio.ensure_future(engine(llm, tmp_path).run_round(items, 1))
            while server.batch.polls < 2:
                await asyncio.sleep(0.01)
            task.cancel()  # the run dies while it waits
            await asyncio.gather(task, return_exceptions=True)
            await llm.aclose()

        asyncio.run(killed())
        kept = json.loads((tmp_path / "run" / STATE_NAME).read_text())["batches"]
        assert [b["status"] for b in kept] == ["submitted"] and len(kept[0]["keys"]) == 4
        script.polls = 0
        llm2 = client(vendor, server, tmp_path)
        report = asyncio.run(one_round(engine(llm2, tmp_path), items_of(llm2, reqs)))
        assert server.batch.submissions == 1
        assert report.submitted == 0 and report.outcomes["succeeded"] == 4


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_cancel_asks_the_vendor_and_a_resume_collects_what_is_left(vendor, tmp_path):
    script = BatchScript(polls=10**6)
    with LoopbackServer(echo_script(), batch=script) as server:
        llm = client(vendor, server, tmp_path)
        items = items_of(llm, requests(3))

        async def submit_then_cancel():
            eng = engine(llm, tmp_path)
            task = asyncio.ensure_future(eng.run_round(items, 1))
            while server.batch.polls < 1:
                await asyncio.sleep(0.01)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            ids = await eng.cancel_pending()
            await llm.aclose()
            return ids

        ids = asyncio.run(submit_then_cancel())
        assert server.batch.cancels == ids and len(ids) == 1
        llm2 = client(vendor, server, tmp_path)
        report = asyncio.run(one_round(engine(llm2, tmp_path), items_of(llm2, requests(3))))
        assert report.outcomes["canceled"] == 3 and server.batch.submissions == 1


def test_the_spool_gives_back_requests_with_the_same_keys(tmp_path):
    from hy_eval.llm.batch._spool import RequestSpool

    reqs = [
        *requests(3),
        Request.of(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            temperature=0.7,
            max_tokens=99,
            seed=None,
            extra_body={"top_p": 0.5},
            repeat=2,
        ),
    ]
    with LoopbackServer(echo_script()) as server:
        llm = client("openai", server, tmp_path)
    items = items_of(llm, reqs)
    spool = RequestSpool(tmp_path / "spool.sqlite")
    for key, item in items.items():
        spool.add(key, item.canonical)
        spool.add(key, item.canonical)  # a request two cases make is kept once
    assert list(spool) == list(items) and len(spool) == 4
    for key, item in spool.items():
        assert items_of(llm, [item.request]) == {key: item}
    spool.reset()
    assert len(spool) == 0
    spool.close()
    assert not (tmp_path / "spool.sqlite").exists()
