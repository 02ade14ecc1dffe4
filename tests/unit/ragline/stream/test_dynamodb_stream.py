"""DynamoDBStreamManager and StageLog against the EventsTable of template.yaml, in moto."""

from __future__ import annotations

import asyncio
import time

import pytest

from ragline.stream.dynamodb import PARTITION, SORT, TTL_ATTRIBUTE, DynamoDBStreamManager, StageLog
from ragline.types import ResponseType, StreamEvent

KEY = "sess#msg"
TTL_SECONDS = 3600
# Over DynamoDB's 1 MB page of a Query: this many events this large make one log span several pages.
LARGE_CONTENT = "x" * 60_000
LARGE_EVENTS = 40


def event(i: int, type=ResponseType.ANSWER, done=False, **extra) -> StreamEvent:
    return StreamEvent(id=f"e{i}", type=type, content=f"c{i}", done=done, **extra)


@pytest.fixture
def table(aws):
    return aws.table("EventsTable")


@pytest.fixture
def log(table) -> DynamoDBStreamManager:
    return DynamoDBStreamManager(table, TTL_SECONDS)


class QuerySpy:
    def __init__(self, query) -> None:
        self.query = query
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        return self.query(**kwargs)


def test_an_append_after_another_writer_took_the_offset_continues_after_it(table):
    # Two processes (the step and the stop route) write one log; each caches its next offset.
    step, stop_route = DynamoDBStreamManager(table, TTL_SECONDS), DynamoDBStreamManager(table, TTL_SECONDS)
    assert [step.append_sync(KEY, event(i)).seq for i in range(2)] == [0, 1]
    assert stop_route.append_sync(KEY, event(2, ResponseType.STOP, done=True)).seq == 2
    assert step.append_sync(KEY, event(3)).seq == 3  # its cached offset 2 was taken
    assert step.append_sync(KEY, event(4)).seq == 4
    assert stop_route.append_sync(KEY, event(5)).seq == 5
    events = step.events_sync(KEY)
    assert [(e.seq, e.id) for e in events] == [(i, f"e{i}") for i in range(6)]


def test_put_at_a_taken_offset_returns_false_and_keeps_the_first_event(log):
    assert log.put_at(KEY, 0, event(0)) is True
    assert log.put_at(KEY, 1, event(1)) is True
    assert log.put_at(KEY, 1, event(99, ResponseType.ERROR, done=True)) is False
    events = log.events_sync(KEY)
    assert [(e.seq, e.id, e.type) for e in events] == [(0, "e0", ResponseType.ANSWER), (1, "e1", ResponseType.ANSWER)]
    # The next append goes after what is there, not onto it.
    assert log.append_sync(KEY, event(2)).seq == 2


def test_events_read_in_numeric_order(log):
    # seq is a number in the table: 10 sorts after 9, not between 1 and 2.
    for i in range(120):
        log.append_sync(KEY, event(i))
    events = log.events_sync(KEY)
    assert [e.seq for e in events] == list(range(120))
    assert [e.id for e in events] == [f"e{i}" for i in range(120)]
    assert [e.seq for e in log.events_sync(KEY, 95)] == list(range(95, 120))
    assert log.last_event_sync(KEY).seq == 119


def test_get_events_pages_past_one_megabyte(log, table, monkeypatch):
    for i in range(LARGE_EVENTS):
        log.append_sync(KEY, StreamEvent(id=f"e{i}", type=ResponseType.ANSWER, content=f"{i}:{LARGE_CONTENT}"))
    spy = QuerySpy(table.query)
    monkeypatch.setattr(table, "query", spy)

    events = asyncio.run(log.get_events(KEY))
    assert len(spy.calls) >= 2, "the log fit one page: the test no longer exercises paging"
    assert all(call["ConsistentRead"] is True for call in spy.calls)
    assert [e.seq for e in events] == list(range(LARGE_EVENTS))
    assert all(e.content == f"{e.seq}:{LARGE_CONTENT}" for e in events)

    later = asyncio.run(log.get_events(KEY, 7))
    assert [e.seq for e in later] == list(range(7, LARGE_EVENTS))


def test_last_event_reads_one_item_consistently(log, table, monkeypatch):
    for i in range(30):
        log.append_sync(KEY, event(i))
    spy = QuerySpy(table.query)
    monkeypatch.setattr(table, "query", spy)
    assert asyncio.run(log.last_event(KEY)).seq == 29
    assert len(spy.calls) == 1
    assert spy.calls[0]["Limit"] == 1
    assert spy.calls[0]["ScanIndexForward"] is False
    assert spy.calls[0]["ConsistentRead"] is True


def test_items_carry_a_ttl_in_the_future(aws, log, table):
    before = int(time.time())
    log.append_sync(KEY, event(0))
    after = int(time.time())
    item = table.get_item(Key={PARTITION: KEY, SORT: 0})["Item"]
    assert before + TTL_SECONDS <= int(item[TTL_ATTRIBUTE]) <= after + TTL_SECONDS
    # The attribute the adapter writes is the one the template's TTL deletes by.
    described = aws.client("dynamodb").describe_time_to_live(TableName=aws.tables["EventsTable"])
    assert described["TimeToLiveDescription"]["AttributeName"] == TTL_ATTRIBUTE
    assert described["TimeToLiveDescription"]["TimeToLiveStatus"] == "ENABLED"


# StageLog ----------------------------------------------------------------------------------------------------
def test_stage_log_writes_from_its_start_offset(log):
    log.append_sync(KEY, event(0, ResponseType.AGENT_QUERY, done=True))
    log.append_sync(KEY, event(1))
    stage = StageLog(log, start=2)

    async def scenario():
        written = [await stage.append_event(KEY, event(10 + i)) for i in range(3)]
        return written, await stage.get_events(KEY)

    written, events = asyncio.run(scenario())
    assert [e.seq for e in written] == [2, 3, 4]
    assert stage.skipped == 0
    assert [(e.seq, e.id) for e in events] == [(0, "e0"), (1, "e1"), (2, "e10"), (3, "e11"), (4, "e12")]


def test_a_retried_stage_rewrites_its_offsets_without_duplicates(log):
    log.append_sync(KEY, event(0, ResponseType.AGENT_QUERY, done=True))
    first = StageLog(log, start=1)
    retry = StageLog(log, start=1)  # the retry reads back the same claimed start

    async def scenario():
        for i in range(3):
            await first.append_event(KEY, event(10 + i))
        # The retry produces the same events again (timestamps and all may differ).
        return [await retry.append_event(KEY, event(20 + i)) for i in range(4)]

    rewritten = asyncio.run(scenario())
    assert [e.seq for e in rewritten] == [1, 2, 3, 4]
    assert first.skipped == 0
    assert retry.skipped == 3  # offsets 1..3 were taken; 4 is new
    events = log.events_sync(KEY)
    assert [(e.seq, e.id) for e in events] == [(0, "e0"), (1, "e10"), (2, "e11"), (3, "e12"), (4, "e23")]
    assert len({e.seq for e in events}) == len(events)


def test_a_step_writes_nothing_after_a_stop_took_its_offset(log):
    """A stop lands at the step's next offset: the step's later chunks must not follow it in the log."""
    log.append_sync(KEY, event(0, ResponseType.AGENT_QUERY, done=True))
    stage = StageLog(log, start=1)

    async def scenario():
        await stage.append_event(KEY, event(10))
        await log.append_if_open(KEY, event(99, ResponseType.STOP, done=True))  # takes offset 2
        for i in range(3):
            await stage.append_event(KEY, event(11 + i))
        return await stage.append_if_open(KEY, event(20, ResponseType.COMPLETE, done=True))

    assert asyncio.run(scenario()) is None
    events = log.events_sync(KEY)
    assert [(e.seq, e.type.value) for e in events] == [(0, "agent_query"), (1, "answer"), (2, "stop")]


def test_a_warm_writer_remembers_a_bounded_number_of_turns_and_continues_any_it_forgot(table, monkeypatch):
    # A warm Lambda container writes turn after turn: the next offsets it keeps must not grow with them.
    monkeypatch.setattr("ragline.stream.dynamodb.REMEMBERED_TURNS", 3)
    log = DynamoDBStreamManager(table, TTL_SECONDS)
    for turn in range(5):
        log.append_sync(f"s#{turn}", event(0))
    assert len(log._next_seq) == 3
    # The first turn's offset was forgotten: its next event still lands right after its last one.
    assert log.append_sync("s#0", event(1)).seq == 1
    # A turn that ended is forgotten at once.
    log.append_sync("s#4", event(1, ResponseType.COMPLETE, done=True))
    assert "s#4" not in log._next_seq
    assert [e.seq for e in log.events_sync("s#4")] == [0, 1]
