"""``hy-eval serve``: the URL line, a summary on Ctrl-C (and SIGTERM), the model flags
reaching the client, and every bad flag as one line with exit 2."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from hy_eval.cli import main
from hy_eval.llm import LLMServer
from tests.loopback import LoopbackServer, Reply, error_body, openai_completion

ROOT = Path(__file__).resolve().parents[2]
USER = [{"role": "user", "content": "I like tea."}]


@pytest.fixture
def upstream():
    with LoopbackServer(lambda req: Reply(body=openai_completion("hello", model="gpt-up"))) as s:
        yield s


def openai_flags(upstream, tmp_path, *extra):
    return [
        "--provider",
        "openai",
        "--model",
        "gpt-up",
        "--base-url",
        upstream.openai_url,
        "--api-key",
        "sk-upstream-cli-1",
        "--cache",
        str(tmp_path / "cache.sqlite"),
        *extra,
    ]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_its_url_and_a_summary_when_stopped(upstream, tmp_path, stop):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hy_eval", "serve", *openai_flags(upstream, tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        line = proc.stdout.readline()
        url, word, token = line.split()[:3]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), line
        assert word == "token" and len(token) >= 43, line
        assert "openai:gpt-up" in line and "stand-in" in line
        # Without the token: refused; with it as the key: served.
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url, api_key="x", max_retries=0).models.list()
        client = openai.OpenAI(base_url=url, api_key=token, max_retries=0)
        for _ in range(2):
            resp = client.chat.completions.create(model="gpt-up", messages=USER)
            assert resp.choices[0].message.content == "hello"
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert err == ""
    assert token not in out  # on the first line only, not in the summary
    assert out.splitlines()[-1] == (
        "hy-eval serve: 2 chat calls (1 from the cache, 1 upstream request, 0 retries, "
        "0 failed), 0 embedding requests (0 inputs); tokens 20 in / 10 out (new: 10 in / "
        "5 out); cost unknown (no price for gpt-up); error answers: 1 x 401"
    )
    assert upstream.count == 1


@pytest.fixture
def served(monkeypatch):
    """Run ``hy-eval serve`` in this process: instead of serving until Ctrl-C, each
    server answers ``calls`` (made through the openai SDK) and is interrupted. The
    servers made are kept, with each call's outcome."""
    made = []

    def serve_forever(self):
        self.start()
        made.append(self)
        client = openai.OpenAI(base_url=self.url, api_key=self.token, max_retries=0)
        self.outcomes = []
        for call in served.calls:
            try:
                self.outcomes.append(call(client, self.model))
            except openai.APIStatusError as exc:
                self.outcomes.append(exc.status_code)
        raise KeyboardInterrupt

    monkeypatch.setattr(LLMServer, "serve_forever", serve_forever)
    served.calls = [lambda c, m: c.chat.completions.create(model=m, messages=USER)]
    served.made = made
    return served


def test_the_model_flags_reach_the_client(upstream, tmp_path, served, capsys):
    flags = openai_flags(
        upstream,
        tmp_path,
        "--structured",
        "tools",
        "--timeout",
        "7.5",
        "--retries",
        "1",
        "--retry-delay",
        "0.01",
        "--concurrency",
        "3",
        "--temperature",
        "0.4",
    )
    assert main(["serve", *flags]) == 0
    [server] = served.made
    client = server.client
    assert (client.provider.name, client.provider.model) == ("openai", "gpt-up")
    assert client.provider.base_url == upstream.openai_url
    assert client.options == {"structured": "tools"}
    assert (client.timeout, client.retry.max_retries, client.retry.base_delay) == (7.5, 1, 0.01)
    assert client.concurrency == 3
    assert client.cache.path == str(tmp_path / "cache.sqlite")
    [req] = upstream.requests
    assert req.body["temperature"] == 0.4
    assert req.headers["authorization"] == "Bearer sk-upstream-cli-1"
    assert "1 chat call (0 from the cache" in capsys.readouterr().out


def test_cache_mode_flag_replay_only(upstream, tmp_path, served, capsys):
    assert main(["serve", *openai_flags(upstream, tmp_path, "--cache-mode", "replay-only")]) == 0
    [server] = served.made
    assert server.outcomes == [404]
    assert upstream.count == 0
    assert "error answers: 1 x 404" in capsys.readouterr().out


def test_prices_flag_gives_the_cost(upstream, tmp_path, served, capsys):
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-up"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n')
    assert main(["serve", *openai_flags(upstream, tmp_path, "--prices", str(prices))]) == 0
    assert "cost $0.000020 (new $0.000020)" in capsys.readouterr().out


def test_an_upstream_error_is_an_answer_not_the_end(upstream, tmp_path, served, capsys):
    upstream.script = lambda req: Reply(500, error_body(500, "down"))
    served.calls = served.calls * 2
    assert main(["serve", *openai_flags(upstream, tmp_path, "--retries", "0")]) == 0
    assert served.made[0].outcomes == [502, 502]
    out = capsys.readouterr().out
    assert "2 chat calls" in out and "error answers: 2 x 502" in out


def one_line_error(args, capsys):
    """The exit code and stderr of ``hy-eval serve ARGS`` (argparse exits by SystemExit)."""
    try:
        code = main(["serve", *args])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.err, captured.out


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.7", "myhost.example"])
def test_a_host_that_is_not_loopback_is_refused(host, capsys):
    code, err, out = one_line_error(["--host", host, "--provider", "openai"], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("hy-eval: error: --host ")
    assert "--allow-remote" in err and out == ""


@pytest.mark.parametrize(
    "args, words",
    [
        (["--port", "abc"], "invalid int value"),
        (["--port", "70000"], "--port must be from 0 to 65535"),
        (["--port"], "expected one argument"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--timeout", "0"], "--timeout must be above 0"),
        (["--retries", "-1"], "--retries must be 0 or more"),
        (["--cache-mode", "sometimes"], "unknown cache mode"),
        (["--provider", "nope"], "unknown provider"),
        (["--structured", "yaml"], "invalid choice"),
        (
            ["--threads", "2", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"],
            "--threads",
        ),
        (["--prices", "/nonexistent/prices.toml"], "prices"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(args, words, capsys, tmp_path):
    code, err, out = one_line_error([*args, "--cache", str(tmp_path / "c.sqlite")], capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("hy-eval: error: "), err
    assert words in err
    assert out == ""


def test_a_port_in_use_is_one_line(upstream, tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err, _out = one_line_error(
            ["--port", str(port), *openai_flags(upstream, tmp_path)], capsys
        )
    assert code == 2 and err.count("\n") == 1 and "cannot listen" in err, err


def test_serve_is_a_command():
    from hy_eval.cli import COMMANDS, build_parser

    assert "serve" in COMMANDS
    # Not the default run: "serve" as the first word is the serve command.
    assert build_parser().parse_args(["serve", "--port", "5"]).port == 5
