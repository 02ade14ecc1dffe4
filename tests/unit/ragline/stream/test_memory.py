import asyncio
import time

from ragline.stream.memory import InMemoryStreamManager
from ragline.types import ResponseType, StreamEvent

KEY = "sess#msg"


def event(i: int, type=ResponseType.ANSWER, done=False) -> StreamEvent:
    return StreamEvent(id=f"e{i}", type=type, content=f"c{i}", done=done)


def test_append_does_not_mutate_the_input_event():
    async def scenario():
        manager = InMemoryStreamManager()
        original = event(0)
        await manager.append_event(KEY, original)
        return original

    assert asyncio.run(scenario()).seq == -1


def test_readers_get_copies():
    async def scenario():
        manager = InMemoryStreamManager()
        returned = await manager.append_event(KEY, event(0))
        returned.content = "changed by the writer"
        read = (await manager.get_events(KEY))[0]
        read.content = "changed by a reader"
        return (await manager.get_events(KEY))[0]

    assert asyncio.run(scenario()).content == "c0"


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
