"""safe_fetch against real sockets on 127.0.0.1.

Loopback is exactly what the policy refuses, so every test that *reads* a page exempts the site's own
``(127.0.0.1, port)`` explicitly; the refusal tests run with the default policy and show the live server
never saw the request.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from ragline.web.fetch import (
    WEB_FETCH_TEXT_LIMIT_BYTES,
    FetchError,
    FetchFailure,
    cut_utf8,
    safe_fetch,
)
from tests.support.servers import ServerThread
from tests.support.streaming import ClosingStreamingResponse

TEN_MB = 10 * 1024 * 1024
STREAM_CHUNK = 64 * 1024

ARTICLE = """<!doctype html>
<html><head><title>Event-driven RAG</title>
<script>var tracking = "do-not-index-me";</script>
<style>body { color: red }</style></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li></ul></nav>
<article>
<h1>How an event-driven RAG pipeline answers</h1>
<p>Each stage of the pipeline is a plugin registered for an event, and the orchestrator triggers the
events one by one in the order the request needs.</p>
<p>Reranking happens before the web pages are fetched, so only the best-ranked pages cost a download.
The fetched text then replaces the short snippet the search provider returned.</p>
<p>Citations are expanded as the answer streams, and a reconnecting client replays the events it missed.</p>
</article>
<footer>Cookie settings</footer>
</body></html>"""


class Site:
    """The page server the tests fetch from; records every request it receives."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.stream_sent = 0
        self.stream_done = threading.Event()
        self.stream_finished_normally = False
        self.app = FastAPI()
        app = self.app
        app.middleware("http")(self.record)
        app.get("/article")(lambda: HTMLResponse(ARTICLE))
        app.get("/plain")(lambda: PlainTextResponse("plain words from the page"))
        app.get("/utf8")(lambda: Response(("a" + "é" * 5000).encode(), media_type="text/plain; charset=utf-8"))
        app.get("/latin1")(
            lambda: Response("café crème".encode("latin-1"), media_type="text/plain; charset=iso-8859-1")
        )
        app.get("/binary")(lambda: Response(b"\x00\x01binary", media_type="application/octet-stream"))
        app.get("/json")(lambda: Response(b'{"a": 1}', media_type="application/json"))
        app.get("/untyped")(self.untyped)
        app.get("/empty")(lambda: HTMLResponse("<html><body></body></html>"))
        app.get("/missing")(lambda: PlainTextResponse("gone", status_code=404))
        app.get("/host")(self.host)
        app.get("/slow")(self.slow)
        app.get("/drip")(self.drip)
        app.get("/big")(self.big)
        app.get("/redirect")(self.redirect)
        app.get("/chain/{n}")(self.chain)
        app.get("/loop")(lambda: RedirectResponse("/loop", status_code=302))

    async def record(self, request: Request, call_next: Any) -> Response:
        self.hits.append(request.url.path)
        return await call_next(request)

    async def untyped(self) -> Response:
        return Response(b"no content type")  # no media type: no Content-Type header

    async def host(self, request: Request) -> Response:
        return PlainTextResponse(f"host={request.headers.get('host')}")

    async def slow(self) -> Response:
        await asyncio.sleep(3)
        return PlainTextResponse("too late")

    async def drip(self) -> Response:
        async def body() -> AsyncIterator[bytes]:
            for _ in range(50):
                yield b"x"
                await asyncio.sleep(0.1)

        return ClosingStreamingResponse(body(), media_type="text/plain")

    async def big(self) -> Response:
        self.stream_sent = 0
        self.stream_finished_normally = False
        self.stream_done = threading.Event()

        async def body() -> AsyncIterator[bytes]:
            try:
                while self.stream_sent < TEN_MB:
                    self.stream_sent += STREAM_CHUNK
                    yield b"y" * STREAM_CHUNK
                    await asyncio.sleep(0)
                self.stream_finished_normally = True
            finally:
                self.stream_done.set()

        return ClosingStreamingResponse(body(), media_type="text/plain")

    async def redirect(self, to: str, status: int = 302) -> Response:
        return RedirectResponse(to, status_code=status)

    async def chain(self, n: int) -> Response:
        if n <= 0:
            return PlainTextResponse("end of the chain")
        return RedirectResponse(f"/chain/{n - 1}", status_code=301)


class Internal:
    """A service that must stay unreachable: any request to it is a policy failure."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.app = FastAPI()
        self.app.get("/{path:path}")(self.secret)

    async def secret(self, path: str) -> Response:
        self.hits.append(path)
        return PlainTextResponse("SECRET instance credentials")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Site, ServerThread, Internal, ServerThread]]:
    site, internal = Site(), Internal()
    site_thread = ServerThread(site.app).start()
    internal_thread = ServerThread(internal.app).start()
    yield site, site_thread, internal, internal_thread
    site_thread.stop()
    internal_thread.stop()


@pytest.fixture
def site(servers) -> Site:
    site = servers[0]
    site.hits.clear()
    servers[2].hits.clear()
    return site


@pytest.fixture
def base(servers) -> str:
    return servers[1].url


@pytest.fixture
def allowed(servers) -> list[tuple[str, int]]:
    """Exempts the page server, and nothing else, from the address rules."""
    return [("127.0.0.1", servers[1].port)]


@pytest.fixture
def internal(servers) -> tuple[Internal, str]:
    return servers[2], servers[3].url


def fetch(url: str, **options: Any):
    return asyncio.run(safe_fetch(url, **options))


def refusal(url: str, **options: Any) -> FetchError:
    with pytest.raises(FetchError) as raised:
        fetch(url, **options)
    return raised.value


class FakeDns:
    """Stands in for ``socket.getaddrinfo``: name → successive answers (the last one repeats)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []
        self._real = socket.getaddrinfo

    def __call__(self, host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in self.answers:
            return self._real(host, port, *args, **kwargs)
        self.calls.append(host)
        queue = self.answers[host]
        address = queue.pop(0) if len(queue) > 1 else queue[0]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]


# --- reading pages (with the site exempted)


def test_html_becomes_readable_text(base, allowed, site):
    page = fetch(f"{base}/article", allowed_endpoints=allowed)
    assert "plugin registered for an event" in page.text
    assert "only the best-ranked pages cost a download" in page.text
    assert "do-not-index-me" not in page.text
    assert "About us" not in page.text
    assert "Cookie settings" not in page.text
    assert "<p>" not in page.text
    assert "color: red" not in page.text
    assert page.content_type == "text/html"
    assert page.status_code == 200
    assert not page.body_truncated
    assert not page.text_truncated


def test_plain_text_is_returned_as_is(base, allowed, site):
    page = fetch(f"{base}/plain", allowed_endpoints=allowed)
    assert page.text == "plain words from the page"
    assert page.url == f"{base}/plain"


def test_declared_charset_is_honoured(base, allowed, site):
    assert fetch(f"{base}/latin1", allowed_endpoints=allowed).text == "café crème"


def test_text_is_cut_to_8000_bytes_on_a_character_boundary(base, allowed, site):
    page = fetch(f"{base}/utf8", allowed_endpoints=allowed)
    encoded = page.text.encode("utf-8")
    # "a" + 2-byte characters: byte 8000 would split a character, so the cut keeps 7999 bytes.
    assert len(encoded) == WEB_FETCH_TEXT_LIMIT_BYTES - 1
    assert page.text == "a" + "é" * 3999
    assert page.text_truncated


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_cut_utf8_never_splits_a_character(char):
    text = "x" + char * 4000
    cut, truncated = cut_utf8(text, WEB_FETCH_TEXT_LIMIT_BYTES)
    assert truncated
    assert len(cut.encode()) <= WEB_FETCH_TEXT_LIMIT_BYTES
    assert len(cut.encode()) > WEB_FETCH_TEXT_LIMIT_BYTES - len(char.encode())
    assert text.startswith(cut)
    assert cut_utf8("short", WEB_FETCH_TEXT_LIMIT_BYTES) == ("short", False)


def test_the_connection_goes_to_the_vetted_address_under_the_name(base, servers, site, monkeypatch):
    """Pinning: the name is resolved once; the request goes to that address with the name as Host."""
    port = servers[1].port
    dns = FakeDns({"pinned.example": ["127.0.0.1", "10.66.66.66"]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    page = fetch(f"http://pinned.example:{port}/host", allowed_endpoints=[("pinned.example", port)])
    assert page.text == f"host=pinned.example:{port}"
    # One lookup: a second answer (DNS rebinding) is never asked for, let alone connected to.
    assert dns.calls == ["pinned.example"]


# --- refusals of the default policy


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", FetchFailure.BLOCKED_ADDRESS),
        ("localhost", FetchFailure.BLOCKED_HOST),
        ("[::1]", FetchFailure.BLOCKED_ADDRESS),
        ("10.0.0.1", FetchFailure.BLOCKED_ADDRESS),
        ("172.16.0.1", FetchFailure.BLOCKED_ADDRESS),
        ("192.168.1.1", FetchFailure.BLOCKED_ADDRESS),
        ("169.254.169.254", FetchFailure.BLOCKED_ADDRESS),
        ("0.0.0.0", FetchFailure.BLOCKED_ADDRESS),
        ("100.64.0.1", FetchFailure.BLOCKED_ADDRESS),
        ("[::ffff:127.0.0.1]", FetchFailure.BLOCKED_ADDRESS),
        ("[::ffff:169.254.169.254]", FetchFailure.BLOCKED_ADDRESS),
        ("[fe80::1]", FetchFailure.BLOCKED_ADDRESS),
        ("[2002:7f00:1::]", FetchFailure.BLOCKED_ADDRESS),
        ("0177.0.0.1", FetchFailure.BLOCKED_HOST),
        ("2130706433", FetchFailure.BLOCKED_HOST),
        ("0x7f000001", FetchFailure.BLOCKED_HOST),
        ("127.1", FetchFailure.BLOCKED_HOST),
    ],
)
def test_private_loopback_and_link_local_hosts_are_refused(host, reason):
    error = refusal(f"http://{host}/latest/meta-data/", timeout_s=2)
    assert error.reason == reason
    assert error.refused


def test_a_live_loopback_server_is_refused_without_an_exemption(base, site):
    error = refusal(f"{base}/plain")
    assert error.reason == FetchFailure.BLOCKED_ADDRESS
    assert site.hits == []


def test_numeric_spellings_are_refused_even_when_private_is_allowed(servers, site):
    port = servers[1].port
    for host in ("2130706433", "0x7f000001", "0177.0.0.1"):
        error = refusal(f"http://{host}:{port}/plain", allow_private=True)
        assert error.reason == FetchFailure.BLOCKED_HOST
    assert site.hits == []


def test_a_public_looking_name_resolving_to_loopback_is_refused(servers, site, monkeypatch):
    dns = FakeDns({"news.example.com": ["127.0.0.1"]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    error = refusal(f"http://news.example.com:{servers[1].port}/plain")
    assert error.reason == FetchFailure.BLOCKED_ADDRESS
    assert "news.example.com" in str(error)
    assert "loopback" in str(error)
    assert site.hits == []


def test_a_name_with_one_private_address_among_public_ones_is_refused(monkeypatch):
    def answers(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 80)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 80)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", answers)
    assert refusal("http://mixed.example.com/").reason == FetchFailure.BLOCKED_ADDRESS


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "gopher://127.0.0.1:70/_", "ftp://example.com/x", "data:text/plain,hi"]
)
def test_non_http_schemes_are_refused(url):
    assert refusal(url).reason == FetchFailure.BLOCKED_SCHEME


def test_credentials_in_the_url_are_refused():
    assert refusal("http://user:pass@example.com/").reason == FetchFailure.INVALID_URL


def test_an_unresolvable_name_fails_cleanly(monkeypatch):
    def no_answer(*args: Any, **kwargs: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_answer)
    assert refusal("http://does-not-exist.example/").reason == FetchFailure.DNS_FAILED


# --- redirects: every hop is vetted again


def test_redirect_from_an_allowed_server_to_loopback_is_refused(base, allowed, site, internal):
    internal_app, internal_url = internal
    error = refusal(f"{base}/redirect?to={internal_url}/latest/meta-data", allowed_endpoints=allowed)
    assert error.reason == FetchFailure.BLOCKED_ADDRESS
    assert site.hits == ["/redirect"]
    assert internal_app.hits == []


def test_redirect_to_a_localhost_name_is_refused(base, allowed, servers, site):
    error = refusal(f"{base}/redirect?to=http://localhost:{servers[1].port}/plain", allowed_endpoints=allowed)
    assert error.reason == FetchFailure.BLOCKED_HOST
    assert site.hits == ["/redirect"]


def test_redirect_to_a_name_resolving_to_a_private_address_is_refused(base, allowed, site, monkeypatch):
    dns = FakeDns({"cdn.example.com": ["10.0.0.7"]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    error = refusal(f"{base}/redirect?to=http://cdn.example.com/page", allowed_endpoints=allowed)
    assert error.reason == FetchFailure.BLOCKED_ADDRESS
    assert dns.calls == ["cdn.example.com"]


@pytest.mark.parametrize("target", ["file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO"])
def test_redirect_to_another_scheme_is_refused(base, allowed, site, target):
    assert refusal(f"{base}/redirect?to={target}", allowed_endpoints=allowed).reason == FetchFailure.BLOCKED_SCHEME


def test_redirects_within_the_allowed_server_are_followed(base, allowed, site):
    page = fetch(f"{base}/chain/3", allowed_endpoints=allowed, max_redirects=5)
    assert page.text == "end of the chain"
    assert page.redirects == (f"{base}/chain/2", f"{base}/chain/1", f"{base}/chain/0")
    assert page.url == f"{base}/chain/0"


def test_too_many_redirects(base, allowed, site):
    assert refusal(f"{base}/chain/4", allowed_endpoints=allowed, max_redirects=3).reason == (
        FetchFailure.TOO_MANY_REDIRECTS
    )
    assert refusal(f"{base}/loop", allowed_endpoints=allowed).reason == FetchFailure.TOO_MANY_REDIRECTS


# --- limits


def test_a_10_mb_stream_is_cut_at_max_bytes_and_the_connection_closed(base, allowed, servers, site):
    max_bytes = 100_000
    page = fetch(f"{base}/big", allowed_endpoints=allowed, max_bytes=max_bytes, timeout_s=20)
    assert page.body_bytes == max_bytes
    assert page.body_truncated
    assert page.text_truncated
    assert len(page.text.encode()) == WEB_FETCH_TEXT_LIMIT_BYTES
    # The server notices the closed connection and stops long before 10 MB.
    assert site.stream_done.wait(timeout=10)
    assert not site.stream_finished_normally
    assert site.stream_sent < TEN_MB


def test_a_server_that_sleeps_times_out(base, allowed, site):
    started = time.monotonic()
    assert refusal(f"{base}/slow", allowed_endpoints=allowed, timeout_s=0.5).reason == FetchFailure.TIMEOUT
    assert time.monotonic() - started < 2


def test_the_total_timeout_bounds_a_slow_drip(base, allowed, site):
    """Each byte arrives within the read timeout; only the total deadline stops it."""
    started = time.monotonic()
    assert refusal(f"{base}/drip", allowed_endpoints=allowed, timeout_s=0.8).reason == FetchFailure.TIMEOUT
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("path", ["/binary", "/json", "/untyped"])
def test_other_content_types_are_refused(base, allowed, site, path):
    assert refusal(f"{base}{path}", allowed_endpoints=allowed).reason == FetchFailure.UNSUPPORTED_CONTENT_TYPE


def test_error_statuses_and_empty_pages_fail(base, allowed, site):
    assert refusal(f"{base}/missing", allowed_endpoints=allowed).reason == FetchFailure.HTTP_STATUS
    assert refusal(f"{base}/empty", allowed_endpoints=allowed).reason == FetchFailure.EMPTY_TEXT


def test_a_closed_port_is_a_network_error(allowed):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = refusal(f"http://127.0.0.1:{port}/", allowed_endpoints=[("127.0.0.1", port)])
    assert error.reason == FetchFailure.NETWORK
    assert not error.refused


# --- HTTPS: the connection is pinned to the address, the certificate is still checked against the name


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory) -> Iterator[tuple[int, ssl.SSLContext]]:
    """An HTTPS server whose certificate (from a throwaway CA) names ``pinned.example`` only."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ragline test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pinned.example")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("pinned.example")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory = tmp_path_factory.mktemp("tls")
    cert_file, key_file = directory / "leaf.pem", directory / "key.pem"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    app = FastAPI()

    @app.get("/")
    async def root(request: Request) -> Response:
        return PlainTextResponse(f"tls host={request.headers.get('host')}")

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, ssl_certfile=str(cert_file), ssl_keyfile=str(key_file), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    trust = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    yield port, trust
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def test_https_goes_to_the_pinned_address_with_sni_and_certificate_for_the_name(tls_site, monkeypatch):
    port, trust = tls_site
    dns = FakeDns({"pinned.example": ["127.0.0.1", "10.66.66.66"], "impostor.example": ["127.0.0.1"]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    page = fetch(f"https://pinned.example:{port}/", allowed_endpoints=[("pinned.example", port)], trust=trust)
    assert page.text == f"tls host=pinned.example:{port}"
    assert dns.calls == ["pinned.example"]
    # Same address, another name: the certificate does not name it, so the handshake fails.
    error = refusal(f"https://impostor.example:{port}/", allowed_endpoints=[("impostor.example", port)], trust=trust)
    assert error.reason == FetchFailure.NETWORK
    assert "CERTIFICATE_VERIFY_FAILED" in str(error)
