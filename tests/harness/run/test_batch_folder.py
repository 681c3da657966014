"""``run --batch-dir DIR``: the batch vendor is a folder. Each round's requests
are an OpenAI Batch input file whose bodies are byte for byte what the openai provider
sends (compared with a live run of the same calls against the loopback server); the file
is answered by the loop docs/llm.md "Offline batches" gives (run here as the docs print it)
and read back: extraction, then reconcile, then the judge; a hostile output file costs
only its lines; a replay-only run then finds every answer in the cache (rules E2: the
requests are the real pipeline's; E6: answers cached under the exact request's key)."""

import json
import re
from pathlib import Path

import pytest

from hy_eval._exitcodes import ExitCode
from hy_eval.harness import Runner, load_suite
from hy_eval.harness.run import RunError
from hy_eval.llm.batch._engine import STATE_NAME
from hy_eval.llm.batch._folder import REQUESTS_SUFFIX, RESULTS_SUFFIX
from tests.harness.scripted_suite import SuiteModel, scripted_config

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 6
#: Summary fields a batch run may differ in: timing, cost and the call counters.
NOT_COMPARED = ("wall_s", "cost_usd", "calls")
#: vLLM's ``run-batch`` input line (its documented schema; OpenAI Batch's input format).
VLLM_INPUT_FIELDS = {"custom_id": str, "method": str, "url": str, "body": dict}


def docs_answer_loop():
    """The loop docs/llm.md gives for answering a request file with any OpenAI-compatible
    endpoint, as a function of (requests file, results file, base URL)."""
    text = (ROOT / "docs" / "llm.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# answer_batch\.py.*?)```", text, re.S).group(1)

    def run(requests, results, base_url):
        import sys

        argv = sys.argv
        sys.argv = ["answer_batch.py", str(requests), str(results), base_url]
        try:
            exec(compile(code, "answer_batch.py", "exec"), {"__name__": "__main__"})
        finally:
            sys.argv = argv

    return run


answer_file = docs_answer_loop()


def folder_config(tmp_path, name="folder", **kw):
    """A run whose batch vendor is ``tmp_path/batches``: no base URL, no key."""
    from hy_eval.harness import RunConfig

    base = dict(
        suite="multi_speaker",
        provider="openai",
        model="scripted",
        structured="json_schema",
        cache_mode="read-write",
        cache_path=str(tmp_path / "folder.sqlite"),
        out=str(tmp_path / name),
        progress=False,
        limit=LIMIT,
        retries=1,
        batch=True,
        batch_dir=str(tmp_path / "batches"),
    )
    base.update(kw)
    return RunConfig(**base)


def waiting_round(cfg):
    """Run ``cfg``; it must stop with exit 5: the error's message."""
    with pytest.raises(RunError) as info:
        Runner(cfg).run()
    assert info.value.exit_code == ExitCode.BATCH_WAITING, str(info.value)
    return str(info.value)


def resume_line(tmp_path):
    return (
        f"python run_eval.py --resume {tmp_path / 'folder'} --provider openai --model scripted "
        f"--cache {tmp_path / 'folder.sqlite'}"
    )


def unanswered(folder):
    return sorted(
        p
        for p in folder.glob(f"*{REQUESTS_SUFFIX}")
        if not p.with_name(p.name.replace(REQUESTS_SUFFIX, RESULTS_SUFFIX)).exists()
    )


def results_of(path):
    return path.with_name(path.name.replace(REQUESTS_SUFFIX, RESULTS_SUFFIX))


def lines_of(path):
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]


def comparable(summary):
    return {k: v for k, v in summary.to_data().items() if k not in NOT_COMPARED}


def check_vllm_input(line):
    """One request line against vLLM run-batch's documented input schema."""
    assert set(line) == set(VLLM_INPUT_FIELDS)
    for name, kind in VLLM_INPUT_FIELDS.items():
        assert isinstance(line[name], kind), name
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert line["body"]["model"] == "scripted" and line["body"]["messages"]


def check_batch_output(line):
    """One results line against the OpenAI Batch output format (what ``vllm run-batch
    -o`` writes): the run reads it unchanged."""
    assert set(line) == {"id", "custom_id", "response", "error"} and line["error"] is None
    assert set(line["response"]) == {"status_code", "request_id", "body"}
    assert line["response"]["status_code"] == 200
    assert line["response"]["body"]["choices"][0]["message"]["content"]


def test_rounds_write_the_providers_bytes_and_read_the_answers_back(tmp_path):
    model = SuiteModel(load_suite("multi_speaker").cases)
    with model.server as server:
        live = scripted_config(server, tmp_path / "live", structured="json_schema", limit=LIMIT)
        _, interactive, code = Runner(live).run()
        assert code == 0
        sent = {r.raw for r in server.requests}  # what the openai provider sent, as bytes
        assert len(sent) == server.count
        folder = tmp_path / "batches"
        rounds = []
        message = waiting_round(folder_config(tmp_path))
        while True:
            files = unanswered(folder)
            assert len(files) == 1, files
            n = len(lines_of(files[0]))
            verb = "request waits" if n == 1 else "requests wait"
            assert message.startswith(f"{n} {verb} in {files[0]};")
            assert message.endswith(f"then run: {resume_line(tmp_path)}")
            rounds.append(files[0])
            before = server.count
            answer_file(files[0], results_of(files[0]), server.openai_url)
            assert server.count - before == len(lines_of(files[0]))
            for result in lines_of(results_of(files[0])):
                check_batch_output(result)
            resumed = folder_config(tmp_path, resume=str(tmp_path / "folder"), out=None)
            try:
                run_dir, batched, code = Runner(resumed).run()
                break
            except RunError as exc:
                assert exc.exit_code == ExitCode.BATCH_WAITING, str(exc)
                message = str(exc)
        assert code == 0
    # Extraction, then reconcile; each line a vLLM run-batch input line whose body is the
    # bytes the provider sent for the same call, and every call of the live run is there.
    assert len(rounds) == 2
    written = set()
    for path in rounds:
        for raw in path.read_bytes().splitlines(keepends=True):
            line = json.loads(raw)
            check_vllm_input(line)
            head = json.dumps(
                {k: line[k] for k in ("custom_id", "method", "url")}, separators=(",", ":")
            )
            body = raw[len(head[:-1]) + len(',"body":') : -2]
            assert raw == head[:-1].encode() + b',"body":' + body + b"}\n"
            written.add(body)
    assert written == sent
    names = [{lines_of(p)[0]["body"]["response_format"]["json_schema"]["name"]} for p in rounds]
    assert names == [{"memory_extraction"}, {"memory_reconcile"}]
    # The normal run asked nothing, and scored as the live run did.
    assert batched.calls.cache_hits == batched.calls.calls == len(sent)
    assert comparable(batched) == comparable(interactive)
    assert batched.calls.batch["succeeded"] == len(sent)
    kept = json.loads((run_dir / STATE_NAME).read_text())["batches"]
    assert [(b["vendor"], b["round"], b["status"]) for b in kept] == [
        ("folder", 1, "collected"),
        ("folder", 2, "collected"),
    ]
    # The answers are the cache's: a replay-only run with the same model flags asks nothing.
    replay = folder_config(
        tmp_path, "replay", batch=False, batch_dir=None, cache_mode="replay-only", api_key="x"
    )
    _, replayed, code = Runner(replay).run()
    assert code == 0 and comparable(replayed)["metrics"] == comparable(interactive)["metrics"]


def scripted_results(model, path, change=None):
    """The results file of ``path`` as the scripted model answers it (in process);
    ``change(i, line)`` may rewrite the i-th output line (a dict) or return lines of its own
    (a list of str) to write instead."""
    from tests.loopback import ServedRequest

    out = []
    for i, line in enumerate(lines_of(path)):
        reply = model.answer(ServedRequest(i, "/v1/chat/completions", line["body"]))
        response = {"status_code": reply.status, "request_id": f"r{i}", "body": reply.body}
        result = {"id": f"b{i}", "custom_id": line["custom_id"], "response": response}
        result["error"] = None
        made = change(i, result) if change else None
        texts = made if isinstance(made, list) else [json.dumps(result, ensure_ascii=False)]
        out += texts
    tmp = results_of(path).with_suffix(".part")
    tmp.write_text("".join(t + "\n" for t in out), encoding="utf-8")
    tmp.rename(results_of(path))


def finish(model, tmp_path, cfg_kw=None, change=None):
    """Answer and resume until the run ends; its (run folder, summary, code, rounds)."""
    folder, rounds = tmp_path / "batches", 0
    while True:
        for path in unanswered(folder):
            scripted_results(model, path, change)
            rounds += 1
        cfg = folder_config(tmp_path, resume=str(tmp_path / "folder"), out=None, **(cfg_kw or {}))
        try:
            return (*Runner(cfg).run(), rounds)
        except RunError as exc:
            assert exc.exit_code == ExitCode.BATCH_WAITING, str(exc)


def test_a_hostile_results_file_costs_only_its_lines(tmp_path, capsys):
    model = SuiteModel(load_suite("multi_speaker").cases)
    kw = dict(max_error_rate=0.5, progress=True)
    waiting_round(folder_config(tmp_path, **kw))
    (first,) = unanswered(tmp_path / "batches")
    keys = [line["custom_id"] for line in lines_of(first)]

    def hostile(i, result):
        body = result["response"]["body"]
        if i == 0:
            return [json.dumps({**result, "custom_id": "not-a-request"}), "not json at all"]
        if i == 1:  # a second answer to one request: the first counts
            return [json.dumps(result), json.dumps({**result, "response": None})]
        if i == 2:
            result["response"]["body"] = {**body, "model": "another-model"}
        elif i == 3:
            result["response"]["body"] = {"choices": []}
        elif i == 4:
            message = {
                "role": "assistant",
                "content": json.dumps({"facts": "none", "basic_info": {}}),
            }
            result["response"]["body"] = {**body, "choices": [{"message": message}]}
        elif i == 5:
            result["response"], result["error"] = None, {"code": "boom", "message": "it broke"}
        return None

    scripted_results(model, first, hostile)
    capsys.readouterr()
    waiting_round(folder_config(tmp_path, resume=str(tmp_path / "folder"), out=None, **kw))
    err = capsys.readouterr().err
    again = "(asked again next round, attempt 2 of 2)"
    for key, why in [
        (keys[0], "no result in the batch's output"),
        (keys[2], "answered by model another-model, not scripted"),
        (keys[3], "openai: malformed response body"),
        (keys[4], "answer.facts is not of type array"),
        (keys[5], "boom: it broke"),
    ]:
        assert re.search(f"failed: request {key[:16]}: {re.escape(why)}.*{re.escape(again)}", err)
    assert "ignored output line (custom_id 'not-a-request')" in err
    assert "ignored output line (custom_id '')" in err and "unreadable output line" in err
    assert f"ignored output line (custom_id {keys[1][:20]!r}): a second answer" in err
    (second,) = unanswered(tmp_path / "batches")
    asked_again = {line["custom_id"] for line in lines_of(second)}
    # Each unusable answer is asked again; the answered request is not.
    assert {keys[0], *keys[2:]} <= asked_again and keys[1] not in asked_again

    def unknown_again(i, result):
        if result["custom_id"] == keys[0]:
            return [json.dumps({**result, "custom_id": "still-not-a-request"})]
        return None

    run_dir, summary, code, _ = finish(model, tmp_path, kw, unknown_again)
    assert summary.metrics["error_rate"].num == 1
    err = capsys.readouterr().err
    assert f"request {keys[0][:16]}: no result" in err and "no attempt left of 2" in err
    assert code == 0
    records = [json.loads(t) for t in (run_dir / "cases.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["status"] == "error"]
    # Only the case whose request never got a usable answer failed, saying so.
    assert len(records) == LIMIT and len(failed) == 1
    assert "no answer for request" in failed[0]["error"] and "batch folder" in failed[0]["error"]


def test_a_judge_run_asks_the_judge_in_a_round_of_its_own(tmp_path):
    from tests.harness.run.test_matcher_runs import JudgedSuiteModel, write_suite

    class NamedJudge(JudgedSuiteModel):
        """Its verdicts name the model asked, as a vendor's do (one naming another model
        is refused)."""

        def answer(self, req):
            reply = super().answer(req)
            reply.body["model"] = req.body["model"]
            return reply

    suite = write_suite(tmp_path / "m")
    same = {"The user is a nurse at a Berlin hospital.", "用户是柏林的护士"}
    model = NamedJudge(suite.cases, same=same)
    with model.server as server:
        live = scripted_config(
            server, tmp_path / "live", suite=str(tmp_path / "m"), matcher="judge", retries=0
        )
        _, interactive, _ = Runner(live).run()
    kw = dict(suite=str(tmp_path / "m"), matcher="judge", limit=None)
    waiting_round(folder_config(tmp_path, **kw))
    _, judged, code, rounds = finish(model, tmp_path, kw)
    assert code == 0 and rounds >= 2
    files = sorted(
        (tmp_path / "batches").glob(f"*{REQUESTS_SUFFIX}"), key=lambda p: p.stat().st_mtime
    )
    schemas = [
        {line["body"]["response_format"]["json_schema"]["name"] for line in lines_of(p)}
        for p in files
    ]
    # Extraction first; the judge's three pairs together in the last round.
    assert schemas[0] == {"memory_extraction"} and schemas[-1] == {"fact_judgement"}
    assert len(lines_of(files[-1])) == 3
    assert judged.calls.cache_hits == judged.calls.calls
    assert judged.metrics["fact_recall"] == interactive.metrics["fact_recall"]
    assert judged.metrics["fact_recall"].num == 2


def start_cli(tmp_path):
    """One step of the round loop (``hy-eval run --batch-dir``) in a child process."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "hy_eval", "run", "--suite", "multi_speaker"]
    cmd += ["--limit", str(LIMIT), "--provider", "openai", "--model", "scripted"]
    cmd += ["--structured", "json_schema", "--cache", str(tmp_path / "folder.sqlite")]
    cmd += ["--batch-dir", str(tmp_path / "batches"), "--quiet"]
    run_dir = tmp_path / "folder"
    cmd += (
        ["--resume", str(run_dir)]
        if (run_dir / "manifest.json").exists()
        else ["--out", str(run_dir)]
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def kill_when(child, ready):
    """SIGKILL ``child`` as soon as ``ready()`` holds; whether it was still running."""
    import signal
    import time

    deadline = time.monotonic() + 60
    while not ready() and child.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.002)
    alive = child.poll() is None
    child.send_signal(signal.SIGKILL)
    child.wait()
    return alive


def step(tmp_path):
    """One step run to its end: its exit code and stderr."""
    child = start_cli(tmp_path)
    _, err = child.communicate(timeout=120)
    return child.returncode, err


def test_sigkill_inside_and_between_rounds_asks_nothing_twice(tmp_path):
    model = SuiteModel(load_suite("multi_speaker").cases)
    spool = tmp_path / "folder" / "batch_requests.sqlite"
    state = tmp_path / "folder" / STATE_NAME
    # Inside round 1: killed while it collects the cases' requests.
    assert kill_when(start_cli(tmp_path), spool.exists)
    assert step(tmp_path)[0] == ExitCode.BATCH_WAITING
    for path in unanswered(tmp_path / "batches"):
        scripted_results(model, path)
    # Between rounds: killed once round 1's answers are in the cache and its batch is
    # marked read (batches.json rewritten), before round 2's file is kept.
    kept = state.read_bytes()
    assert kill_when(start_cli(tmp_path), lambda: state.read_bytes() != kept)
    code, err = step(tmp_path)
    assert code == ExitCode.BATCH_WAITING, err
    for path in unanswered(tmp_path / "batches"):
        scripted_results(model, path)
    code, err = step(tmp_path)
    assert code == 0, err
    files = sorted((tmp_path / "batches").glob(f"*{REQUESTS_SUFFIX}"))
    ids = [line["custom_id"] for p in files for line in lines_of(p)]
    assert len(files) == 2 and len(ids) == len(set(ids))  # nothing asked twice
    run_dir = tmp_path / "folder"
    records = [json.loads(t) for t in (run_dir / "cases.jsonl").read_text().splitlines()]
    assert len(records) == LIMIT == len({r["id"] for r in records})  # nothing lost
    assert all(r["status"] == "ok" for r in records)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["calls"]["cache_hits"] == summary["calls"]["calls"] == len(ids)


def test_matchers_evaluate_asks_the_judge_of_every_pair_in_one_round(tmp_path, capsys):
    from hy_eval.cli import main
    from tests.cli.test_matchers_cli import PAIRS, rate, write_pairs
    from tests.loopback import LoopbackServer, Reply, openai_completion

    def script(req):
        verdict = json.dumps({"same": True, "reason": "x"})
        return Reply(body=openai_completion(verdict, model=req.body["model"]))

    pairs, out, folder = write_pairs(tmp_path / "p.jsonl"), tmp_path / "r.json", tmp_path / "b"
    flags = ["--matcher", "judge", "--json", str(out), "--provider", "openai"]
    flags += ["--model", "judge", "--cache", str(tmp_path / "c.sqlite"), "--batch-dir", str(folder)]
    assert main(["matchers", "evaluate", pairs, *flags]) == ExitCode.BATCH_WAITING
    err = capsys.readouterr().err
    (path,) = unanswered(folder)
    again = f"python run_eval.py matchers evaluate {pairs} --matcher judge --json {out}"
    assert f"{len(PAIRS)} requests wait in {path}" in err and f"then run: {again}" in err
    assert len(lines_of(path)) == len(PAIRS)
    with LoopbackServer(script) as server:
        answer_file(path, results_of(path), server.openai_url)
        assert server.count == len(PAIRS)
    assert main(["matchers", "evaluate", pairs, *flags]) == 0
    judge = json.loads(out.read_text())["matchers"]["judge"]
    # "The same" to every pair: right on the four that are, wrong on 2 and 6.
    assert judge["all"]["precision"] == rate(4, 6) and judge["all"]["recall"] == rate(4, 4)
    assert unanswered(folder) == []


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--provider", "local"], "--batch-dir writes OpenAI Batch files: it needs --provider"),
        (["--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"], "give --structured"),
        (["--provider", "openai", "--structured", "auto"], "give --structured"),
        (["--provider", "openai", "--variants", "default,no_examples"], "one suite run at a time"),
        (["--provider", "openai", "--matcher", "judge", "--judge-model", "j"], "the judge must"),
    ],
)
def test_what_a_folder_cannot_do_is_one_line_and_exit_2(tmp_path, capsys, flags, message):
    from hy_eval.cli import main

    base = ["run", "--suite", "multi_speaker", "--limit", "2", "--out", str(tmp_path / "r")]
    base += ["--cache", str(tmp_path / "c.sqlite"), "--batch-dir", str(tmp_path / "b")]
    assert main([*base, *flags]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and message in err[-1] and "Traceback" not in "".join(err)
    assert not (tmp_path / "b").exists()  # no request file written


def test_a_kill_before_batches_json_is_saved_loses_and_repeats_nothing(tmp_path, capsys):
    # Played without a process: the step that read round 1's answers into the cache and
    # wrote round 2's file is undone in batches.json alone, as a kill before its save
    # leaves it. The next step reads round 1 again (answers already cached count as
    # answered) and writes the same round-2 file under the same name.
    model = SuiteModel(load_suite("multi_speaker").cases)
    waiting_round(folder_config(tmp_path))
    (first,) = unanswered(tmp_path / "batches")
    scripted_results(model, first)
    state = tmp_path / "folder" / STATE_NAME
    before = state.read_bytes()
    resumed = folder_config(tmp_path, resume=str(tmp_path / "folder"), out=None, progress=True)
    waiting_round(resumed)
    (second,) = unanswered(tmp_path / "batches")
    state.write_bytes(before)
    capsys.readouterr()
    waiting_round(resumed)
    err = capsys.readouterr().err
    assert "failed" not in err.replace("0 failed", "") and "ignored" not in err
    assert unanswered(tmp_path / "batches") == [second]
    assert len(list((tmp_path / "batches").glob(f"*{REQUESTS_SUFFIX}"))) == 2
    _, summary, code, _ = finish(model, tmp_path)
    assert code == 0 and summary.calls.batch["failed"] == 0
    assert summary.calls.cache_hits == summary.calls.calls
