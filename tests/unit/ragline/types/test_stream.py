import json

from ragline.types import ResponseType, StreamEvent, StreamResponse
from ragline.types.stream import COALESCABLE_TYPES, TERMINAL_TYPES


def response_for(event: StreamEvent) -> StreamResponse:
    return StreamResponse.from_event(event, request_id="req", session_id="sess", assistant_message_id="am")


def test_from_event_copies_fields():
    event = StreamEvent(
        id="e1",
        type=ResponseType.ANSWER,
        content="hi",
        done=True,
        data={"event_id": "e1"},
        knowledge_references=[{"id": "c"}],
        seq=4,
    )
    response = response_for(event)
    assert response.id == "req"
    assert response.response_type == ResponseType.ANSWER
    assert response.content == "hi"
    assert response.done is True
    assert response.data == {"event_id": "e1"}
    assert response.knowledge_references == [{"id": "c"}]
    assert response.session_id == "sess"
    assert response.assistant_message_id == "am"


def test_to_json_excludes_none_fields():
    event = StreamEvent(id="e1", type=ResponseType.ANSWER, content="x")
    response = StreamResponse(id="req", response_type=ResponseType.ANSWER, content="x")
    payload = json.loads(response.to_json())
    assert payload == {"id": "req", "response_type": "answer", "content": "x", "done": False}
    payload = json.loads(response_for(event).to_json())
    assert "knowledge_references" not in payload
    assert "data" not in payload  # empty data becomes None and is left out
    assert payload["session_id"] == "sess"
    assert payload["assistant_message_id"] == "am"


def test_to_json_keeps_false_and_empty_strings():
    payload = json.loads(StreamResponse(id="r", response_type=ResponseType.COMPLETE, content="").to_json())
    assert payload["done"] is False
    assert payload["content"] == ""


def test_to_json_does_not_leak_event_seq_or_timestamp():
    payload = json.loads(response_for(StreamEvent(id="e", type=ResponseType.STOP, seq=9, timestamp=5)).to_json())
    assert "seq" not in payload
    assert "timestamp" not in payload


def test_terminal_and_coalescable_types():
    assert {ResponseType.COMPLETE, ResponseType.ERROR, ResponseType.STOP} == TERMINAL_TYPES
    assert {ResponseType.ANSWER, ResponseType.THINKING, ResponseType.REFLECTION} == COALESCABLE_TYPES
    for response_type in ResponseType:
        assert StreamEvent(id="e", type=response_type).is_terminal == (response_type in TERMINAL_TYPES)


def test_stream_event_defaults():
    event = StreamEvent(id="e", type=ResponseType.ANSWER)
    assert event.seq == -1
    assert event.timestamp > 0
    assert event.data == {}
    assert event.done is False
