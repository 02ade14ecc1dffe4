import itertools
import random

import pytest

from ragline.stream.coalesce import coalesce
from ragline.types import ResponseType, StreamEvent

A, T, R = ResponseType.ANSWER, ResponseType.THINKING, ResponseType.REFLECTION


def ev(seq, type=A, content="", id="x-answer", done=False, data=None, ts=None) -> StreamEvent:
    return StreamEvent(
        id=id,
        type=type,
        content=content,
        done=done,
        data=data if data is not None else {},
        timestamp=ts if ts is not None else 1000 + seq,
        seq=seq,
    )


def snapshot(events):
    return [e.model_dump() for e in events]


@pytest.mark.parametrize("events", [[], [ev(0, content="a")], [ev(0, type=ResponseType.COMPLETE, done=True)]])
def test_fewer_than_two_events_returned_as_is(events):
    out = coalesce(events)
    assert out == events
    assert out is not events


@pytest.mark.parametrize("kind", [A, T, R])
def test_run_of_same_type_and_id_coalesces(kind):
    events = [
        ev(3, kind, "Hel", data={"event_id": "e", "a": 1}, ts=10),
        ev(4, kind, "lo ", data={"a": 2, "b": 1}, ts=20),
        ev(5, kind, "world", data={"c": 3}, ts=30),
    ]
    out = coalesce(events)
    assert len(out) == 1
    joined = out[0]
    assert joined.content == "Hello world"
    assert joined.seq == 5
    assert joined.timestamp == 30
    assert joined.data == {"event_id": "e", "a": 2, "b": 1, "c": 3}
    assert joined.type == kind
    assert joined.id == "x-answer"
    assert joined.done is False


def test_done_chunk_ends_run_and_passes_unchanged():
    done = ev(3, content="", done=True, data={"duration_ms": 5})
    events = [ev(0, content="a"), ev(1, content="b"), ev(2, content="c"), done]
    out = coalesce(events)
    assert [e.content for e in out] == ["abc", ""]
    assert [e.seq for e in out] == [2, 3]
    assert out[1] == done


def test_done_chunk_in_the_middle_separates_runs():
    events = [ev(0, content="a"), ev(1, content="b", done=True), ev(2, content="c"), ev(3, content="d")]
    out = coalesce(events)
    assert [(e.content, e.done, e.seq) for e in out] == [("a", False, 0), ("b", True, 1), ("cd", False, 3)]


def test_other_type_ends_run():
    events = [ev(0, A, "a"), ev(1, A, "b"), ev(2, T, "t", id="x-thinking"), ev(3, A, "c"), ev(4, A, "d")]
    out = coalesce(events)
    assert [(e.type, e.content, e.seq) for e in out] == [(A, "ab", 1), (T, "t", 2), (A, "cd", 4)]


def test_same_id_different_coalescable_type_ends_run():
    events = [ev(0, A, "a", id="same"), ev(1, T, "b", id="same"), ev(2, T, "c", id="same")]
    out = coalesce(events)
    assert [(e.type, e.content) for e in out] == [(A, "a"), (T, "bc")]


def test_other_id_ends_run():
    events = [ev(0, content="a", id="one"), ev(1, content="b", id="two"), ev(2, content="c", id="two")]
    out = coalesce(events)
    assert [(e.id, e.content, e.seq) for e in out] == [("one", "a", 0), ("two", "bc", 2)]


def test_non_coalescable_types_pass_unchanged():
    tool = StreamEvent(id="t", type=ResponseType.TOOL_CALL, content="Calling tool: x", seq=0)
    tool2 = StreamEvent(id="t", type=ResponseType.TOOL_CALL, content="again", seq=1)
    refs = StreamEvent(id="r", type=ResponseType.REFERENCES, done=True, knowledge_references=[{"id": 1}], seq=2)
    out = coalesce([tool, tool2, refs])
    assert out == [tool, tool2, refs]


def test_inputs_are_not_mutated():
    events = [
        ev(0, content="a", data={"k": 1}),
        ev(1, content="b", data={"k": 2, "j": 1}),
        ev(2, content="c"),
        ev(3, done=True),
        ev(4, type=ResponseType.COMPLETE, done=True, id="c"),
    ]
    before = snapshot(events)
    data_objects = [e.data for e in events]
    out = coalesce(events)
    assert snapshot(events) == before
    assert all(e.data is d for e, d in zip(events, data_objects, strict=True))
    # The output's data can be changed without reaching the stored events either.
    out[0].data["new"] = True
    out[0].content += "!"
    assert snapshot(events) == before


def test_content_is_preserved_in_order():
    rng = random.Random(7)
    events = []
    expected_text = ""
    for seq in range(200):
        kind = rng.choice([A, A, A, T, ResponseType.TOOL_CALL])
        done = rng.random() < 0.1
        content = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 4)))
        events.append(ev(seq, kind, content, id=rng.choice(["i1", "i2"]), done=done))
        if kind == A:
            expected_text += content
    out = coalesce(events)
    assert "".join(e.content for e in out if e.type == A) == expected_text
    # seqs strictly increase and the last event's seq is kept.
    seqs = [e.seq for e in out]
    assert seqs == sorted(set(seqs))
    assert seqs[-1] == events[-1].seq
    # no two adjacent outputs could still have been joined
    for left, right in itertools.pairwise(out):
        mergeable = (
            left.type in (A, T, R)
            and not left.done
            and not right.done
            and left.type == right.type
            and left.id == right.id
        )
        assert not mergeable
