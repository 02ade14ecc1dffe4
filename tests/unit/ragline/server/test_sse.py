import json

from ragline.server.sse import sse_frame
from ragline.types import ResponseType, StreamEvent


def frame(event: StreamEvent) -> bytes:
    return sse_frame(event, request_id="req-1", session_id="sess-1", assistant_message_id="msg-1")


def test_exact_framing():
    event = StreamEvent(id="x-answer", type=ResponseType.ANSWER, content="Hi", data={"event_id": "x"}, seq=7)
    expected_json = (
        '{"id":"req-1","response_type":"answer","content":"Hi","done":false,'
        '"session_id":"sess-1","assistant_message_id":"msg-1","data":{"event_id":"x"}}'
    )
    assert frame(event) == f"id: 7\nevent:message\ndata: {expected_json}\n\n".encode()


def test_frame_structure_and_payload():
    event = StreamEvent(
        id="e",
        type=ResponseType.REFERENCES,
        done=True,
        knowledge_references=[{"id": "c1"}],
        seq=0,
    )
    raw = frame(event).decode()
    assert raw.endswith("\n\n")
    lines = raw[:-2].split("\n")
    assert lines[0] == "id: 0"
    # No space after the colon: WeKnora's Go client compares the raw text after "event:" with "message".
    assert lines[1] == "event:message"
    assert lines[2].startswith("data: ")
    assert len(lines) == 3
    payload = json.loads(lines[2][len("data: ") :])
    assert payload["response_type"] == "references"
    # WeKnora's wire form: an integer match_type (0, embedding, when the reference has none), string metadata.
    assert payload["knowledge_references"] == [{"id": "c1", "match_type": 0, "metadata": {}}]
    assert payload["done"] is True
    assert "data" not in payload


def test_multiline_content_stays_on_one_data_line():
    event = StreamEvent(id="e", type=ResponseType.ANSWER, content="line one\nline two\r\n\n", seq=3)
    raw = frame(event).decode()
    assert raw.count("\n") == 4  # id, event, data and the blank line
    payload = json.loads(raw.split("data: ", 1)[1])
    assert payload["content"] == "line one\nline two\r\n\n"


def test_unicode_is_utf8_encoded():
    event = StreamEvent(id="e", type=ResponseType.ANSWER, content="中文 ✓", seq=12)
    raw = frame(event)
    assert raw.startswith(b"id: 12\nevent:message\ndata: ")
    assert json.loads(raw.decode("utf-8").split("data: ", 1)[1])["content"] == "中文 ✓"


def test_frames_follow_the_log_until_the_terminal_event():
    import asyncio

    from ragline.config import StreamConfig
    from ragline.server.sse import frames
    from ragline.stream.memory import InMemoryStreamManager

    async def scenario():
        manager = InMemoryStreamManager()
        for event in (
            StreamEvent(id="a", type=ResponseType.ANSWER, content="Hel"),
            StreamEvent(id="a", type=ResponseType.ANSWER, content="lo"),
            StreamEvent(id="a", type=ResponseType.ANSWER, done=True),
            StreamEvent(id="c", type=ResponseType.COMPLETE, done=True),
            StreamEvent(id="x", type=ResponseType.ANSWER, content="never sent"),
        ):
            await manager.append_event("s#m", event)
        body = frames(
            manager, "s#m", 0, StreamConfig(), request_id="req-1", session_id="sess-1", assistant_message_id="msg-1"
        )
        return [chunk async for chunk in body]

    chunks = asyncio.run(asyncio.wait_for(scenario(), 5.0))
    assert [c.split(b"\n", 1)[0] for c in chunks] == [b"id: 1", b"id: 2", b"id: 3"]
    payloads = [json.loads(c.decode().split("data: ", 1)[1]) for c in chunks]
    assert [p["content"] for p in payloads] == ["Hello", "", ""]
    assert payloads[-1]["response_type"] == "complete"


def test_references_carry_weknoras_integer_match_types_and_string_metadata():
    references = [
        {"id": "c1", "match_type": "keyword", "metadata": {"page": 3, "ok": True}, "extra": "kept"},
        {"id": "c2", "match_type": "web_search"},
        {"id": "c3", "match_type": "parent_chunk"},
    ]
    event = StreamEvent(id="e", type=ResponseType.REFERENCES, done=True, knowledge_references=references, seq=1)
    payload = json.loads(frame(event).decode().split("data: ", 1)[1])
    assert [r["match_type"] for r in payload["knowledge_references"]] == [1, 7, 4]
    assert payload["knowledge_references"][0]["metadata"] == {"page": "3", "ok": "true"}
    assert payload["knowledge_references"][0]["extra"] == "kept"
