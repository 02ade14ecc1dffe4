"""A turn ends whatever happens to the server: kill -9 and restart, SIGTERM with a grace period.

A real ``ragline serve`` subprocess on its own data directory, the scripted model over HTTP, real SSE
clients. After a crash the restarted server ends every orphaned turn with ``error`` "interrupted" before
it serves anything; on SIGTERM it lets running turns finish within the grace period and ends the rest the
same way, its readers receiving the last event before the process exits. The message and the stream
always agree.
"""

from __future__ import annotations

import http.client
import threading
import time

import httpx
import pytest

from tests.support.polling import wait_until
from tests.support.process import RaglineProcess
from tests.support.scripted_model import Script
from tests.support.sse import Frame, answer_text, read_frames

DOCS = {"Guide": "# Guide\n\nThe reactor cools with heavy water. Heavy water slows neutrons down."}


def long_answer(n: int = 400, delay: float = 0.1) -> Script:
    return Script.answer(*[f"w{i} " for i in range(n)], delay=delay)


@pytest.fixture
def server(tmp_path, scripted):
    process = RaglineProcess(tmp_path / "data", f"{scripted.url}/v1", RAGLINE_SHUTDOWN_GRACE_S="2")
    yield process.start()
    process.stop()


def setup_session(server: RaglineProcess) -> str:
    with server.client() as client:
        kb = client.post("/api/v1/knowledge-bases", json={"name": "kb"}).json()["data"]["id"]
        for title, content in DOCS.items():
            # wait: indexed (vectors too) before the turns start, so every turn searches the same index.
            reply = client.post(
                f"/api/v1/knowledge-bases/{kb}/documents?wait=true", json={"title": title, "content": content}
            )
            assert reply.status_code == 201, reply.text
        return str(client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb]}).json()["data"]["id"])


def ask(server: RaglineProcess, session: str, query: str) -> str:
    with server.client() as client:
        reply = client.post(f"/api/v1/sessions/{session}/questions", json={"query": query})
        assert reply.status_code == 202, reply.text
        return str(reply.json()["data"]["assistant_message_id"])


def events(server: RaglineProcess, session: str, message: str, **kwargs) -> list[Frame]:
    with server.client() as client:
        return read_frames(client, "GET", f"/api/v1/sessions/{session}/messages/{message}/events", **kwargs)


def events_until_answer(server: RaglineProcess, session: str, message: str) -> list[Frame]:
    """Frames up to and including the first answer frame, then the reader drops."""
    import json

    from httpx_sse import connect_sse

    frames: list[Frame] = []
    with (
        server.client() as client,
        connect_sse(client, "GET", f"/api/v1/sessions/{session}/messages/{message}/events") as source,
    ):
        for sse in source.iter_sse():
            frames.append(Frame(int(sse.id), json.loads(sse.data)))
            if frames[-1].type == "answer":
                return frames
    raise AssertionError("the stream ended before any answer")


def assistant(server: RaglineProcess, session: str, message: str) -> dict:
    with server.client() as client:
        items = client.get(f"/api/v1/sessions/{session}/messages").json()["data"]
    return next(m for m in items if m["id"] == message)


def refused(url: str) -> bool:
    try:
        httpx.get(f"{url}/healthz", timeout=1.0)
    except httpx.ConnectError:
        return True
    return False


def assert_ended_once_and_agrees(server, session, message) -> list[Frame]:
    frames = events(server, session, message)
    terminal = [f for f in frames if f.type in {"complete", "error", "stop"}]
    assert len(terminal) == 1
    assert terminal[0] is frames[-1]
    saved = assistant(server, session, message)
    assert saved["is_completed"] is True
    assert saved["content"] == answer_text(frames)
    return frames


def test_kill_9_mid_answer_then_restart_ends_every_turn_in_flight(server, scripted):
    session = setup_session(server)
    messages = []
    for i in range(5):
        scripted.queue(long_answer())
        messages.append(ask(server, session, f"How does the reactor cool, part {i}?"))
    wait_until(lambda: len(scripted.answers) == 5 and all(a.pieces_sent >= 3 for a in scripted.answers), timeout=60)
    # A reader got part of the first answer before the crash.
    before = events_until_answer(server, session, messages[0])

    server.kill()
    server.start()

    for message in messages:
        frames = assert_ended_once_and_agrees(server, session, message)
        end = frames[-1]
        assert end.type == "error"
        assert end.extra["reason"] == "interrupted"
        assert end.extra["cause"] == "restart"
        assert end.extra["partial"] is True
        assert answer_text(frames)  # the partial answer is kept ...
        assert assistant(server, session, message)["stop_reason"] == "interrupted"  # ... and marked
    # The reader that was cut off resumes where it was and gets the rest, then the stream closes.
    rest = events(server, session, messages[0], headers={"Last-Event-ID": str(before[-1].id)})
    assert rest[-1].type == "error"
    assert answer_text(before) + answer_text(rest) == answer_text(events(server, session, messages[0]))
    # A reader already past the end closes at once instead of waiting for pings.
    with server.client() as client:
        url = f"/api/v1/sessions/{session}/messages/{messages[0]}/events"
        at_end = client.get(url, headers={"Last-Event-ID": str(rest[-1].id)}, timeout=10)
    assert at_end.status_code in (200, 204)
    assert at_end.content == b""
    # The restarted server answers new questions.
    scripted.queue(Script.answer("Heavy ", "water."))
    fresh = ask(server, session, "And now?")
    assert assert_ended_once_and_agrees(server, session, fresh)[-1].type == "complete"


def test_sigterm_lets_short_turns_finish_and_interrupts_the_rest_readers_included(server, scripted):
    session = setup_session(server)
    scripted.queue(long_answer())
    long_id = ask(server, session, "Tell me everything about the reactor.")
    wait_until(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 3, timeout=60)
    scripted.queue(Script.answer(*[f"s{i} " for i in range(8)], delay=0.1))
    short_id = ask(server, session, "In short?")
    wait_until(lambda: len(scripted.answers) == 2 and scripted.answers[-1].pieces_sent >= 1, timeout=60)

    read: dict[str, list[Frame]] = {long_id: [], short_id: []}
    connected = {long_id: threading.Event(), short_id: threading.Event()}
    failures: list[BaseException] = []

    def reader(message: str) -> None:
        import json

        from httpx_sse import connect_sse

        try:
            with (
                server.client() as client,
                connect_sse(client, "GET", f"/api/v1/sessions/{session}/messages/{message}/events") as source,
            ):
                for sse in source.iter_sse():
                    read[message].append(Frame(int(sse.id), json.loads(sse.data)))
                    connected[message].set()
        except BaseException as exc:
            failures.append(exc)

    readers = [threading.Thread(target=reader, args=(m,)) for m in (long_id, short_id)]
    for thread in readers:
        thread.start()
    for event in connected.values():
        assert event.wait(timeout=30)
    server.terminate()
    server.wait(timeout=30)
    for thread in readers:
        thread.join(timeout=30)
    assert not failures, failures
    # Both readers stayed connected through the drain and got their turn's last event.
    assert read[short_id][-1].type == "complete"
    assert read[long_id][-1].type == "error"
    assert read[long_id][-1].extra["reason"] == "interrupted"
    assert read[long_id][-1].extra["cause"] == "shutdown"

    server.start()
    for message in (long_id, short_id):
        frames = assert_ended_once_and_agrees(server, session, message)
        assert [f.id for f in frames] == [f.id for f in read[message]] or answer_text(frames) == answer_text(
            read[message]
        )
    assert assistant(server, session, long_id)["stop_reason"] == "interrupted"
    assert assistant(server, session, short_id)["stop_reason"] == ""


def test_no_new_turn_is_accepted_while_draining(server, scripted):
    session = setup_session(server)
    scripted.queue(long_answer())
    ask(server, session, "Keep talking.")
    wait_until(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 2, timeout=60)
    client = server.client()
    assert client.get("/api/v1/sessions").status_code == 200  # a kept-alive connection
    server.terminate()
    # Draining starts by closing the listening socket: new connections are refused ...
    wait_until(lambda: refused(server.url), timeout=10)
    # ... and a kept-alive connection is refused a new turn, with nothing stored.
    reply = client.post(f"/api/v1/sessions/{session}/questions", json={"query": "One more?"})
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"]["type"] == "shutting_down"
    client.close()
    server.wait(timeout=30)
    server.start()
    with server.client() as fresh:
        items = fresh.get(f"/api/v1/sessions/{session}/messages").json()["data"]
    assert [m["content"] for m in items if m["role"] == "user"] == ["Keep talking."]


def test_an_idle_connection_outlives_the_clients_keep_alive(server):
    """A client may reuse a connection it has kept idle up to its own expiry (httpx: 5 s): the server must not close
    it first, or the request sent on it as it closes is reset. uvicorn's default closed it after 5 s."""
    host, port = server.url.rsplit("/", 1)[1].rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        statuses = []
        sockets = []
        for idle in (0.0, 6.0):  # the scenario itself: the connection idles past httpx's expiry and uvicorn's default
            time.sleep(idle)
            connection.request("GET", "/healthz")
            response = connection.getresponse()  # RemoteDisconnected if the server closed the idle connection
            response.read()  # the whole body, so the next response starts at its status line
            statuses.append(response.status)
            sockets.append(connection.sock)
    finally:
        connection.close()
    assert statuses == [200, 200]
    assert sockets[0] is not None
    assert sockets[1] is sockets[0]  # one connection, reused, not reopened
