"""The batched engine of the embedded model's process (hy_eval/llm/local/_llama_engine.py)
against llama-cpp-python's own chat completion, on the real SmolLM2 model: the same text,
finish reason and token counts whether a request runs alone, batched with others, or with
its system prompt copied from a prefix sequence; and the worker's protocol around it
(answers by id, a bad request costs only itself, other requests take the library's path).
"""

import json
import os
import subprocess
import sys

import pytest

from hy_eval.llm.local._local import WORKER_SCRIPT, embedded_model_path
from tests.llm.test_local import SCHEMA

pytestmark = pytest.mark.slow

#: llama.cpp threads for every model here, in this process and the worker's: one, as the
#: harness's own model processes run by default. A team of two spins at each step while it
#: waits for its other thread, which another process on the same cores (a second test
#: worker, another job) keeps off the CPU: the library's four answers took 87 s on 2 busy
#: cores with the default team of two, 9.5 s with one. Equal answers need equal counts.
THREADS = 1

# Long enough to be shared (MIN_SHARED tokens): the stage's fixed instructions.
SYSTEM = "List facts about the speakers as JSON. " + " ".join(
    f"Rule {i}: write each fact as one short sentence about one speaker." for i in range(12)
)

TURNS = [
    "[user]: I work at Stripe.\n[John]: I am a nurse.",
    "[user]: 我喜欢喝茶，周末常去爬山。",
    "[user]: My sister Ana moved to Lisbon last year.",
    "[user]: 王伟下个月去成都出差。",
]


def request(i, text, **extra):
    return {
        "id": i,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
        "temperature": 0.0,
        "max_tokens": 60,
        "seed": None,
        "schema": SCHEMA,
        **extra,
    }


@pytest.fixture(scope="module")
def llama():
    import llama_cpp

    from hy_eval.llm.local._llama_worker import ContextPool, load_model

    path = str(embedded_model_path())
    pool = ContextPool(path, 4096, lambda: load_model(llama_cpp, path, 4096, THREADS))
    holder = load_model(llama_cpp, path, 512, THREADS)
    yield llama_cpp, pool, holder
    pool.close()
    holder.close()


def library(pool, req):
    from hy_eval.llm.local._llama_worker import answer

    return answer(pool, req)


def engine_answers(llama, reqs, slots):
    """Every request through one BatchEngine, admitted as slots free up."""
    from hy_eval.llm.local._llama_engine import BatchEngine

    llama_cpp, _, holder = llama
    engine = BatchEngine(llama_cpp, holder, n_ctx=4096, slots=slots)
    try:
        waiting = [engine.prepare(r) for r in reqs]
        replies = {}
        steps_with = []
        while waiting or engine.running:
            while engine.free and waiting:
                reply = engine.admit(waiting.pop(0))
                if reply is not None:
                    replies[reply["id"]] = reply
            if engine.running:
                steps_with.append(len(engine.running))
                for reply in engine.step():
                    replies[reply["id"]] = reply
        return replies, steps_with, engine.shared
    finally:
        engine.close()


def test_batched_answers_equal_the_library_s_one_at_a_time(llama):
    _, pool, _ = llama
    reqs = [request(i, text) for i, text in enumerate(TURNS)]
    want = {r["id"]: library(pool, r) for r in reqs}
    for slots in (1, 4):
        got, steps_with, shared = engine_answers(llama, reqs, slots)
        assert max(steps_with) == slots  # the batch really held that many sequences
        for r in reqs:
            assert got[r["id"]] == want[r["id"]], (slots, r["id"])
        # The system prompt was evaluated once and copied into the later requests.
        assert shared > 0


def test_length_and_a_prompt_too_long_read_as_the_library_reads_them(llama):
    _, pool, _ = llama
    short = request(0, TURNS[0], max_tokens=5)
    got, _, _ = engine_answers(llama, [short], 2)
    assert got[0] == library(pool, short)
    assert got[0]["finish_reason"] == "length" and got[0]["completion_tokens"] == 5

    from hy_eval.llm.local._llama_engine import BatchEngine

    llama_cpp, _, holder = llama
    engine = BatchEngine(llama_cpp, holder, n_ctx=64, slots=1)
    try:
        with pytest.raises(ValueError, match=r"exceed context window of 64"):
            engine.prepare(request(1, TURNS[0]))
    finally:
        engine.close()


def worker(*args):
    env = dict(os.environ, PYTHONPATH="")  # the script imports nothing of hy_eval
    return subprocess.Popen(
        [
            sys.executable,
            str(WORKER_SCRIPT),
            str(embedded_model_path()),
            "4096",
            str(THREADS),
            *args,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )


def test_the_worker_answers_by_id_and_a_bad_request_costs_only_itself(llama):
    _, pool, _ = llama
    reqs = [request(i, text) for i, text in enumerate(TURNS[:3], start=10)]
    sampled = request(20, TURNS[3], temperature=0.7, seed=3)  # the library's path
    bad = {"id": 30, "messages": "not a list", "temperature": 0.0, "max_tokens": 5}
    proc = worker("4")
    lines = [json.dumps(r) for r in (*reqs, bad, sampled)]
    out, _ = proc.communicate("\n".join(lines) + "\n", timeout=600)
    assert proc.returncode == 0
    replies = {r["id"]: r for r in map(json.loads, out.splitlines())}
    assert set(replies) == {10, 11, 12, 20, 30}
    for r in reqs:
        assert replies[r["id"]] == library(pool, r)
    assert replies[30]["error"] == "bad_request"
    assert replies[20]["text"] and "error" not in replies[20]
