"""stream_reader over real HTTP: uvicorn serving the AWS app, DynamoDB behind a ThreadedMotoServer on
127.0.0.1, a real SSE client following a turn live and resuming with Last-Event-ID."""

from __future__ import annotations

import threading
import time

import boto3
import httpx
import pytest

from ragline.stream.base import stream_key
from ragline.types import ResponseType, StreamEvent
from tests.support.servers import ServerThread, free_port
from tests.support.sse import answer_text, read_frames


@pytest.fixture
def moto_server(monkeypatch):
    from moto.server import ThreadedMotoServer

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    yield url
    # The server's backends are this process's moto state: leave nothing behind for the next test.
    httpx.post(f"{url}/moto-api/reset")
    server.stop()


@pytest.fixture
def reader(moto_server, tmp_path, shared_models):
    from ragline.retrieval.embedded import EmbeddedEngine
    from ragline.serverless.aws import build_aws_runtime
    from ragline.serverless.settings import AwsSettings
    from ragline.store.db import Database
    from ragline.store.knowledge import SqliteKnowledgeStore
    from tests.support.aws import create_tables_from_template

    session = boto3.Session(region_name="us-east-1")
    tables = create_tables_from_template(session.client("dynamodb", endpoint_url=moto_server))
    aws = AwsSettings(
        events_table=tables["EventsTable"],
        sessions_table=tables["SessionsTable"],
        messages_table=tables["MessagesTable"],
        state_table=tables["StateTable"],
        tenants_table=tables["TenantsTable"],
        aws_endpoint_url=moto_server,
        stream_max_seconds=30,
    )
    db = Database(tmp_path / "k.db")
    runtime = build_aws_runtime(
        aws, session=session, knowledge=SqliteKnowledgeStore(db), engine=EmbeddedEngine(db), models=shared_models
    )
    server = ServerThread(runtime.app()).start()
    yield runtime, server
    server.stop()
    db.close()


def _turn(runtime):
    container = runtime.container
    tenant, key = container.tenants.create("acme")
    session = container.sessions.create_session(tenant.id, [])
    _, assistant = container.sessions.create_turn(session, "req-1", "How does it work?")
    return key, session.id, assistant.id


def _write_turn(log, key, words, delay, before_end=None):
    """The turn's events, ``delay`` apart; with ``before_end``, the answer's end waits for that event."""
    log.append_sync(key, StreamEvent(id="req-1", type=ResponseType.AGENT_QUERY, content="q", done=True))
    for word in words:
        time.sleep(delay)
        log.append_sync(key, StreamEvent(id="t-answer", type=ResponseType.ANSWER, content=word))
    if before_end is not None:
        assert before_end.wait(timeout=60), "the reader never read its first frames"
    log.append_sync(key, StreamEvent(id="t-answer", type=ResponseType.ANSWER, done=True))
    log.append_sync(key, StreamEvent(id="t-complete", type=ResponseType.COMPLETE, done=True))


def test_live_follow_then_resume_with_last_event_id(reader):
    runtime, server = reader
    api_key, session_id, message_id = _turn(runtime)
    key = stream_key(session_id, message_id)
    words = [f"part{i} " for i in range(30)]
    # The turn's end waits until the first frames are read, so they are read while it is under way, however
    # slow the machine (answer events written before a read coalesce, so only two frames are certain).
    first_read = threading.Event()
    writer = threading.Thread(target=_write_turn, args=(runtime.log, key, words, 0.05, first_read))
    writer.start()
    url = f"/api/v1/sessions/{session_id}/messages/{message_id}/events"
    with httpx.Client(base_url=server.url, headers={"X-API-Key": api_key}, timeout=30) as client:
        first = read_frames(client, "GET", url, limit=2)
        first_read.set()
        assert [f.type for f in first] == ["agent_query", "answer"]
        rest = read_frames(client, "GET", url, headers={"Last-Event-ID": str(first[-1].id)})
    writer.join()
    # Resumed right after the last frame seen: answer events already written by then coalesce into one
    # frame carrying the last one's offset, so the first resumed id may skip ahead, never back.
    assert rest[0].id > first[-1].id
    assert rest[-1].type == "complete"
    assert answer_text(first) + answer_text(rest) == "".join(words)
    # A full replay from the log gives the same answer, in few frames (coalesced).
    with httpx.Client(base_url=server.url, headers={"X-API-Key": api_key}, timeout=30) as client:
        replay = read_frames(client, "GET", url)
    assert answer_text(replay) == "".join(words)
    assert len(replay) < len(words)


def test_a_response_cut_by_the_time_limit_resumes_exactly(reader):
    runtime, server = reader
    runtime.container.config.stream.max_stream_seconds = 0.5
    api_key, session_id, message_id = _turn(runtime)
    key = stream_key(session_id, message_id)
    words = [f"w{i} " for i in range(20)]
    writer = threading.Thread(target=_write_turn, args=(runtime.log, key, words, 0.1))
    writer.start()
    url = f"/api/v1/sessions/{session_id}/messages/{message_id}/events"
    received = []
    responses = 0
    last_id = None
    with httpx.Client(base_url=server.url, headers={"X-API-Key": api_key}, timeout=30) as client:
        for _ in range(40):
            headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
            frames = read_frames(client, "GET", url, headers=headers)
            responses += 1
            received.extend(frames)
            if frames:
                last_id = frames[-1].id
            if received and received[-1].type == "complete":
                break
    writer.join()
    assert responses > 1  # the time limit did end responses early
    assert received[-1].type == "complete"
    assert [f.id for f in received] == sorted({f.id for f in received})  # nothing repeated
    assert answer_text(received) == "".join(words)


def test_a_finished_stream_closes_at_its_end_on_the_dynamodb_log(reader):
    """The same end as the embedded server: 204 at the terminal event, 416 past it, never a ping."""
    runtime, server = reader
    api_key, session_id, message_id = _turn(runtime)
    _write_turn(runtime.log, stream_key(session_id, message_id), ["a ", "b "], 0)
    url = f"/api/v1/sessions/{session_id}/messages/{message_id}/events"
    with httpx.Client(base_url=server.url, headers={"X-API-Key": api_key}, timeout=10) as client:
        frames = read_frames(client, "GET", url)
        last = frames[-1].id
        assert frames[-1].type == "complete"
        at_end = client.get(url, headers={"Last-Event-ID": str(last)})
        past = client.get(url, params={"offset": last + 5})
        overflow = client.get(url, params={"offset": 2**63})
        tail = read_frames(client, "GET", url, headers={"Last-Event-ID": str(last - 1)})
    assert at_end.status_code == 204
    assert at_end.content == b""
    assert past.status_code == 416
    assert past.json()["error"]["field"] == "offset"
    assert overflow.status_code == 422
    assert [f.type for f in tail] == ["complete"]
