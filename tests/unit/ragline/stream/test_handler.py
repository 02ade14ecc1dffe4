import asyncio
import itertools

import pytest

from ragline.event.bus import BusEvent, BusEventType
from ragline.event.cancel import CancelToken
from ragline.stream.handler import StreamHandler, to_stream_event
from ragline.stream.memory import InMemoryStreamManager
from ragline.types import ResponseType

KEY = "s#m"
ANSWER = BusEventType.FINAL_ANSWER


def bus(type=ANSWER, content="", done=False, id="t-answer", data=None) -> BusEvent:
    return BusEvent(type=type, id=id, content=content, done=done, data=data or {})


def run(scenario):
    return asyncio.run(scenario())


def test_to_stream_event_maps_types():
    event = to_stream_event(bus(BusEventType.THOUGHT, "x", id="t-thinking", data={"a": 1}))
    assert event.type == ResponseType.THINKING
    assert event.content == "x"
    assert event.data == {"a": 1}
    assert to_stream_event(bus(ANSWER)).type == ResponseType.ANSWER
    assert to_stream_event(bus(BusEventType.STOP, done=True)).type == ResponseType.STOP


class TimedManager(InMemoryStreamManager):
    """The in-memory log, noting the loop's time of each append."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    async def append_event(self, key, event):
        self.times.append(asyncio.get_running_loop().time())
        return await super().append_event(key, event)

    async def window_passed(self, window: float) -> None:
        """Return once ``window`` s have passed since the last append."""
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self.times[-1] + window - loop.time()))


def test_the_first_chunk_is_written_at_once_and_the_next_ones_within_the_window_wait_joined():
    async def scenario():
        manager = TimedManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=50)
        for part, data in (("Hel", {"event_id": "a"}), ("lo ", {"x": 1}), ("world", {"x": 2})):
            await handler.handle(bus(content=part, data=data))
        at_once = [e.content for e in await manager.get_events(KEY)]
        assert await manager.wait_for_append(KEY, 0, timeout=10)
        return at_once, await manager.get_events(KEY), manager.times, handler.appended

    at_once, events, times, appended = run(scenario)
    assert at_once == ["Hel"]
    assert [e.content for e in events] == ["Hel", "lo world"]
    assert [e.data for e in events] == [{"event_id": "a"}, {"x": 2}]
    assert all(e.type == ResponseType.ANSWER for e in events)
    # The joined chunks waited out the window since the first write (less the microseconds between the handler's
    # clock reading and the log's, as in the test below).
    assert times[1] - times[0] >= 0.05 * 0.99
    assert appended == 2


def test_a_chunk_that_comes_a_window_after_the_last_write_is_written_at_once():
    """Pieces a window apart reach the log a window apart, each as it comes (a batch that always waited its window
    wrote them alternately one and two windows apart)."""

    async def scenario():
        manager = TimedManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=20)
        seen = []
        for word in ("one", "two", "three"):
            await handler.handle(bus(content=word))
            seen.append([e.content for e in await manager.get_events(KEY)])
            await manager.window_passed(0.02)
        return seen

    assert run(scenario) == [["one"], ["one", "two"], ["one", "two", "three"]]


def test_chunks_write_at_most_once_per_window():
    async def scenario():
        manager = TimedManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=20, batch_max_chars=10**9)  # the window alone
        loop = asyncio.get_running_loop()
        ends = loop.time() + 5 * 0.02
        sent = 0
        while loop.time() < ends:  # chunks back to back for five windows, the loop free between them
            await handler.handle(bus(content=f"{sent} "))
            sent += 1
            await asyncio.sleep(0)
        await handler.handle(bus(content="", done=True))
        return sent, await manager.get_events(KEY), manager.times

    sent, events, times = run(scenario)
    chunks = [e for e in events if not e.done]
    assert "".join(e.content for e in chunks) == "".join(f"{i} " for i in range(sent))
    assert 2 <= len(chunks) < sent
    # The last batch is flushed by the answer's end, which waits for no window; the writes before it kept theirs.
    gaps = [b - a for a, b in itertools.pairwise(times[: len(chunks) - 1])]
    assert gaps
    assert min(gaps) >= 0.02 * 0.99


def test_different_event_type_flushes_the_batch_first():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10_000)
        await handler.handle(bus(BusEventType.THOUGHT, "think ", id="t-thinking"))  # at once: the window is open
        await handler.handle(bus(BusEventType.THOUGHT, "more ", id="t-thinking"))
        await handler.handle(bus(BusEventType.THOUGHT, "still", id="t-thinking"))
        await handler.handle(bus(BusEventType.REFERENCES, id="t-references", done=True))
        await handler.handle(bus(content="a"))
        await handler.handle(bus(content="b"))
        await handler.handle(bus(content="", done=True))
        await handler.handle(bus(BusEventType.COMPLETE, id="t-complete", done=True))
        return await manager.get_events(KEY)

    events = run(scenario)
    assert [(e.type, e.content, e.done) for e in events] == [
        (ResponseType.THINKING, "think ", False),
        (ResponseType.THINKING, "more still", False),
        (ResponseType.REFERENCES, "", True),
        (ResponseType.ANSWER, "ab", False),
        (ResponseType.ANSWER, "", True),
        (ResponseType.COMPLETE, "", True),
    ]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4, 5]


def test_other_id_of_same_type_flushes_batch():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10_000)
        await handler.handle(bus(content="a", id="one"))
        await handler.handle(bus(content="b", id="two"))
        await handler.flush()
        return await manager.get_events(KEY)

    assert [(e.id, e.content) for e in run(scenario)] == [("one", "a"), ("two", "b")]


def test_max_chars_flushes_without_waiting():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10_000, batch_max_chars=5)
        await handler.handle(bus(content="x"))  # at once: the window is open
        await handler.handle(bus(content="abc"))
        first = await manager.get_events(KEY)
        await handler.handle(bus(content="def"))
        second = await manager.get_events(KEY)
        return first, second

    first, second = run(scenario)
    assert [e.content for e in first] == ["x"]
    assert [e.content for e in second] == ["x", "abcdef"]


def test_zero_delay_appends_each_chunk():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=0)
        for part in "abc":
            await handler.handle(bus(content=part))
        return await manager.get_events(KEY)

    assert [e.content for e in run(scenario)] == ["a", "b", "c"]


def test_done_answer_written_once():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10_000)
        await handler.handle(bus(content="text"))
        await handler.handle(bus(content="", done=True, data={"n": 1}))
        await handler.handle(bus(content="", done=True, data={"n": 2}))
        await handler.handle(bus(BusEventType.COMPLETE, id="c", done=True))
        return await manager.get_events(KEY)

    events = run(scenario)
    done_answers = [e for e in events if e.type == ResponseType.ANSWER and e.done]
    assert len(done_answers) == 1
    assert done_answers[0].data == {"n": 1}
    assert [e.type for e in events] == [ResponseType.ANSWER, ResponseType.ANSWER, ResponseType.COMPLETE]


def test_done_answers_of_different_ids_are_both_written():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=0)
        await handler.handle(bus(done=True, id="one"))
        await handler.handle(bus(done=True, id="two"))
        return await manager.get_events(KEY)

    assert [e.id for e in run(scenario)] == ["one", "two"]


@pytest.mark.parametrize("terminal", [BusEventType.COMPLETE, BusEventType.ERROR, BusEventType.STOP])
def test_nothing_appended_after_terminal_event(terminal):
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10)
        await handler.handle(bus(content="a"))
        await handler.handle(bus(terminal, id="end", done=True))
        finished = handler.finished
        await handler.handle(bus(content="late"))
        await handler.handle(bus(BusEventType.TOOL_CALL, id="tool"))
        await handler.handle(bus(BusEventType.COMPLETE, id="c2", done=True))
        await asyncio.sleep(0.05)
        await handler.flush()
        return finished, await manager.get_events(KEY)

    finished, events = run(scenario)
    assert finished is True
    assert [e.type for e in events] == [ResponseType.ANSWER, ResponseType(terminal.value)]
    assert events[0].content == "a"


def test_nothing_appended_once_cancelled():
    async def scenario():
        manager = InMemoryStreamManager()
        token = CancelToken()
        handler = StreamHandler(manager, KEY, cancel=token, batch_max_delay_ms=20)
        await handler.handle(bus(BusEventType.AGENT_QUERY, "q", id="aq", done=True))
        await handler.handle(bus(content="first "))  # at once: the window is open
        await handler.handle(bus(content="partial"))  # pending in the batch when the stop comes
        token.cancel()
        await handler.handle(bus(content="more"))
        await handler.handle(bus(BusEventType.TOOL_RESULT, id="tool", done=True))
        await handler.handle(bus(content="", done=True))
        await asyncio.sleep(0.08)  # the batch timer fires after the stop
        await handler.flush()
        return await manager.get_events(KEY)

    events = run(scenario)
    assert [(e.type, e.content) for e in events] == [(ResponseType.AGENT_QUERY, "q"), (ResponseType.ANSWER, "first ")]


@pytest.mark.parametrize("terminal", [BusEventType.COMPLETE, BusEventType.ERROR])
def test_no_complete_or_error_appended_once_cancelled(terminal):
    """After a stop, ``stop`` must be the last event: the handler may not add ``complete``/``error``."""

    async def scenario():
        manager = InMemoryStreamManager()
        token = CancelToken()
        handler = StreamHandler(manager, KEY, cancel=token, batch_max_delay_ms=0)
        await handler.handle(bus(content="partial"))
        token.cancel()
        await handler.handle(bus(terminal, id="end", done=True))
        return await manager.get_events(KEY)

    assert [e.type for e in run(scenario)] == [ResponseType.ANSWER]


def test_order_preserved_across_many_events():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10_000)
        sent = []
        for round_ in range(5):
            await handler.handle(bus(BusEventType.TOOL_CALL, f"call{round_}", id=f"tool{round_}"))
            sent.append(("tool_call", f"call{round_}"))
            for i in range(4):
                await handler.handle(bus(content=f"{round_}.{i} "))
            if round_ == 0:  # the first chunk is written at once, the window being open; the others wait, joined
                sent += [("answer", "0.0 "), ("answer", "0.1 0.2 0.3 ")]
            else:
                sent.append(("answer", "".join(f"{round_}.{i} " for i in range(4))))
        await handler.handle(bus(BusEventType.COMPLETE, id="c", done=True))
        sent.append(("complete", ""))
        return sent, await manager.get_events(KEY)

    sent, events = run(scenario)
    assert [(e.type.value, e.content) for e in events] == sent
    assert [e.seq for e in events] == list(range(len(sent)))


def test_flush_is_idempotent_and_writes_pending_once():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=30)
        await handler.handle(bus(content="x"))
        await handler.flush()
        await handler.flush()
        await asyncio.sleep(0.08)  # the cancelled timer must not write again
        return await manager.get_events(KEY), handler.appended

    events, appended = run(scenario)
    assert [e.content for e in events] == ["x"]
    assert appended == 1
