"""What every event log promises (StreamManager): in memory, in SQLite and in DynamoDB (moto, EventsTable of
template.yaml). The logs that wake their readers (memory, SQLite) share the waiting rules too. Each backend's
own behaviour stays in its test file."""

from __future__ import annotations

import asyncio
import time

import pytest

from ragline.stream.base import StreamManager
from ragline.stream.dynamodb import DynamoDBStreamManager
from ragline.stream.memory import InMemoryStreamManager
from ragline.stream.sqlite import SqliteStreamManager
from ragline.types import ResponseType, StreamEvent

KEY = "sess#msg"


def event(i: int, type=ResponseType.ANSWER, done=False) -> StreamEvent:
    return StreamEvent(id=f"e{i}", type=type, content=f"c{i}", done=done)


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def log(request) -> StreamManager:
    if request.param == "dynamodb":
        return DynamoDBStreamManager(request.getfixturevalue("aws").table("EventsTable"), 3600)
    if request.param == "sqlite":
        return SqliteStreamManager(request.getfixturevalue("db"))
    return InMemoryStreamManager()


@pytest.fixture(params=["memory", "sqlite"])
def waking_log(request) -> StreamManager:
    if request.param == "sqlite":
        return SqliteStreamManager(request.getfixturevalue("db"))
    return InMemoryStreamManager()


def test_seq_is_gap_free_from_zero(log):
    async def scenario():
        stored = [await log.append_event(KEY, event(i)) for i in range(6)]
        return stored, await log.get_events(KEY)

    stored, events = asyncio.run(scenario())
    assert [e.seq for e in stored] == list(range(6))
    assert [e.seq for e in events] == list(range(6))
    assert [e.content for e in events] == [f"c{i}" for i in range(6)]


def test_events_round_trip_all_fields(log):
    original = StreamEvent(
        id="refs",
        type=ResponseType.REFERENCES,
        content='ü ünïcode 中文 "quoted" \n newline',
        done=True,
        timestamp=123456,
        data={"count": 2, "score": 0.25, "nested": {"a": [1, 2]}, "none": None},
        knowledge_references=[{"id": "c1", "score": 0.5}],
    )

    async def scenario():
        written = await log.append_event(KEY, original)
        return written, (await log.get_events(KEY))[0], await log.last_event(KEY)

    written, read, last = asyncio.run(scenario())
    assert written == original.model_copy(update={"seq": 0})
    assert read == written
    assert last == written


def test_get_events_from_offset(log):
    async def scenario():
        for i in range(5):
            await log.append_event(KEY, event(i))
        return (
            await log.get_events(KEY, 2),
            await log.get_events(KEY, 3),
            await log.get_events(KEY, 5),
            await log.get_events(KEY, 99),
            await log.get_events(KEY, -1),
            await log.get_events(KEY, -3),
            await log.get_events("other#key"),
        )

    from_two, from_three, at_end, beyond, minus_one, minus_three, other = asyncio.run(scenario())
    assert [e.seq for e in from_two] == [2, 3, 4]
    assert [e.seq for e in from_three] == [3, 4]
    assert at_end == []
    assert beyond == []
    assert [e.seq for e in minus_one] == [0, 1, 2, 3, 4]
    assert [e.seq for e in minus_three] == [0, 1, 2, 3, 4]
    assert other == []


def test_keys_are_independent(log):
    async def scenario():
        await log.append_event("a#1", event(0))
        await log.append_event("a#1", event(1))
        other = await log.append_event("b#1", event(2))
        return other, await log.get_events("a#1"), await log.get_events("b#1")

    other, a, b = asyncio.run(scenario())
    assert other.seq == 0
    assert [e.seq for e in a] == [0, 1]
    assert [(e.id, e.content) for e in b] == [("e2", "c2")]


def test_last_event_and_has_events(log):
    async def scenario():
        before = (await log.last_event(KEY), await log.has_events(KEY))
        for i in range(3):
            await log.append_event(KEY, event(i))
        await log.append_event(KEY, event(3, ResponseType.COMPLETE, done=True))
        return before, await log.last_event(KEY), await log.has_events(KEY), await log.has_events("x#y")

    (last_before, has_before), last, has, has_other = asyncio.run(scenario())
    assert last_before is None
    assert has_before is False
    assert last is not None
    assert (last.seq, last.type, last.id, last.is_terminal) == (3, ResponseType.COMPLETE, "e3", True)
    assert has is True
    assert has_other is False


def test_wait_for_append_wakes_waiter(waking_log):
    async def scenario():
        started = time.monotonic()
        waiter = asyncio.create_task(waking_log.wait_for_append(KEY, -1, timeout=5.0))
        await asyncio.sleep(0.02)
        assert not waiter.done()
        await waking_log.append_event(KEY, event(0))
        woken = await asyncio.wait_for(waiter, 1.0)
        return woken, time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is True
    assert elapsed < 1.0


def test_wait_wakes_several_waiters(waking_log):
    async def scenario():
        waiters = [asyncio.create_task(waking_log.wait_for_append(KEY, -1, timeout=5.0)) for _ in range(3)]
        await asyncio.sleep(0.01)
        await waking_log.append_event(KEY, event(0))
        return await asyncio.wait_for(asyncio.gather(*waiters), 1.0)

    assert asyncio.run(scenario()) == [True, True, True]


def test_wait_for_append_times_out_without_an_append_to_its_key(waking_log):
    async def scenario():
        await waking_log.append_event("other#key", event(0))
        started = time.monotonic()
        woken = await waking_log.wait_for_append(KEY, -1, timeout=0.05)
        return woken, time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is False
    assert elapsed >= 0.04


def test_wait_for_append_returns_at_once_when_behind_and_is_not_woken_by_an_older_seq(waking_log):
    async def scenario():
        await waking_log.append_event(KEY, event(0))
        await waking_log.append_event(KEY, event(1))
        started = time.monotonic()
        behind = await waking_log.wait_for_append(KEY, 0, timeout=2.0)
        elapsed = time.monotonic() - started
        caught_up = await waking_log.wait_for_append(KEY, 1, timeout=0.05)
        return behind, elapsed, caught_up

    behind, elapsed, caught_up = asyncio.run(scenario())
    assert behind is True
    assert elapsed < 0.5
    assert caught_up is False


# Terminal events: at most one per log, whoever writes it -------------------------------------------------
def test_append_if_open_appends_until_a_terminal_event_then_refuses(log):
    async def scenario():
        first = await log.append_if_open(KEY, event(0))
        terminal = await log.append_if_open(KEY, event(1, ResponseType.STOP, done=True))
        after = await log.append_if_open(KEY, event(2, ResponseType.ERROR, done=True))
        return first, terminal, after, await log.get_events(KEY)

    first, terminal, after, events = asyncio.run(scenario())
    assert first is not None
    assert first.seq == 0
    assert terminal is not None
    assert terminal.seq == 1
    assert after is None
    assert [(e.seq, e.type) for e in events] == [(0, ResponseType.ANSWER), (1, ResponseType.STOP)]


def test_append_if_open_on_an_empty_log_starts_at_zero(log):
    stored = asyncio.run(log.append_if_open(KEY, event(0, ResponseType.ERROR, done=True)))
    assert stored is not None
    assert stored.seq == 0


def test_racing_terminal_writers_leave_exactly_one_terminal_event(log):
    """Eight writers in eight threads (each with its own loop) end the same turn at once: one wins."""
    import threading

    asyncio.run(log.append_event(KEY, event(0)))
    barrier = threading.Barrier(8)
    results: list[object] = []

    def writer(i: int) -> None:
        barrier.wait()
        results.append(asyncio.run(log.append_if_open(KEY, event(10 + i, ResponseType.ERROR, done=True))))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = asyncio.run(log.get_events(KEY))
    assert sum(1 for r in results if r is not None) == 1
    assert [e.seq for e in events] == [0, 1]
    assert events[-1].is_terminal


# Readers positioned at or past the end of a log -------------------------------------------------------------
def _finished(log):
    async def scenario():
        for i in range(3):
            await log.append_event(KEY, event(i))
        await log.append_if_open(KEY, event(3, ResponseType.COMPLETE, done=True))

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("start", "expected"),
    [(0, "readable"), (3, "readable"), (4, "ended"), (5, "beyond"), (2**63 - 1, "beyond")],
)
def test_stream_position_of_a_finished_log(log, start, expected):
    from ragline.stream.replay import stream_position

    _finished(log)
    assert asyncio.run(stream_position(log, KEY, start)) == expected


@pytest.mark.parametrize(
    ("start", "expected"), [(0, "readable"), (2, "readable"), (3, "beyond"), (2**63 - 1, "beyond")]
)
def test_stream_position_of_a_running_log(log, start, expected):
    from ragline.stream.replay import stream_position

    async def scenario():
        for i in range(2):
            await log.append_event(KEY, event(i))
        return await stream_position(log, KEY, start)

    assert asyncio.run(scenario()) == expected


@pytest.mark.parametrize("start", [3, 4, 5, 2**63 - 1])
def test_follow_from_the_terminal_event_or_past_it_ends_at_once(log, start):
    from ragline.stream.replay import follow

    _finished(log)

    async def scenario():
        return [e.seq async for e in follow(log, KEY, start, min_wait_s=5.0, max_wait_s=5.0)]

    started = time.monotonic()
    seqs = asyncio.run(asyncio.wait_for(scenario(), 3.0))
    assert seqs == ([3] if start == 3 else [])
    assert time.monotonic() - started < 3.0
