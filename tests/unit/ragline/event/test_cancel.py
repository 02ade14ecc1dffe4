"""until_cancelled: a stop ends the model's stream at once and closes it; other cancellations still stand."""

import asyncio
from collections.abc import AsyncIterator

import pytest

from ragline.event.cancel import CancelToken, until_cancelled


class Source:
    """An async generator of chunks that waits for each one to be released, and records how it ended."""

    def __init__(self) -> None:
        self.released: asyncio.Queue[str | None] = asyncio.Queue()
        self.waiting = asyncio.Event()
        self.closed = False
        self.cancelled = False

    async def chunks(self) -> AsyncIterator[str]:
        try:
            while True:
                self.waiting.set()
                chunk = await self.released.get()
                self.waiting.clear()
                if chunk is None:
                    return
                yield chunk
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.closed = True


def run(scenario):
    return asyncio.run(scenario())


def test_every_chunk_arrives_when_nothing_stops():
    async def scenario():
        source, token = Source(), CancelToken()
        for chunk in ("a", "b", "c", None):
            source.released.put_nowait(chunk)
        return [c async for c in until_cancelled(source.chunks(), token)], source.closed

    assert run(scenario) == (["a", "b", "c"], True)


def test_without_a_token_the_chunks_pass_through():
    async def scenario():
        source = Source()
        for chunk in ("a", None):
            source.released.put_nowait(chunk)
        return [c async for c in until_cancelled(source.chunks(), None)]

    assert run(scenario) == ["a"]


def test_a_stop_during_a_read_ends_the_stream_at_once_and_closes_the_source():
    async def scenario():
        source, token = Source(), CancelToken()
        got: list[str] = []

        async def consume() -> str:
            async for chunk in until_cancelled(source.chunks(), token):
                got.append(chunk)
            return "ended"

        source.released.put_nowait("a")
        task = asyncio.create_task(consume())
        await source.waiting.wait()  # "a" was there at once: this is the second read, in flight
        assert got == ["a"]
        token.cancel()
        outcome = await task  # not a CancelledError: the consumer goes on after its loop
        return outcome, got, source.cancelled, source.closed, task.cancelling()

    assert run(scenario) == ("ended", ["a"], True, True, 0)


def test_a_stop_between_reads_ends_the_stream_before_the_next_read():
    async def scenario():
        source, token = Source(), CancelToken()
        got: list[str] = []
        source.released.put_nowait("a")
        source.released.put_nowait("b")
        async for chunk in until_cancelled(source.chunks(), token):
            got.append(chunk)
            token.cancel()  # the consumer itself stops (the serverless lease lost, say)
        return got, source.cancelled, source.closed

    assert run(scenario) == (["a"], False, True)


@pytest.mark.parametrize(
    "stop_first",
    [False, True],
    ids=["the consuming task cancelled", "a stop, then the task cancelled (the embedded runtime's stop)"],
)
def test_a_cancelled_consuming_task_stays_cancelled(stop_first):
    async def scenario():
        source, token = Source(), CancelToken()
        task = asyncio.create_task(_drain(until_cancelled(source.chunks(), token)))
        await source.waiting.wait()
        if stop_first:
            token.cancel()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return source.closed

    assert run(scenario) is True


def test_a_token_removes_its_callback_when_the_stream_ends():
    async def scenario():
        source, token = Source(), CancelToken()
        source.released.put_nowait(None)
        assert [c async for c in until_cancelled(source.chunks(), token)] == []
        return len(token._callbacks)

    assert run(scenario) == 0


async def _drain(chunks: AsyncIterator[str]) -> list[str]:
    return [c async for c in chunks]
