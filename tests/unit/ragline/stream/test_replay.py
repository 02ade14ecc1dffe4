import asyncio

import pytest

from ragline.stream.memory import InMemoryStreamManager
from ragline.stream.replay import follow, start_offset, summarize_answer
from ragline.types import ResponseType, StreamEvent

KEY = "s#m"
A = ResponseType.ANSWER


def ev(type, content="", done=False, id="t-answer", **kwargs) -> StreamEvent:
    return StreamEvent(id=id, type=type, content=content, done=done, **kwargs)


@pytest.mark.parametrize(
    ("last_event_id", "offset", "expected"),
    [
        ("5", None, 6),
        ("0", None, 1),
        (" 12 ", None, 13),
        ("5", 2, 6),  # Last-Event-ID wins over ?offset=
        (None, 7, 7),
        (None, 0, 0),
        ("", 3, 3),
        ("   ", None, 0),
        (None, None, 0),
        ("-1", None, 0),  # "nothing received yet"
        (str(2**63 - 2), None, 2**63 - 1),
        (None, 2**63 - 1, 2**63 - 1),
    ],
)
def test_start_offset(last_event_id, offset, expected):
    assert start_offset(last_event_id, offset) == expected


@pytest.mark.parametrize(
    "bad",
    ["abc", "1.5", "5x", "-", "--5", "+5", "-2", "\u0663", "1_000", str(2**63 - 1), str(2**63), "9" * 400, "0x10"],
)
def test_invalid_last_event_id_raises(bad):
    with pytest.raises(ValueError, match="Last-Event-ID"):
        start_offset(bad, None)


@pytest.mark.parametrize("bad", [-1, 2**63, 2**64, -(2**63)])
def test_offset_outside_what_a_log_holds_raises(bad):
    with pytest.raises(ValueError, match="offset"):
        start_offset(None, bad)


async def collect(manager, start, **kwargs):
    return [event async for event in follow(manager, KEY, start, **kwargs)]


async def fill(manager, events):
    for event in events:
        await manager.append_event(KEY, event)


@pytest.mark.parametrize("terminal", [ResponseType.COMPLETE, ResponseType.ERROR, ResponseType.STOP])
def test_follow_stops_after_terminal_event(terminal):
    async def scenario():
        manager = InMemoryStreamManager()
        await fill(
            manager,
            [
                ev(ResponseType.AGENT_QUERY, "q", done=True, id="aq"),
                ev(A, "Hel"),
                ev(A, "lo"),
                ev(terminal, done=True, id="end"),
                ev(A, "after the end"),  # a reader never sees past a terminal event
            ],
        )
        return await asyncio.wait_for(collect(manager, 0), 2.0)

    events = asyncio.run(scenario())
    assert [e.type for e in events] == [ResponseType.AGENT_QUERY, A, terminal]
    assert events[1].content == "Hello"
    assert events[1].seq == 2
    assert events[-1].seq == 3


def test_follow_from_offset_and_without_coalescing():
    async def scenario():
        manager = InMemoryStreamManager()
        await fill(manager, [ev(A, "a"), ev(A, "b"), ev(A, "c"), ev(ResponseType.COMPLETE, done=True, id="c")])
        return (
            await asyncio.wait_for(collect(manager, 1), 2.0),
            await asyncio.wait_for(collect(manager, 0, coalesce_replay=False), 2.0),
        )

    coalesced, raw = asyncio.run(scenario())
    assert [(e.content, e.seq) for e in coalesced] == [("bc", 2), ("", 3)]
    assert [e.seq for e in raw] == [0, 1, 2, 3]


def test_follow_waits_for_live_events():
    async def scenario():
        manager = InMemoryStreamManager()
        await fill(manager, [ev(A, "first")])
        reader = asyncio.create_task(collect(manager, 0, min_wait_s=0.01, max_wait_s=0.05))
        await asyncio.sleep(0.05)
        assert not reader.done()
        await fill(manager, [ev(A, " second")])
        await asyncio.sleep(0.05)
        await fill(manager, [ev(A, "", done=True), ev(ResponseType.COMPLETE, done=True, id="c")])
        return await asyncio.wait_for(reader, 2.0)

    events = asyncio.run(scenario())
    assert "".join(e.content for e in events if e.type == A) == "first second"
    assert events[-1].type == ResponseType.COMPLETE
    # no event is delivered twice: seqs strictly increase
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs))
    assert seqs[-1] == 3


def test_follow_resuming_after_a_coalesced_frame_loses_and_repeats_nothing():
    async def scenario():
        manager = InMemoryStreamManager()
        await fill(manager, [ev(A, "ab"), ev(A, "cd"), ev(A, "ef")])
        reader = follow(manager, KEY, 0, min_wait_s=0.01, max_wait_s=0.02)
        first = await asyncio.wait_for(reader.__anext__(), 2.0)
        await reader.aclose()
        await fill(manager, [ev(A, "gh"), ev(ResponseType.COMPLETE, done=True, id="c")])
        resumed = await asyncio.wait_for(collect(manager, start_offset(str(first.seq), None)), 2.0)
        return first, resumed

    first, resumed = asyncio.run(scenario())
    assert first.content == "abcdef"
    assert first.seq == 2
    assert first.content + "".join(e.content for e in resumed if e.type == A) == "abcdefgh"


def test_summarize_answer_stops_at_first_terminal():
    events = [
        ev(ResponseType.REFERENCES, done=True, id="r", knowledge_references=[{"id": "c1"}]),
        ev(A, "Hello "),
        ev(A, "world", data={"is_fallback": False}),
        ev(A, "", done=True),
        ev(ResponseType.STOP, done=True, id="stop"),
        ev(A, " ignored"),
        ev(ResponseType.COMPLETE, done=True, id="c"),
    ]
    summary = summarize_answer(events)
    assert summary.content == "Hello world"
    assert summary.terminal == ResponseType.STOP
    assert summary.references == [{"id": "c1"}]
    assert summary.is_fallback is False


def test_summarize_answer_fallback_and_no_terminal():
    summary = summarize_answer([ev(A, "Sorry", data={"is_fallback": True}), ev(A, "", done=True)])
    assert summary.content == "Sorry"
    assert summary.is_fallback is True
    assert summary.terminal is None
    assert summary.references == []


def test_summarize_answer_ignores_thinking_and_references_after_terminal():
    summary = summarize_answer(
        [
            ev(ResponseType.THINKING, "hmm", id="t"),
            ev(A, "x"),
            ev(ResponseType.ERROR, done=True, id="e"),
            ev(ResponseType.REFERENCES, done=True, id="r", knowledge_references=[{"id": "late"}]),
        ]
    )
    assert summary.content == "x"
    assert summary.terminal == ResponseType.ERROR
    assert summary.references == []


def test_summarize_empty_log():
    summary = summarize_answer([])
    assert summary.content == ""
    assert summary.terminal is None
