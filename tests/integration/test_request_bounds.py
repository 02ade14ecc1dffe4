"""Every request body is bounded before it is read, chunked or not, and the key is checked before it: a hostile
client sending hundreds of megabytes, with or without a key, is answered after at most the limit and costs the
server no more. Raw sockets against the embedded server (httpx would not read a reply before it sent its whole body).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pytest

# What a socket may hold in flight beyond what the server read (the kernel's send and receive buffers).
IN_FLIGHT = 16 * 1024 * 1024
CHUNK = 64 * 1024


@dataclass
class Exchange:
    """One request on a raw socket: the headers, then a chunked body written while the reply is read."""

    status: int = 0
    reply: bytes = b""
    sent: int = 0
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def body(self) -> dict:
        return json.loads(self.reply.split(b"\r\n\r\n", 1)[1])


def send_chunked(url: str, method: str, path: str, headers: dict[str, str], total: int, piece: bytes) -> Exchange:
    """Send ``total`` bytes of ``piece`` repeated as a chunked body until the server answers or cuts the connection.

    The reply is read by a second thread as it comes, so a server answering early is seen answering early.
    """
    parsed = urlparse(url)
    sock = socket.create_connection((parsed.hostname, parsed.port))
    exchange = Exchange()
    head = [f"{method} {path} HTTP/1.1", f"Host: {parsed.hostname}", "Transfer-Encoding: chunked"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())

    def read() -> None:
        received = b""
        try:
            while b"\r\n\r\n" not in received or len(received.split(b"\r\n\r\n", 1)[1]) < _length(received):
                data = sock.recv(65536)
                if not data:
                    break
                received += data
        except OSError:
            pass
        exchange.reply = received
        if received.startswith(b"HTTP/1.1 "):
            exchange.status = int(received.split()[1])
        exchange.done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    try:
        while exchange.sent < total and not exchange.done.is_set():
            sock.sendall(frame)
            exchange.sent += len(piece)
        if not exchange.done.is_set():
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered and closed the connection: what it had not read was never read
    # A bound for a failing server only: a working one has answered by now or answers right after the body.
    assert exchange.done.wait(120), "no reply"
    sock.close()
    return exchange


def _length(received: bytes) -> int:
    head = received.split(b"\r\n\r\n", 1)[0].lower()
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 1


@pytest.fixture
def small_limits(ragline, monkeypatch):
    """A 64 KiB body limit and a 256 KiB upload limit, so a few megabytes stand for hundreds."""
    monkeypatch.setattr(ragline.container.config.limits, "max_body_bytes", 64 * 1024)
    monkeypatch.setattr(ragline.container.config.limits, "max_upload_bytes", 256 * 1024)
    return ragline


JUNK = b"x" * CHUNK
TOTAL = 48 * 1024 * 1024


@pytest.mark.parametrize("path", ["/api/v1/knowledge-search", "/api/v1/sessions"])
def test_a_chunked_body_past_the_limit_is_answered_413_once_the_limit_is_read(small_limits, path):
    exchange = send_chunked(
        small_limits.url, "POST", path, {"X-API-Key": small_limits.key, "Content-Type": "application/json"}, TOTAL, JUNK
    )
    assert exchange.status == 413, exchange.reply[:500]
    assert exchange.body["error"]["type"] == "body_too_large"
    assert exchange.body["error"]["field"] == "body"
    # The rest was never read: the server answered while the client still had most of it to send.
    assert exchange.sent < 64 * 1024 + IN_FLIGHT


def test_a_chunked_manual_document_past_the_upload_limit_is_refused_and_nothing_is_stored(small_limits):
    kb = small_limits.create_kb("manual")
    content = "word " * (400 * 1024 // 5)
    body = json.dumps({"title": "Big", "content": content}).encode()
    exchange = send_chunked(
        small_limits.url,
        "POST",
        f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
        {"X-API-Key": small_limits.key, "Content-Type": "application/json"},
        len(body),
        body,
    )
    assert exchange.status == 413, exchange.reply[:500]
    assert exchange.body["error"]["field"] == "file", exchange.reply
    listed = small_limits.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge")
    assert listed.json()["data"] == []


@pytest.mark.parametrize("path", ["/api/v1/knowledge-search", "/api/v1/sessions", "/api/v1/knowledge-bases"])
def test_a_keyless_request_is_answered_401_before_its_body_is_read(small_limits, path):
    # Not a byte of body is sent: the server answers from the headers alone.
    exchange = send_chunked(small_limits.url, "POST", path, {"Content-Type": "application/json"}, 0, JUNK)
    assert exchange.status == 401, exchange.reply[:500]
    assert exchange.body["error"]["field"] == "X-API-Key"
    # And with megabytes of it on the way, the reply comes long before their end.
    flood = send_chunked(small_limits.url, "POST", path, {"Content-Type": "application/json"}, TOTAL, JUNK)
    assert flood.status == 401, flood.reply[:500]
    assert flood.sent < IN_FLIGHT


def test_a_keyless_request_with_a_broken_body_is_unauthorized_not_a_bad_request(ragline):
    reply = ragline.client.post(
        "/api/v1/knowledge-search", content=b"{not json", headers={"X-API-Key": "", "Content-Type": "application/json"}
    )
    assert reply.status_code == 401, reply.text
    wrong = ragline.client.post(
        "/api/v1/sessions", content=b"{not json", headers={"X-API-Key": "wrong", "Content-Type": "application/json"}
    )
    assert wrong.status_code == 401, wrong.text


def test_a_declared_length_past_the_limit_is_refused_before_the_body_is_sent(small_limits):
    parsed = urlparse(small_limits.url)
    with socket.create_connection((parsed.hostname, parsed.port)) as sock:
        sock.sendall(
            (
                "POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"X-API-Key: {small_limits.key}\r\nContent-Length: {300 * 1024 * 1024}\r\n\r\n"
            ).encode()
        )
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    assert reply.startswith(b"HTTP/1.1 413"), reply[:300]
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["field"] == "body"


def test_bodies_within_the_limits_are_taken_as_before(small_limits):
    kb = small_limits.create_kb("within")
    chunked = small_limits.client.post(
        "/api/v1/sessions",
        content=iter([json.dumps({"knowledge_base_ids": [kb]}).encode()]),
        headers={"Content-Type": "application/json"},
    )
    assert chunked.status_code == 201, chunked.text
    # An upload route takes more than the JSON limit: a 100 KiB document.
    document = small_limits.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Mid", "content": "word " * 20_000}
    )
    assert document.status_code == 202, document.text


@pytest.fixture
def checked_lengths(monkeypatch) -> list[int]:
    """The length of every value whose characters were read (the control-character check)."""
    import ragline.types.text as text

    seen: list[int] = []
    original = text.forbidden_characters

    def recording(value: str, *, allow_line_breaks: bool) -> str | None:
        seen.append(len(value))
        return original(value, allow_line_breaks=allow_line_breaks)

    monkeypatch.setattr(text, "forbidden_characters", recording)
    return seen


def test_a_huge_text_field_is_refused_by_its_length_before_its_characters_are_read(ragline, checked_lengths):
    # A 19 MB question (a question's route takes 20 MB: its images) and 1.9 MB values in the fields that had no
    # limit, or one checked after the characters: each kept the event loop busy for 15-42 s, character by character.
    from ragline.types.text import MAX_TEXT_CHARS

    kb = ragline.create_kb("bounds")
    session = ragline.session([kb])
    huge, large = "a" * (19 * 1024 * 1024), "a" * (1900 * 1024)
    refused = {
        "query": ragline.client.post(f"/api/v1/sessions/{session}/questions", json={"query": huge}),
        "description": ragline.client.put(f"/api/v1/sessions/{session}", json={"description": large}),
        "query_text": ragline.client.post(f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={"query_text": large}),
        "title": ragline.client.post("/api/v1/sessions", json={"title": large}),
    }
    search = ragline.client.post("/api/v1/knowledge-search", json={"query": large, "knowledge_base_ids": [kb]})
    refused["query (search)"] = search
    for name, reply in refused.items():
        assert reply.status_code == 422, (name, reply.text[:300])
        assert reply.json()["error"]["field"] == name.split(" ")[0], reply.text[:300]
    assert checked_lengths == [] or max(checked_lengths) <= MAX_TEXT_CHARS
    assert ragline.messages(session) == []
