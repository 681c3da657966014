"""Every model flag reaches the client of both commands that call a model, ``run`` and
``memory add`` (``memory add --retry-delay`` was once silently dropped).

Both commands build their client through ``ModelOptions.client``; a spy records each
client made. Where a flag changes what goes over the wire, the scripted loopback server
checks that too, through the real provider code.
"""

import json
import time
from dataclasses import fields

import pytest

from hy_eval.cli import main
from hy_eval.cli._model import DEFAULT_CACHE
from hy_eval.harness import RunConfig
from hy_eval.llm import DEFAULT_CACHE_PATH, AnswerCache, ModelOptions
from tests.loopback import (
    LoopbackServer,
    Reply,
    anthropic_message,
    error_body,
    openai_completion,
)

COMMANDS = ("run", "memory add")
NO_FACTS = {"facts": [], "basic_info": {}}
CASE = {
    "id": "flag-0001",
    "lang": "en",
    "rules": ["M2"],
    "tags": [],
    "messages": [{"role": "user", "name": "Tim", "content": "I like tea."}],
    "expect": {"facts": []},
}


def answer(req):
    """No facts, so each case or add is one extraction call (no reconcile call)."""
    if req.path.endswith("/messages"):
        return Reply(body=anthropic_message(tool_input=NO_FACTS, tool_name="memory_extraction"))
    return Reply(body=openai_completion(json.dumps(NO_FACTS)))


@pytest.fixture
def clients(monkeypatch):
    """Every client a command builds, in order."""
    made = []
    build = ModelOptions.client

    def spy(self):
        client = build(self)
        made.append(client)
        return client

    monkeypatch.setattr(ModelOptions, "client", spy)
    return made


@pytest.fixture
def command(tmp_path, capsys):
    """``command(kind, *flags)`` runs ``run`` on a one-case suite, or ``memory add`` on
    the same conversation, and returns the exit code."""
    suite = tmp_path / "toy" / "cases.jsonl"
    suite.parent.mkdir()
    suite.write_text(json.dumps(CASE) + "\n")
    conversation = tmp_path / "c.json"
    conversation.write_text(json.dumps(CASE["messages"]))
    runs = iter(range(100))

    def go(kind, *flags):
        n = next(runs)
        if kind == "run":
            args = ["--suite", str(suite), "--out", str(tmp_path / f"run{n}"), "--quiet"]
        else:
            args = ["memory", "add", str(conversation), "--user-id", "tim"]
            args += ["--db", str(tmp_path / f"store{n}.sqlite")]
        if "--cache" not in flags and "--cache-mode" not in flags:
            flags = (*flags, "--cache-mode", "off")
        code = main([*args, *flags])
        go.err = capsys.readouterr().err
        return code

    go.tmp_path = tmp_path
    return go


@pytest.fixture
def server():
    with LoopbackServer(answer) as s:
        yield s


def openai_flags(server, *extra):
    return ("--provider", "openai", "--base-url", server.openai_url, "--api-key", "sk-k1", *extra)


@pytest.mark.parametrize("kind", COMMANDS)
def test_provider_and_base_url(kind, command, clients, server):
    assert command(kind, *openai_flags(server)) == 0
    assert clients[-1].provider.name == "openai"
    assert clients[-1].provider.base_url == server.openai_url
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize("kind", COMMANDS)
def test_anthropic_provider(kind, command, clients, server):
    flags = ["--provider", "anthropic", "--base-url", server.anthropic_url]
    assert command(kind, *flags, "--api-key", "sk-ant-k2", "--model", "claude-x") == 0
    assert clients[-1].provider.name == "anthropic"
    (req,) = server.requests
    assert req.path == "/v1/messages"
    # The SDK sends the key as x-api-key or, in newer versions, as a bearer token.
    sent = req.headers.get("x-api-key") or req.headers["authorization"].removeprefix("Bearer ")
    assert sent == "sk-ant-k2"
    assert req.body["model"] == "claude-x"


@pytest.mark.parametrize("kind", COMMANDS)
def test_model(kind, command, clients, server):
    assert command(kind, *openai_flags(server, "--model", "flag-model")) == 0
    assert clients[-1].provider.model == "flag-model"
    assert server.requests[0].body["model"] == "flag-model"


@pytest.mark.parametrize("kind", COMMANDS)
def test_api_key_flag_and_environment(kind, command, server, monkeypatch):
    assert command(kind, *openai_flags(server)) == 0
    assert server.requests[-1].headers["authorization"] == "Bearer sk-k1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-3")
    assert command(kind, "--provider", "openai", "--base-url", server.openai_url) == 0
    assert server.requests[-1].headers["authorization"] == "Bearer sk-from-env-3"


@pytest.mark.parametrize("kind", COMMANDS)
def test_structured(kind, command, clients, server):
    assert command(kind, *openai_flags(server, "--structured", "tools")) == 0
    assert clients[-1].options == {"structured": "tools"}
    body = server.requests[0].body
    assert body["tool_choice"]["function"]["name"] == "memory_extraction"
    assert "response_format" not in body


@pytest.mark.parametrize("kind", COMMANDS)
def test_structured_with_another_provider_is_one_line(kind, command, server):
    flags = ["--provider", "anthropic", "--base-url", server.anthropic_url, "--api-key", "k"]
    assert command(kind, *flags, "--structured", "tools") == 2
    assert command.err == "hy-eval: error: --structured applies to the openai provider only\n"
    assert server.count == 0


@pytest.mark.parametrize("kind", COMMANDS)
def test_temperature(kind, command, server):
    assert command(kind, *openai_flags(server, "--temperature", "0.4")) == 0
    assert server.requests[0].body["temperature"] == 0.4


@pytest.mark.parametrize("kind", COMMANDS)
def test_timeout(kind, command, clients, server):
    assert command(kind, *openai_flags(server, "--timeout", "7.5")) == 0
    assert clients[-1].timeout == 7.5
    # An answer 2 s late: in time for the default 120 s, too late for 0.3 s.
    server.script = lambda req: Reply(body=openai_completion(json.dumps(NO_FACTS)), delay=2.0)
    assert command(kind, *openai_flags(server, "--timeout", "0.3", "--retries", "0")) == 3
    if kind == "run":
        (run,) = sorted(command.tmp_path.glob("run*"))[-1:]
        error = json.loads((run / "cases.jsonl").read_text())["error"]
    else:
        error = command.err
    assert "timed out" in error


@pytest.mark.parametrize("kind", COMMANDS)
def test_retries_and_retry_delay(kind, command, clients, server):
    arrivals = []

    def failing(req):
        arrivals.append(time.monotonic())
        return Reply(500, error_body(500, "busy"))

    server.script = failing
    flags = openai_flags(server, "--retries", "1", "--retry-delay", "1.0")
    assert command(kind, *flags) == 3
    assert clients[-1].retry.max_retries == 1
    assert clients[-1].retry.base_delay == 1.0
    assert len(arrivals) == 2  # one call and one retry (the default is 4)
    # The backoff is the flag's 1 s (plus up to 25% jitter), not the default's 0.5 s.
    assert arrivals[1] - arrivals[0] >= 1.0


@pytest.mark.parametrize("kind", COMMANDS)
def test_concurrency(kind, command, clients, server):
    assert command(kind, *openai_flags(server, "--concurrency", "3")) == 0
    assert clients[-1].concurrency == 3


@pytest.mark.parametrize("kind", COMMANDS)
def test_cache_and_cache_mode(kind, command, clients, server):
    cache = command.tmp_path / f"{kind.replace(' ', '-')}.sqlite"
    flags = openai_flags(server, "--cache", str(cache))
    assert command(kind, *flags, "--cache-mode", "refresh") == 0
    assert clients[-1].cache_mode == "refresh"
    assert AnswerCache(cache).stats()["answers"] == 1
    assert command(kind, *flags, "--cache-mode", "replay-only") == 0
    assert clients[-1].cache_mode == "replay-only"
    assert server.count == 1  # the second command's answer came from the cache
    assert command(kind, *flags, "--model", "other", "--cache-mode", "replay-only") == 4


def test_prices_reach_the_run(command, server):
    """``--prices`` (a ``run`` flag: ``memory add`` reports no cost) prices the record."""
    prices = command.tmp_path / "prices.toml"
    prices.write_text('[models."flag-model"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n')
    flags = openai_flags(server, "--model", "flag-model", "--prices", str(prices))
    assert command("run", *flags) == 0
    record = json.loads((command.tmp_path / "run0" / "cases.jsonl").read_text())
    assert record["cost_usd"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)


def test_run_config_carries_every_model_option():
    """``RunConfig`` has a field of the same name and default for each model option, so
    ``run`` cannot drop one on the way to the runner's client."""
    run_fields = {name: f.default for name, f in RunConfig.model_fields.items()}
    for f in fields(ModelOptions):
        assert f.name in run_fields
        assert run_fields[f.name] == f.default, f.name
    options = ModelOptions(
        provider="openai",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        structured="tools",
        timeout=3.0,
        retries=1,
        retry_base_delay=0.1,
        concurrency=2,
        temperature=0.3,
        cache_mode="off",
        cache_path=None,
    )
    assert RunConfig.of(options).model_options() == options


def test_help_names_the_default_cache_file():
    assert DEFAULT_CACHE == DEFAULT_CACHE_PATH


def test_cassette_record_has_no_cache_mode_flag(capsys):
    """A recording always reads and writes the cache: ``--cache-mode`` is refused rather
    than silently overridden."""
    from hy_eval.cli import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["cassette", "record", "--cache-mode", "off"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --cache-mode off" in capsys.readouterr().err


def test_the_parser_does_not_import_the_llm_layer():
    """``--help`` stays fast: the model flags are declared without importing hy_eval.llm."""
    import subprocess
    import sys

    code = "import sys; from hy_eval.cli import build_parser; build_parser(); "
    code += "print(sorted(m for m in sys.modules if m.startswith(('hy_eval.llm', 'hy_eval.h'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
