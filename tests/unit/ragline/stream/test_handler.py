import asyncio

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


def test_answer_chunks_within_the_delay_become_one_entry():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=50)
        for part, data in (("Hel", {"event_id": "a"}), ("lo ", {"x": 1}), ("world", {"x": 2})):
            await handler.handle(bus(content=part, data=data))
        before_timer = await manager.get_events(KEY)
        await asyncio.sleep(0.15)
        return before_timer, await manager.get_events(KEY), handler.appended

    before_timer, events, appended = run(scenario)
    assert before_timer == []
    assert len(events) == 1
    assert events[0].content == "Hello world"
    assert events[0].type == ResponseType.ANSWER
    assert events[0].data == {"event_id": "a", "x": 2}
    assert appended == 1


def test_batches_after_the_delay_start_a_new_entry():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=20)
        await handler.handle(bus(content="one"))
        await asyncio.sleep(0.1)
        await handler.handle(bus(content="two"))
        await asyncio.sleep(0.1)
        return await manager.get_events(KEY)

    assert [e.content for e in run(scenario)] == ["one", "two"]


def test_different_event_type_flushes_the_batch_first():
    async def scenario():
        manager = InMemoryStreamManager()
        handler = StreamHandler(manager, KEY, batch_max_delay_ms=10_000)
        await handler.handle(bus(BusEventType.THOUGHT, "think ", id="t-thinking"))
        await handler.handle(bus(BusEventType.THOUGHT, "more", id="t-thinking"))
        await handler.handle(bus(BusEventType.REFERENCES, id="t-references", done=True))
        await handler.handle(bus(content="a"))
        await handler.handle(bus(content="b"))
        await handler.handle(bus(content="", done=True))
        await handler.handle(bus(BusEventType.COMPLETE, id="t-complete", done=True))
        return await manager.get_events(KEY)

    events = run(scenario)
    assert [(e.type, e.content, e.done) for e in events] == [
        (ResponseType.THINKING, "think more", False),
        (ResponseType.REFERENCES, "", True),
        (ResponseType.ANSWER, "ab", False),
        (ResponseType.ANSWER, "", True),
        (ResponseType.COMPLETE, "", True),
    ]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]


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
        await handler.handle(bus(content="abc"))
        first = await manager.get_events(KEY)
        await handler.handle(bus(content="def"))
        second = await manager.get_events(KEY)
        return first, second

    first, second = run(scenario)
    assert first == []
    assert [e.content for e in second] == ["abcdef"]


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
        await handler.handle(bus(content="partial"))  # pending in the batch when the stop comes
        token.cancel()
        await handler.handle(bus(content="more"))
        await handler.handle(bus(BusEventType.TOOL_RESULT, id="tool", done=True))
        await handler.handle(bus(content="", done=True))
        await asyncio.sleep(0.08)  # the batch timer fires after the stop
        await handler.flush()
        return await manager.get_events(KEY)

    events = run(scenario)
    assert [(e.type, e.content) for e in events] == [(ResponseType.AGENT_QUERY, "q")]


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
