import asyncio
import threading

from ragline.store.db import Database
from ragline.stream.sqlite import SqliteStreamManager
from ragline.types import ResponseType, StreamEvent

KEY = "sess#msg"


def event(i: int, type=ResponseType.ANSWER, done=False, **extra) -> StreamEvent:
    return StreamEvent(id=f"e{i}", type=type, content=f"c{i}", done=done, **extra)


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


def test_a_live_reader_is_served_while_the_logs_thread_is_busy(tmp_path):
    """What this process just appended reaches its followers from memory: a reader never queues behind the appends
    of every other turn on the log's one thread (50 answers streaming: a read and an append per frame each)."""
    from ragline.stream.replay import follow

    database = Database(tmp_path / "log.db")
    manager = SqliteStreamManager(database)
    gate = threading.Event()

    async def scenario() -> list[str]:
        for i in range(2):
            await manager.append_event(KEY, event(i))
        reader = follow(manager, KEY, 0, coalesce_replay=False)
        seen = [(await anext(reader)).id, (await anext(reader)).id]
        await manager.append_event(KEY, event(2))
        busy = asyncio.get_running_loop().run_in_executor(manager._io, gate.wait)  # the log's thread, held
        try:
            # A backstop, not a measure: read from the log, the event would wait for the thread until released.
            seen.append((await asyncio.wait_for(anext(reader), timeout=30)).id)
        finally:
            gate.set()
            await busy
        await reader.aclose()
        return seen

    try:
        assert asyncio.run(scenario()) == ["e0", "e1", "e2"]
    finally:
        gate.set()
        database.close()


def test_followers_get_every_event_whether_in_memory_or_not(tmp_path):
    """A reader far behind the memory's tail, and one following appends that another process made, read the log;
    every follower sees every event once, in order, whoever wrote it."""
    from ragline.stream.replay import follow

    path = tmp_path / "shared.db"
    db_a, db_b = Database(path), Database(path)
    a, b = SqliteStreamManager(db_a), SqliteStreamManager(db_b)
    writers = "a" * 150 + "bb" + "a" * 3 + "b"

    async def scenario() -> tuple[list[int], list[int], list[str]]:
        for i, who in enumerate(writers[:-1]):
            await (a if who == "a" else b).append_event(KEY, event(i))
        from_start = [e.seq async for e in _until(follow(a, KEY, 0, coalesce_replay=False), len(writers) - 1)]
        live = follow(a, KEY, 151, coalesce_replay=False)
        live_seen = [(await anext(live)).seq for _ in range(len(writers) - 1 - 151)]
        await b.append_event(KEY, event(len(writers) - 1, type=ResponseType.COMPLETE, done=True))
        live_seen.append((await anext(live)).seq)  # b's append: a does not hear of it, it polls the log
        ids = [e.id for e in await a.get_events(KEY)]
        return from_start, live_seen, ids

    try:
        from_start, live_seen, ids = asyncio.run(scenario())
    finally:
        db_a.close()
        db_b.close()
    assert from_start == list(range(len(writers) - 1))
    assert live_seen == list(range(151, len(writers)))
    assert ids == [f"e{i}" for i in range(len(writers))]


async def _until(events, count):
    taken = 0
    async for item in events:
        yield item
        taken += 1
        if taken == count:
            return


class CountingDatabase(Database):
    """Counts the reads of a log's events (``get_events``)."""

    event_reads = 0

    def query(self, sql, params=()):
        if "FROM stream_events WHERE stream_key = ? AND seq >=" in sql:
            self.event_reads += 1
        return super().query(sql, params)


def test_a_live_reader_reads_the_log_once_not_once_per_frame(tmp_path):
    """Woken by this process's appends, a reader at the head takes them from memory and waits again: the log is read
    at the start and after a wait that timed out (another process may have appended), not after every frame."""
    from ragline.stream.replay import follow

    database = CountingDatabase(tmp_path / "log.db")
    manager = SqliteStreamManager(database)
    frames = 50

    async def scenario() -> list[str]:
        await manager.append_event(KEY, event(0))
        seen: list[str] = []
        progress = asyncio.Event()

        async def read() -> None:
            async for item in follow(manager, KEY, 0, coalesce_replay=False, max_wait_s=30, min_wait_s=30):
                seen.append(item.id)
                progress.set()

        reader = asyncio.create_task(read())
        for i in range(1, frames):
            while len(seen) < i:  # each frame read before the next is appended: the reader is at the head
                await progress.wait()
                progress.clear()
            last = {"type": ResponseType.COMPLETE, "done": True} if i == frames - 1 else {}
            await manager.append_event(KEY, event(i, **last))
        await asyncio.wait_for(reader, timeout=30)
        return seen

    try:
        assert asyncio.run(scenario()) == [f"e{i}" for i in range(frames)]
    finally:
        database.close()
    assert database.event_reads <= 2
