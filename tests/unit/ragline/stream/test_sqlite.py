import asyncio
import time

from ragline.store.db import Database
from ragline.stream.sqlite import SqliteStreamManager
from ragline.types import ResponseType, StreamEvent

KEY = "sess#msg"


def event(i: int, type=ResponseType.ANSWER, done=False, **extra) -> StreamEvent:
    return StreamEvent(id=f"e{i}", type=type, content=f"c{i}", done=done, **extra)


def test_seq_is_gap_free_from_zero(db):
    async def scenario():
        manager = SqliteStreamManager(db)
        stored = [await manager.append_event(KEY, event(i)) for i in range(6)]
        return stored, await manager.get_events(KEY)

    stored, events = asyncio.run(scenario())
    assert [e.seq for e in stored] == list(range(6))
    assert [e.seq for e in events] == list(range(6))
    assert [e.content for e in events] == [f"c{i}" for i in range(6)]


def test_events_round_trip_all_fields(db):
    original = StreamEvent(
        id="refs",
        type=ResponseType.REFERENCES,
        content="ü ünïcode 中文",
        done=True,
        timestamp=123456,
        data={"count": 2, "nested": {"a": [1, 2]}},
        knowledge_references=[{"id": "c1", "score": 0.5}],
    )

    async def scenario():
        manager = SqliteStreamManager(db)
        await manager.append_event(KEY, original)
        return (await manager.get_events(KEY))[0]

    read = asyncio.run(scenario())
    assert read == original.model_copy(update={"seq": 0})


def test_get_events_from_offset(db):
    async def scenario():
        manager = SqliteStreamManager(db)
        for i in range(5):
            await manager.append_event(KEY, event(i))
        return (
            await manager.get_events(KEY, 3),
            await manager.get_events(KEY, 5),
            await manager.get_events(KEY, -1),
            await manager.get_events("other#key"),
        )

    from_three, at_end, negative, other = asyncio.run(scenario())
    assert [e.seq for e in from_three] == [3, 4]
    assert at_end == []
    assert [e.seq for e in negative] == [0, 1, 2, 3, 4]
    assert other == []


def test_keys_are_independent(db):
    async def scenario():
        manager = SqliteStreamManager(db)
        await manager.append_event("a#1", event(0))
        await manager.append_event("a#1", event(1))
        return await manager.append_event("b#1", event(2))

    assert asyncio.run(scenario()).seq == 0


def test_last_event_and_has_events(db):
    async def scenario():
        manager = SqliteStreamManager(db)
        before = (await manager.last_event(KEY), await manager.has_events(KEY))
        for i in range(3):
            await manager.append_event(KEY, event(i))
        await manager.append_event(KEY, event(3, ResponseType.COMPLETE, done=True))
        return before, await manager.last_event(KEY), await manager.has_events(KEY), await manager.has_events("x#y")

    (last_before, has_before), last, has, has_other = asyncio.run(scenario())
    assert last_before is None
    assert has_before is False
    assert last is not None
    assert last.seq == 3
    assert last.type == ResponseType.COMPLETE
    assert last.id == "e3"
    assert has is True
    assert has_other is False


def test_log_survives_a_new_manager_and_connection(tmp_path):
    path = tmp_path / "log.db"

    async def write():
        database = Database(path)
        manager = SqliteStreamManager(database)
        for i in range(3):
            await manager.append_event(KEY, event(i))
        database.close()

    async def resume():
        database = Database(path)
        manager = SqliteStreamManager(database)
        stored = await manager.append_event(KEY, event(3))
        events = await manager.get_events(KEY)
        database.close()
        return stored, events

    asyncio.run(write())
    stored, events = asyncio.run(resume())
    assert stored.seq == 3
    assert [e.seq for e in events] == [0, 1, 2, 3]


def test_two_managers_on_one_file_never_share_a_seq(tmp_path):
    """Two processes: separate connections and separate seq caches on one database file."""
    path = tmp_path / "shared.db"
    db_a, db_b = Database(path), Database(path)
    a, b = SqliteStreamManager(db_a), SqliteStreamManager(db_b)

    async def scenario():
        assigned = []
        # Interleave so that each manager's cached next seq is stale most of the time.
        pattern = "aabababbbaab"
        for i, who in enumerate(pattern):
            manager = a if who == "a" else b
            stored = await manager.append_event(KEY, event(i, data={"writer": who}))
            assigned.append(stored.seq)
        return assigned, await a.get_events(KEY), await b.get_events(KEY)

    try:
        assigned, seen_by_a, seen_by_b = asyncio.run(scenario())
    finally:
        db_a.close()
        db_b.close()
    assert sorted(assigned) == list(range(len(assigned)))
    assert len(set(assigned)) == len(assigned)
    assert [e.seq for e in seen_by_a] == list(range(12))
    assert seen_by_a == seen_by_b
    # every appended event is stored under the seq its append returned
    assert [e.id for e in seen_by_a] == [f"e{i}" for i in sorted(range(12), key=lambda i: assigned[i])]


def test_two_managers_concurrently_from_threads(tmp_path):
    import threading

    path = tmp_path / "threads.db"
    dbs = [Database(path), Database(path)]
    managers = [SqliteStreamManager(d) for d in dbs]
    results: list[list[int]] = [[], []]

    def writer(index: int) -> None:
        async def run():
            for i in range(25):
                stored = await managers[index].append_event(KEY, event(index * 100 + i))
                results[index].append(stored.seq)

        asyncio.run(run())

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    try:
        events = asyncio.run(managers[0].get_events(KEY))
    finally:
        for d in dbs:
            d.close()
    all_seqs = results[0] + results[1]
    assert sorted(all_seqs) == list(range(50))
    assert [e.seq for e in events] == list(range(50))
    # each writer's own events keep their order
    assert results[0] == sorted(results[0])
    assert results[1] == sorted(results[1])


def test_wait_for_append_wakes_waiter(db):
    async def scenario():
        manager = SqliteStreamManager(db)
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


def test_wait_for_append_times_out(db):
    async def scenario():
        manager = SqliteStreamManager(db)
        await manager.append_event("other#key", event(0))
        started = time.monotonic()
        return await manager.wait_for_append(KEY, -1, timeout=0.05), time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is False
    assert elapsed >= 0.04


def test_wait_for_append_is_not_woken_by_an_older_seq(db):
    async def scenario():
        manager = SqliteStreamManager(db)
        await manager.append_event(KEY, event(0))
        return await manager.wait_for_append(KEY, 0, timeout=0.05)

    assert asyncio.run(scenario()) is False
