"""The batch path under hostile input (docs/reliability.md, "Hostile input, round two"):
a refused submission, output files with lines that are no result, a ``batches.json``
this program did not write, batch ids that would leave the batch endpoints, answers
naming another model, and error bodies that echo the key. Each is one line and exit 2
or 3 (or a failed request, asked interactively), never a traceback or a printed key.

Through the real SDK clients against the loopback server's batch endpoints."""

import asyncio
import json

import pytest

from hy_eval.cli import main
from hy_eval.llm import build_client
from hy_eval.llm.batch._engine import STATE_NAME, BatchEngine, BatchState, BatchStateError
from tests.harness.run.test_run import write_suite
from tests.llm.test_batch import client, echo_script, items_of, one_round, requests
from tests.loopback import BatchBackend, BatchScript, LoopbackServer, Reply, openai_completion

KEY = "sk-canary-BATCH-4f3e2d1c0b"


def cli_run(server, tmp_path, vendor="openai", *extra, quiet=True):
    url = server.openai_url if vendor == "openai" else server.anthropic_url
    return main(
        [
            "run",
            "--suite",
            str(tmp_path / "toy"),
            "--provider",
            vendor,
            "--model",
            "scripted",
            "--base-url",
            url,
            "--api-key",
            KEY,
            "--cache",
            str(tmp_path / "cache.sqlite"),
            "--out",
            str(tmp_path / "run"),
            "--batch",
            "--batch-poll-interval",
            "0.01",
            "--retries",
            "0",
            *(["--quiet"] if quiet else []),
            *extra,
        ]
    )


def one_error_line(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err and KEY not in err
    lines = [line for line in err.splitlines() if line.startswith("hy-eval: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_refused_submission_is_one_line_and_exit_3(vendor, tmp_path, capsys, monkeypatch):
    """The batch endpoint answers 401 (a key the batch API refuses): a traceback and
    exit 1; now one line naming the refusal and the resume command, exit 3."""
    write_suite(tmp_path / "toy", 2)
    handle = BatchBackend.handle

    def refuse(self, method, path, headers, raw):
        if method == "POST" and path.rstrip("/").endswith("batches"):
            body = {"error": {"message": f"bad key Bearer {KEY}", "type": "auth"}}
            return 401, body, "application/json"
        return handle(self, method, path, headers, raw)

    monkeypatch.setattr(BatchBackend, "handle", refuse)
    with LoopbackServer(echo_script(), batch=BatchScript()) as server:
        assert cli_run(server, tmp_path, vendor) == 3
    line = one_error_line(capsys)
    assert "--batch:" in line and "HTTP 401" in line and "resume with:" in line


def state_text(**batch):
    """A ``batches.json`` of one kept batch, its fields as this program writes them but
    for those ``batch`` sets or adds."""
    entry = {
        "id": "batch_1",
        "vendor": "openai",
        "model": "scripted",
        "round": 1,
        "keys": [],
        "status": "submitted",
        "outcome": {},
        **batch,
    }
    return json.dumps({"version": 1, "batches": [entry]})


BAD_STATES = {
    "garbage": "{not json",
    "extra-key": json.dumps({"version": 1, "batches": [], "extra": 1}),
    "extra-batch-key": state_text(url="x"),
    "path-in-id": state_text(id="../files/file-1"),
    "a-list": "[]",
    "deep": "[" * 5000 + "]" * 5000,
}


@pytest.mark.parametrize("text", BAD_STATES.values(), ids=BAD_STATES.keys())
def test_a_batches_file_this_program_did_not_write_is_refused(text, tmp_path, capsys):
    """A garbage ``batches.json``, one with an extra key, a batch id like
    ``../files/…`` (which would take the key to another endpoint): one line, exit 2,
    nothing sent to the batch endpoints."""
    write_suite(tmp_path / "toy", 2)
    with LoopbackServer(echo_script(), batch=BatchScript()) as server:
        assert cli_run(server, tmp_path) == 0
        (tmp_path / "run" / STATE_NAME).write_text(text)
        lines = (tmp_path / "run" / "cases.jsonl").read_text().splitlines(keepends=True)
        (tmp_path / "run" / "cases.jsonl").write_text(lines[0])
        before = (server.batch.submissions, server.batch.polls)
        capsys.readouterr()
        resume = ["--resume", str(tmp_path / "run"), "--provider", "openai", "--model"]
        resume += ["scripted", "--base-url", server.openai_url, "--api-key", KEY]
        resume += ["--cache", str(tmp_path / "cache.sqlite"), "--quiet", "--no-reuse"]
        assert main(resume) == 2
        assert (server.batch.submissions, server.batch.polls) == before
    line = one_error_line(capsys)
    assert STATE_NAME in line


def test_batch_ids_that_are_no_ids_are_refused_wherever_they_come_from(tmp_path):
    state = BatchState(tmp_path / STATE_NAME)
    for bad in ("../files/x", "batch_1/cancel", "a" * 200, "", "batch 1"):
        (tmp_path / STATE_NAME).write_text(state_text(id=bad, model="m"))
        with pytest.raises(BatchStateError, match="is not a batch id"):
            BatchState(tmp_path / STATE_NAME)
    assert state.batches == []


def with_output_lines(monkeypatch, extra):
    """The OpenAI output files of the loopback, with ``extra`` lines put first."""
    write = BatchBackend._write_outputs

    def written(self, batch):
        write(self, batch)
        file_id = batch.files.get("output_file_id")
        if file_id:
            self.files[file_id] = b"".join(extra) + self.files[file_id]

    monkeypatch.setattr(BatchBackend, "_write_outputs", written)


BAD_LINES = {
    "not-json": b"this is not json\n",
    "json-array": b'["custom_id", "x"]\n',
    "response-a-list": b'{"custom_id": "k", "response": [1, 2], "error": null}\n',
    "error-a-string": b'{"custom_id": "k", "response": null, "error": "boom"}\n',
    "deep": b"[" * 5000 + b"]" * 5000 + b"\n",
}


@pytest.mark.parametrize("extra", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_output_lines_that_are_no_result_cost_nothing_but_themselves(extra, tmp_path, monkeypatch):
    """A non-JSON or JSON-array line in the output file was a traceback, exit 1: now it
    is no result; the other answers are read."""
    with_output_lines(monkeypatch, [extra])
    reqs = requests(4)
    with LoopbackServer(echo_script(), batch=BatchScript(polls=1)) as server:
        llm = client("openai", server, tmp_path)
        eng = BatchEngine(llm, BatchState(tmp_path / STATE_NAME), poll_interval=0.01)
        report = asyncio.run(one_round(eng, items_of(llm, reqs)))
    assert report.outcomes == {"succeeded": 4}


def test_an_answer_naming_another_model_is_not_cached(tmp_path):
    """A batch result that names another model was cached as this model's answer; now
    it is a failed request (asked interactively next), and the reason names both."""
    reqs = requests(3)

    def other_model(req):
        text = req.messages[-1]["content"]
        model = "gpt-4o-2024-08-06" if text == "q0" else "someone-else"
        return Reply(body=openai_completion(json.dumps({"echo": text}), model=model))

    with LoopbackServer(other_model, batch=BatchScript(polls=1)) as server:
        llm = build_client(
            "openai",
            "gpt-4o",
            base_url=server.openai_url,
            api_key="sk-dummy",
            options={"structured": "json_schema"},
            cache_path=tmp_path / "cache.sqlite",
            retries=0,
        )
        eng = BatchEngine(llm, BatchState(tmp_path / STATE_NAME), poll_interval=0.01)
        report = asyncio.run(one_round(eng, items_of(llm, reqs)))
    assert report.outcomes == {"succeeded": 1, "failed": 2}  # a dated version is the model
    reasons = {reason for _key, _outcome, reason in report.failures}
    assert reasons == {"answered by model someone-else, not gpt-4o"}


def test_a_request_error_echoing_the_key_is_never_printed(tmp_path, capsys):
    """A per-request error body that echoes the key was printed to the terminal as is;
    every batch line is now redacted."""
    write_suite(tmp_path / "toy", 2)

    def echo_key(req):
        return Reply(400, {"error": {"message": f"refused, Authorization: Bearer {KEY}"}})

    with LoopbackServer(echo_key, batch=BatchScript()) as server:
        code = cli_run(server, tmp_path, quiet=False)
    captured = capsys.readouterr()
    assert code == 3  # every case failed: above the error tolerance
    assert "(asked interactively next)" in captured.err
    assert KEY not in captured.err and KEY not in captured.out
    assert "Traceback" not in captured.err
