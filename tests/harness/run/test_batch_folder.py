"""``run --batch-dir DIR``: the batch vendor is a folder (issue 44). Each round's requests
are an OpenAI Batch input file whose bodies are byte for byte what the openai provider
sends (compared with a live run of the same calls against the loopback server); the file
is answered by the loop docs/llm.md "Offline batches" gives (run here as the docs print it)
and read back: extraction, then reconcile, then the judge; a hostile output file costs
only its lines; a replay-only run then finds every answer in the cache."""

import json
import re
from pathlib import Path

import pytest

from hy_eval._exitcodes import ExitCode
from hy_eval.harness import Runner, load_suite
from hy_eval.harness.run import RunError
from hy_eval.llm._batch import STATE_NAME
from hy_eval.llm._batch_folder import REQUESTS_SUFFIX, RESULTS_SUFFIX
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
            assert message.startswith(f"{n} request{'' if n == 1 else 's'} wait in {files[0]};")
            assert message.endswith(f"then run: {resume_line(tmp_path)}")
            rounds.append(files[0])
            before = server.count
            answer_file(files[0], results_of(files[0]), server.openai_url)
            assert server.count - before == len(lines_of(files[0]))
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
