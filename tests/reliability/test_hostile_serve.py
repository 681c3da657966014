"""``hy-eval serve`` against callers that are not the systems it serves (docs/reliability.md, "The model server"): a process or web page without the
token, a page on a rebound DNS name, a request a proxy would frame otherwise, and
connections that hold threads. Raw sockets, so that every byte is the test's; the
upstream is the loopback server, and what it receives is the measure."""

import http.client
import json
import re
import socket
import threading
import time
from urllib.parse import urlsplit

import openai
import pytest

from hy_eval.llm import LLMServer, ModelOptions
from hy_eval.llm.serve._guard import allowed_hosts
from tests.loopback import LoopbackServer, Reply, openai_completion

CHAT = json.dumps({"model": "gpt-up", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.fixture(scope="module")
def shared_upstream():
    """One upstream for the module (stopping one takes half a second)."""
    with LoopbackServer(lambda req: Reply(body=openai_completion("hello", model="gpt-up"))) as s:
        yield s


@pytest.fixture
def upstream(shared_upstream):
    shared_upstream.requests.clear()
    return shared_upstream


@pytest.fixture
def server(upstream):
    options = ModelOptions(
        provider="openai",
        model="gpt-up",
        base_url=upstream.openai_url,
        api_key="sk-upstream-canary-43",
        structured="json_schema",
        cache_mode="off",
        cache_path=None,
    )
    with LLMServer(options) as s:
        yield s


def address(server):
    parts = urlsplit(server.url)
    return parts.hostname, parts.port


def head(server, method="POST", path="/v1/chat/completions", **fields):
    """A request's head: the right Host and token, a JSON body's headers and
    ``Connection: close`` unless
    ``fields`` replace them (a value of ``None`` drops the header)."""
    host, port = address(server)
    headers = {
        "Host": f"{host}:{port}",
        "Authorization": f"Bearer {server.token}",
        "Content-Type": "application/json",
        "Content-Length": str(len(CHAT)),
        "Connection": "close",  # the answer ends the exchange, no wait for an idle timeout
        **{k.replace("_", "-"): v for k, v in fields.items()},
    }
    lines = [f"{method} {path} HTTP/1.1"]
    for name, value in headers.items():
        for one in value if isinstance(value, list) else [value]:
            if one is not None:
                lines.append(f"{name}: {one}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchange(server, data, wait=1.5):
    """Send ``data`` on one connection; every status line the server sent before it
    closed (or fell silent for ``wait`` seconds), and the bodies' text."""
    received = b""
    with socket.create_connection(address(server), timeout=wait) as sock:
        sock.sendall(data)
        while True:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            received += chunk
    # A body has no line break after it: the next status line follows it on its line.
    statuses = [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]
    return statuses, received.decode("utf-8", "replace")


# ---- item 3: the token, the Host, no Origin, JSON only ------------------------------------


def test_a_caller_without_the_token_never_reaches_the_upstream(server, upstream):
    for key in ("anything", "", server.token[:-1] + "x"):
        client = openai.OpenAI(base_url=server.url, api_key=key or "none", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as caught:
            client.chat.completions.create(
                model="gpt-up", messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.body["code"] == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            client.models.list()
    statuses, _ = exchange(server, head(server, Authorization=None) + CHAT)
    assert statuses == [401]
    assert upstream.count == 0
    # The token as an OpenAI client's key, and as the Anthropic SDK sends a key.
    client = openai.OpenAI(base_url=server.url, api_key=server.token, max_retries=0)
    answer = client.chat.completions.create(
        model="gpt-up", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content == "hello"
    statuses, _ = exchange(server, head(server, Authorization=None, x_api_key=server.token) + CHAT)
    assert statuses[0] == 200
    assert upstream.count == 2


def test_each_server_has_a_token_of_its_own(upstream):
    options = ModelOptions(
        provider="openai",
        model="gpt-up",
        base_url=upstream.openai_url,
        api_key="k",
        structured="json_schema",
        cache_mode="off",
        cache_path=None,
    )
    with LLMServer(options) as one, LLMServer(options) as two:
        assert one.token != two.token
        assert len(one.token) >= 43  # 32 random bytes, URL-safe base64


@pytest.mark.parametrize("origin", ["http://localhost:8000", "null", "https://example.com"])
def test_a_request_from_a_web_page_is_refused(server, upstream, origin):
    """A page on localhost sends its origin, a file:// page ``null``."""
    statuses, text = exchange(server, head(server, Origin=origin) + CHAT)
    assert statuses == [403] and "origin_not_allowed" in text
    assert upstream.count == 0


@pytest.mark.parametrize(
    "host", ["attacker.example:{port}", "attacker.example", "127.0.0.1:1", None]
)
def test_a_host_that_is_not_the_server_is_refused(server, upstream, host):
    """DNS rebinding: a public name that resolves to 127.0.0.1 keeps its own Host."""
    given = host.format(port=address(server)[1]) if host else None
    statuses, _ = exchange(server, head(server, Host=given) + CHAT)
    assert statuses == [403 if host else 400]
    assert upstream.count == 0


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST"])
def test_the_loopback_names_of_the_server_are_taken(server, name):
    statuses, _ = exchange(
        server, head(server, Host=f"{name}:{address(server)[1]}") + CHAT, wait=0.5
    )
    assert statuses == [200]


def test_the_names_a_server_takes_follow_its_address():
    assert allowed_hosts(["::1", "::1"], 80, False) == {
        "127.0.0.1:80",
        "localhost:80",
        "[::1]:80",
    }
    named = allowed_hosts(["box.example", "10.0.0.7"], 80, True)
    assert {"box.example:80", "10.0.0.7:80", "localhost:80"} <= named
    assert "attacker.example:80" not in named
    # A wildcard address with --allow-remote: any name (the token still checked).
    assert allowed_hosts(["0.0.0.0"], 80, True) is None


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_sent_as_json_is_415(server, upstream, kind):
    statuses, text = exchange(server, head(server, Content_Type=kind) + CHAT)
    assert statuses == [415] and "application/json" in text
    assert upstream.count == 0
    statuses, _ = exchange(
        server, head(server, Content_Type="application/json; charset=utf-8") + CHAT, wait=0.5
    )
    assert statuses == [200]


# ---- item 8: framing every reader reads the same way ------------------------------------


def test_a_body_on_a_get_is_not_read_as_the_next_request(server, upstream):
    smuggled = head(server) + CHAT
    get = head(
        server,
        "GET",
        "/v1/models",
        Content_Type=None,
        Content_Length=str(len(smuggled)),
        Connection=None,  # kept alive: the next bytes are read as the next request
    )
    statuses, _ = exchange(server, get + smuggled)
    assert statuses == [400]
    assert upstream.count == 0


@pytest.mark.parametrize(
    "line", ["Content-Length : {n}", "Content-Length\t: {n}", "X-Note: a\r\n Content-Length: {n}"]
)
def test_a_header_line_a_proxy_could_read_otherwise_is_refused(server, upstream, line):
    """Space before the colon (RFC 9112 5.1: a server must refuse it) and a folded line:
    http.server's parser drops the first and everything after it, or folds the second into
    the line before, so the body was read as the next request."""
    smuggled = head(server) + CHAT
    get = head(server, "GET", "/v1/models", Content_Type=None, Content_Length=None, Connection=None)
    get = get[:-2] + line.format(n=len(smuggled)).encode() + b"\r\n\r\n"
    statuses, _ = exchange(server, get + smuggled)
    assert statuses == [400]
    assert upstream.count == 0


@pytest.mark.parametrize("length", ["{a}_{b}", "+{n}", "{n}.0", "0x{h}"])
def test_a_content_length_that_is_not_ascii_digits_is_refused(server, upstream, length):
    n = len(CHAT)
    value = length.format(a=n // 10, b=n % 10, n=n, h=format(n, "x"))
    statuses, text = exchange(server, head(server, Content_Length=value) + CHAT)
    assert statuses == [400] and "Content-Length" in text
    assert upstream.count == 0


@pytest.mark.parametrize(
    "fields",
    [
        {"Content_Length": [str(len(CHAT)), "0"]},
        {"Transfer_Encoding": ["identity", "chunked"]},
        {"Transfer_Encoding": "chunked"},
    ],
)
def test_duplicate_or_chunked_framing_headers_are_refused(server, upstream, fields):
    statuses, _ = exchange(server, head(server, **fields) + CHAT)
    assert statuses[0] in (400, 411) and len(statuses) == 1
    assert upstream.count == 0


def test_a_post_without_a_length_is_411(server, upstream):
    statuses, _ = exchange(server, head(server, Content_Length=None) + CHAT)
    assert statuses == [411]
    assert upstream.count == 0


# ---- item 9: bounded connections, a deadline for the headers ------------------------------


def test_connections_over_the_cap_are_answered_503_at_once(server, monkeypatch):
    monkeypatch.setattr("hy_eval.llm.serve._server.MAX_CONNECTIONS", 8)
    held = [socket.create_connection(address(server), timeout=5) for _ in range(8)]
    try:
        for sock in held:
            sock.sendall(b"GET /v1/mod")  # half a request each
        time.sleep(0.3)
        started = time.perf_counter()
        statuses, text = exchange(server, head(server, "GET", "/v1/models", Content_Length=None))
        assert statuses == [503] and "8 connections" in text
        assert time.perf_counter() - started < 1.0
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the held connections' threads end and free a place
        statuses, _ = exchange(server, head(server, "GET", "/v1/models", Content_Length=None), 0.5)
        if statuses == [200]:
            break
        time.sleep(0.1)
    assert statuses == [200]


def test_a_request_trickled_byte_by_byte_is_cut_at_the_header_deadline(server, monkeypatch):
    monkeypatch.setattr("hy_eval.llm.serve._server.HEADER_TIMEOUT", 0.5)
    data = head(server, "GET", "/v1/models", Content_Length=None)
    with socket.create_connection(address(server), timeout=3) as sock:
        started = time.perf_counter()
        answer = b""
        for byte in data[:-1]:  # never the last byte; one every 50 ms
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sock.settimeout(0.05)
            try:
                answer += sock.recv(4096)
            except TimeoutError:
                continue
            if answer:
                break
        sock.settimeout(3)
        while chunk := sock.recv(4096):
            answer += chunk
        elapsed = time.perf_counter() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    assert elapsed < 1.5, elapsed


def test_an_idle_keep_alive_connection_outlives_the_header_deadline(server, monkeypatch):
    """The deadline starts at a request's first byte, not when the last answer left."""
    monkeypatch.setattr("hy_eval.llm.serve._server.HEADER_TIMEOUT", 0.3)
    conn = http.client.HTTPConnection(*address(server), timeout=3)
    sockets = []
    for _ in range(2):
        conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {server.token}"})
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Connection") is None
        response.read()
        sockets.append(conn.sock)
        time.sleep(0.6)
    conn.close()
    assert sockets[0] is sockets[1]  # one connection throughout


def test_a_body_sent_slowly_is_408_at_the_body_deadline(server, upstream, monkeypatch):
    monkeypatch.setattr("hy_eval.llm.serve._server.BODY_TIMEOUT", 0.4)
    with socket.create_connection(address(server), timeout=3) as sock:
        sock.sendall(head(server) + CHAT[:5])
        started = time.perf_counter()
        answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
        assert time.perf_counter() - started < 1.5
    assert upstream.count == 0


def test_many_clients_at_once_are_still_served(server):
    """The cap (128) leaves room for the systems' workers: 32 at once, all answered."""
    results = []

    def one():
        results.append(
            exchange(server, head(server, "GET", "/v1/models", Content_Length=None), 0.5)[0]
        )

    threads = [threading.Thread(target=one) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [[200]] * 32
