"""No key in any artifact (rules E2, E6): a provider error body that
echoes the request's headers and a base URL with credentials used to put the key into
cases.jsonl, report.html, manifest.json and the cache file (stored request, case records).
One function, ``hy_eval._redact.redact``, cleans text wherever it is stored."""

import json
from pathlib import Path

import pytest

from hy_eval._redact import MARK, redact, redact_tree, register_secret
from hy_eval.cli import main
from tests.harness.run.test_run import write_suite
from tests.harness.scripted_suite import SuiteModel
from tests.loopback import Reply

ROOT = Path(__file__).resolve().parents[2]

KEY = "sk-dummy-ENVKEY-41c9e2aa"  # OPENAI_API_KEY of the run
URL_PASSWORD = "sk-dummy-URLPW-7d0f3b19"  # in --base-url http://user:<this>@host/v1
OTHER = "tok-9f8e7d6c5b4a39281706"  # a token this process never saw, in x-api-key
PROJECT = "sk-proj-abcdefABCDEF0123456789"  # a vendor-shaped key, never registered


class EchoingModel(SuiteModel):
    """Answers most cases; for t-01 and t-03 returns the 401 a careless proxy sends,
    echoing the request's headers in its body."""

    def answer(self, req):
        prompt = req.messages[-1]["content"]
        if "number 1." in prompt or "number 3." in prompt:
            return Reply(
                401,
                {
                    "error": {
                        "message": (
                            f"Invalid key. Received headers: {{'Authorization': 'Bearer {KEY}', "
                            f"'x-api-key': '{OTHER}', 'X-Upstream-Key': '{PROJECT}'}} "
                            f"for http://user:{URL_PASSWORD}@upstream/v1"
                        ),
                        "type": "invalid_request_error",
                    }
                },
            )
        return super().answer(req)


def test_no_secret_reaches_any_artifact(tmp_path, monkeypatch):
    """Every file of the run folder and the cache file (with its WAL)
    is searched for every secret, byte for byte."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    suite = write_suite(tmp_path / "toy", 5)
    cache = tmp_path / "cache.sqlite"
    run_dir = tmp_path / "run"
    with EchoingModel(suite.cases) as model:
        url = model.server.openai_url.replace("http://", f"http://user:{URL_PASSWORD}@")
        args = [
            "--suite",
            str(tmp_path / "toy"),
            "--provider",
            "openai",
            "--model",
            "scripted",
            "--base-url",
            url,
            "--cache",
            str(cache),
            "--retries",
            "0",
            "--max-error-rate",
            "1",
            "--quiet",
            "--out",
            str(run_dir),
        ]
        assert main(args) == 0
    records = {
        json.loads(line)["id"]: json.loads(line)
        for line in (run_dir / "cases.jsonl").read_text().splitlines()
    }
    assert records["t-01"]["status"] == "error"
    error = records["t-01"]["error"]
    assert "HTTP 401" in error and "Invalid key" in error and MARK in error  # still useful
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["base_url"] == f"http://{MARK}@127.0.0.1:{model.server.port}/v1"
    assert "report.html" in {p.name for p in run_dir.iterdir()}
    leaks = []
    for f in tmp_path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            leaks += [
                (f.name, s) for s in (KEY, URL_PASSWORD, OTHER, PROJECT) if s.encode() in data
            ]
    assert leaks == []


# -- the one function --------------------------------------------------------------------

CASES = [
    ("http://user:sk-abcdef123456@host:8080/v1", f"http://{MARK}@host:8080/v1"),
    ("https://token@api.example.com/v1", f"https://{MARK}@api.example.com/v1"),
    ("Authorization: Bearer abc.def-ghi_jkl", f"Authorization: {MARK}"),
    ('{"authorization": "Basic dXNlcjpwYXNz"}', f'{{"authorization": "{MARK}"}}'),
    ("x-api-key: whatever-value", f"x-api-key: {MARK}"),
    ("{'X-Api-Key': 'abc'}", f"{{'X-Api-Key': '{MARK}'}}"),
    ("api_key=abcdef&x=1", f"api_key={MARK}&x=1"),
    ("https://h/v1?key=AIzaSy123&alt=json", f"https://h/v1?key={MARK}&alt=json"),
    ("password: hunter22", f"password: {MARK}"),
    ("token is Bearer eyJhbGciOiJIUzI1NiJ9", f"token is Bearer {MARK}"),
    ("key sk-ant-api03-AbCdEf012345", f"key {MARK}"),
    ("key sk-proj-AbCdEf0123456789", f"key {MARK}"),
    # Upper-case and mixed-case names reach the case-insensitive patterns through the
    # lowered-text pre-check; so do the letters that lowering does not fold (ſ, İ, K).
    ("ACCESS_TOKEN=abc123", f"ACCESS_TOKEN={MARK}"),
    ("Client-Secret: s3cr3t", f"Client-Secret: {MARK}"),
    ("https://h/v1?TOKEN=abc", f"https://h/v1?TOKEN={MARK}"),
    ("pa\u017f\u017fword: hunter22", f"pa\u017f\u017fword: {MARK}"),
    ("AUTHOR\u0130ZATION: abcdefgh", f"AUTHOR\u0130ZATION: {MARK}"),
    ("https://h/v1?\u212aey=abc", f"https://h/v1?\u212aey={MARK}"),
]

UNCHANGED = [
    "http://127.0.0.1:8080/v1",
    "The user likes tea and coffee.",
    "John asked for the API key docs; the bearer of the news was Ann.",
    "mail me at tim@example.com",
    "[user]: 我在 Stripe 工作。",
    "sk-short",
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_redact_removes_credentials(text, expected):
    assert redact(text) == expected
    assert redact(expected) == expected  # idempotent


@pytest.mark.parametrize("text", UNCHANGED)
def test_redact_leaves_ordinary_text_alone(text):
    assert redact(text) == text


@pytest.mark.parametrize(("text", "_"), CASES)
def test_redacted_json_stays_valid_json(text, _):
    doc = json.dumps({"error": text, "nested": [text]}, ensure_ascii=False)
    assert json.loads(redact(doc)) == {"error": redact(text), "nested": [redact(text)]}


def test_registered_keys_are_redacted_whatever_their_shape():
    register_secret("plainkey-no-pattern-0xA1B2")
    register_secret("short")  # too short to be treated as a secret: left alone
    assert redact("echo: plainkey-no-pattern-0xA1B2!") == f"echo: {MARK}!"
    assert redact("a short note") == "a short note"
    assert redact_tree({"k": ["plainkey-no-pattern-0xA1B2", 3]}) == {"k": [MARK, 3]}


def test_dataset_lines_and_the_cassette_are_untouched():
    """Redaction must not change ordinary requests (their cache keys) or records: no
    committed dataset line and no cassette row has anything to redact."""
    files = [
        *ROOT.joinpath("datasets").rglob("*.jsonl"),
        *ROOT.joinpath("tests/cassettes").glob("*"),
    ]
    assert files
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            assert redact(line) == line, f"{f}:{n}"
