import asyncio
import time

from ragline.stream.memory import InMemoryStreamManager
from ragline.types import ResponseType, StreamEvent

KEY = "sess#msg"


def event(i: int, type=ResponseType.ANSWER, done=False) -> StreamEvent:
    return StreamEvent(id=f"e{i}", type=type, content=f"c{i}", done=done)


def test_seq_is_gap_free_from_zero():
    async def scenario():
        manager = InMemoryStreamManager()
        stored = [await manager.append_event(KEY, event(i)) for i in range(5)]
        return stored, await manager.get_events(KEY)

    stored, events = asyncio.run(scenario())
    assert [e.seq for e in stored] == [0, 1, 2, 3, 4]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert [e.content for e in events] == [f"c{i}" for i in range(5)]


def test_append_does_not_mutate_the_input_event():
    async def scenario():
        manager = InMemoryStreamManager()
        original = event(0)
        await manager.append_event(KEY, original)
        return original

    assert asyncio.run(scenario()).seq == -1


def test_keys_are_independent():
    async def scenario():
        manager = InMemoryStreamManager()
        await manager.append_event("a#1", event(0))
        await manager.append_event("a#1", event(1))
        other = await manager.append_event("b#1", event(2))
        return other, await manager.get_events("a#1"), await manager.get_events("b#1")

    other, a, b = asyncio.run(scenario())
    assert other.seq == 0
    assert [e.seq for e in a] == [0, 1]
    assert [e.content for e in b] == ["c2"]


def test_get_events_from_offset():
    async def scenario():
        manager = InMemoryStreamManager()
        for i in range(5):
            await manager.append_event(KEY, event(i))
        return (
            await manager.get_events(KEY, 2),
            await manager.get_events(KEY, 5),
            await manager.get_events(KEY, 99),
            await manager.get_events(KEY, -3),
            await manager.get_events("missing"),
        )

    from_two, at_end, beyond, negative, missing = asyncio.run(scenario())
    assert [e.seq for e in from_two] == [2, 3, 4]
    assert at_end == []
    assert beyond == []
    assert [e.seq for e in negative] == [0, 1, 2, 3, 4]
    assert missing == []


def test_last_event_and_has_events():
    async def scenario():
        manager = InMemoryStreamManager()
        empty = (await manager.last_event(KEY), await manager.has_events(KEY))
        await manager.append_event(KEY, event(0))
        await manager.append_event(KEY, event(1, ResponseType.COMPLETE, done=True))
        return empty, await manager.last_event(KEY), await manager.has_events(KEY)

    (empty_last, empty_has), last, has = asyncio.run(scenario())
    assert empty_last is None
    assert empty_has is False
    assert last is not None
    assert last.seq == 1
    assert last.type == ResponseType.COMPLETE
    assert has is True


def test_readers_get_copies():
    async def scenario():
        manager = InMemoryStreamManager()
        returned = await manager.append_event(KEY, event(0))
        returned.content = "changed by the writer"
        read = (await manager.get_events(KEY))[0]
        read.content = "changed by a reader"
        return (await manager.get_events(KEY))[0]

    assert asyncio.run(scenario()).content == "c0"


def test_wait_for_append_wakes_waiter():
    async def scenario():
        manager = InMemoryStreamManager()
        started = time.monotonic()
        waiter = asyncio.create_task(manager.wait_for_append(KEY, -1, timeout=5.0))
        await asyncio.sleep(0.02)
        assert not waiter.done()
        await manager.append_event(KEY, event(0))
        woken = await asyncio.wait_for(waiter, 1.0)
        return woken, time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is True
    assert elapsed < 1.0


def test_wait_for_append_times_out_without_append():
    async def scenario():
        manager = InMemoryStreamManager()
        await manager.append_event("other#key", event(0))
        started = time.monotonic()
        woken = await manager.wait_for_append(KEY, -1, timeout=0.05)
        return woken, time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is False
    assert elapsed >= 0.04


def test_wait_for_append_returns_at_once_when_already_appended():
    async def scenario():
        manager = InMemoryStreamManager()
        await manager.append_event(KEY, event(0))
        await manager.append_event(KEY, event(1))
        started = time.monotonic()
        behind = await manager.wait_for_append(KEY, 0, timeout=2.0)
        elapsed = time.monotonic() - started
        caught_up = await manager.wait_for_append(KEY, 1, timeout=0.05)
        return behind, elapsed, caught_up

    behind, elapsed, caught_up = asyncio.run(scenario())
    assert behind is True
    assert elapsed < 0.5
    assert caught_up is False


def test_wait_wakes_several_waiters():
    async def scenario():
        manager = InMemoryStreamManager()
        waiters = [asyncio.create_task(manager.wait_for_append(KEY, -1, timeout=5.0)) for _ in range(3)]
        await asyncio.sleep(0.01)
        await manager.append_event(KEY, event(0))
        return await asyncio.wait_for(asyncio.gather(*waiters), 1.0)

    assert asyncio.run(scenario()) == [True, True, True]


def test_append_from_another_thread_wakes_waiter():
    import threading

    manager = InMemoryStreamManager()

    async def scenario():
        waiter = asyncio.create_task(manager.wait_for_append(KEY, -1, timeout=5.0))
        await asyncio.sleep(0.02)
        thread = threading.Thread(target=lambda: asyncio.run(manager.append_event(KEY, event(0))))
        started = time.monotonic()
        thread.start()
        woken = await asyncio.wait_for(waiter, 2.0)
        thread.join(2)
        return woken, time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is True
    assert elapsed < 1.0
