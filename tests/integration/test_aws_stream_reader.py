"""stream_reader as deployed: its function URL (the Web Adapter in front of the uvicorn its run.sh starts), its
own role and environment, the DynamoDB log in the stack's events table. The turn's events are appended by the
test with the library's DynamoDB log, as pipeline_step appends them; a real SSE client follows the turn live,
resumes with Last-Event-ID, and meets the stream's end."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from ragline.store.dynamodb import DynamoSessionStore
from ragline.stream.base import stream_key
from ragline.stream.dynamodb import DynamoDBStreamManager
from ragline.types import ResponseType, StreamEvent
from tests.support.sse import answer_text, read_frames


def _turn(aws: Any) -> tuple[Any, str, str]:
    """A turn of the test's tenant with no workflow: the test writes its log."""
    sessions = DynamoSessionStore(aws.stack.table("SessionsTable"), aws.stack.table("MessagesTable"))
    session = sessions.create_session(aws.tenant.id, [])
    _, assistant = sessions.create_turn(session, f"req-{uuid.uuid4().hex[:8]}", "How does it work?")
    log = DynamoDBStreamManager(aws.stack.table("EventsTable"), 3600)
    return log, session.id, assistant.id


def _write_turn(log, key, words, delay, before_end=None, before_words=None):
    """The turn's events, ``delay`` apart; with ``before_end`` (``before_words``), the answer's end (its first
    word) waits for that event."""
    log.append_sync(key, StreamEvent(id="req-1", type=ResponseType.AGENT_QUERY, content="q", done=True))
    if before_words is not None:
        assert before_words.wait(timeout=60), "the reader never read the first frame"
    for word in words:
        time.sleep(delay)
        log.append_sync(key, StreamEvent(id="t-answer", type=ResponseType.ANSWER, content=word))
    if before_end is not None:
        assert before_end.wait(timeout=60), "the reader never read its first frames"
    log.append_sync(key, StreamEvent(id="t-answer", type=ResponseType.ANSWER, done=True))
    log.append_sync(key, StreamEvent(id="t-complete", type=ResponseType.COMPLETE, done=True))


def test_live_follow_then_resume_with_last_event_id(aws):
    log, session_id, message_id = _turn(aws)
    words = [f"part{i} " for i in range(30)]
    # The turn's end waits until the first frames are read, so they are read while it is under way, however
    # slow the machine (answer events written before a read coalesce, so only two frames are certain).
    first_read = threading.Event()
    writer = threading.Thread(
        target=_write_turn, args=(log, stream_key(session_id, message_id), words, 0.05, first_read)
    )
    writer.start()
    url = f"api/v1/sessions/{session_id}/messages/{message_id}/events"
    first = read_frames(aws.stream, "GET", url, limit=2)
    first_read.set()
    assert [f.type for f in first] == ["agent_query", "answer"]
    rest = read_frames(aws.stream, "GET", url, headers={"Last-Event-ID": str(first[-1].id)})
    writer.join()
    # Resumed right after the last frame seen: answer events already written by then coalesce into one
    # frame carrying the last one's offset, so the first resumed id may skip ahead, never back.
    assert rest[0].id > first[-1].id
    assert rest[-1].type == "complete"
    assert answer_text(first) + answer_text(rest) == "".join(words)
    # A full replay from the log gives the same answer, in few frames (coalesced).
    replay = read_frames(aws.stream, "GET", url)
    assert answer_text(replay) == "".join(words)
    assert len(replay) < len(words)


def test_a_response_cut_by_the_time_limit_resumes_exactly(aws):
    """stream_reader ends a response RAGLINE_STREAM_MAX_SECONDS after it began (the template keeps it under the
    function's Timeout); the client resumes with Last-Event-ID and gets every event once."""
    log, session_id, message_id = _turn(aws)
    words = [f"w{i} " for i in range(20)]
    url = f"api/v1/sessions/{session_id}/messages/{message_id}/events"
    received = []
    responses = 0
    last_id = None
    # The answer is written only once a first response has been cut (it holds the question alone), so the
    # words arrive while the client reads, however long a sandbox takes to start on a busy machine.
    first_cut = threading.Event()
    with aws.stack.function_environment("StreamReaderFunction", RAGLINE_STREAM_MAX_SECONDS="0.5"):
        writer = threading.Thread(
            target=_write_turn, args=(log, stream_key(session_id, message_id), words, 0.1, None, first_cut)
        )
        writer.start()
        for _ in range(40):
            headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
            frames = read_frames(aws.stream, "GET", url, headers=headers)
            first_cut.set()
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


def test_a_finished_stream_closes_at_its_end_on_the_dynamodb_log(aws):
    """The same end as the embedded server: 204 at the terminal event, 416 past it, never a ping."""
    log, session_id, message_id = _turn(aws)
    _write_turn(log, stream_key(session_id, message_id), ["a ", "b "], 0)
    url = f"api/v1/sessions/{session_id}/messages/{message_id}/events"
    frames = read_frames(aws.stream, "GET", url)
    last = frames[-1].id
    assert frames[-1].type == "complete"
    at_end = aws.stream.get(url, headers={"Last-Event-ID": str(last)})
    past = aws.stream.get(url, params={"offset": last + 5})
    overflow = aws.stream.get(url, params={"offset": 2**63})
    tail = read_frames(aws.stream, "GET", url, headers={"Last-Event-ID": str(last - 1)})
    assert at_end.status_code == 204
    assert at_end.content == b""
    assert past.status_code == 416
    assert past.json()["error"]["field"] == "offset"
    assert overflow.status_code == 422
    assert [f.type for f in tail] == ["complete"]
