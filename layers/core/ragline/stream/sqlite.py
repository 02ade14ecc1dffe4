"""The embedded runtime's event log: a SQLite table, with in-process wake-ups for live readers.

Every statement runs on the log's own thread, never on the event loop that serves the streams: a reader's loop
never waits for SQLite, and the log's database is its own (``events.db``), so an append never waits for a write
of the knowledge stores.
"""

from __future__ import annotations

import concurrent.futures
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ragline.reads import run_in
from ragline.store.db import Database
from ragline.stream.base import AppendNotifier, StreamManager
from ragline.types import StreamEvent
from ragline.types.stream import TERMINAL_TYPES

_T = TypeVar("_T")

# The last events this process appended to each of the logs it wrote last, kept for their live readers.
_TAIL_EVENTS = 32
_TAIL_KEYS = 256


class SqliteStreamManager(StreamManager):
    """``(stream_key, seq)`` is the primary key, so two writers can never take the same offset."""

    def __init__(self, db: Database) -> None:
        """Logs in the ``stream_events`` table of ``db``, with in-process wake-ups for live readers."""
        self._db = db
        self._notifier = AppendNotifier()
        self._next_seq: dict[str, int] = {}
        self._seq_lock = threading.Lock()
        # One thread: the log's statements keep their order, and none runs on an event loop.
        self._io = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragline-log")
        # key -> (seq of the first event, the last events appended here, contiguous). Written on the log's thread,
        # each entry replaced whole, so a reader on another thread sees either the old tail or the new one.
        self._tails: dict[str, tuple[int, tuple[StreamEvent, ...]]] = {}

    async def _off_loop(self, call: Callable[..., _T], *args: Any) -> _T:
        return await run_in(self._io, call, *args)

    async def append_event(self, key: str, event: StreamEvent) -> StreamEvent:
        """Insert at the next offset; when another process took it, continue after that process's last event."""
        stored = await self._off_loop(self._append, key, event)
        self._notifier.notify(key, stored.seq)
        return stored

    def _append(self, key: str, event: StreamEvent) -> StreamEvent:
        with self._seq_lock:
            seq = self._next_seq.get(key)
            if seq is None:
                seq = self._max_seq(key) + 1
            while True:
                stored = event.model_copy(update={"seq": seq})
                try:
                    self._db.execute(
                        "INSERT INTO stream_events (stream_key, seq, event) VALUES (?, ?, ?)",
                        (key, seq, stored.model_dump_json(exclude={"seq"})),
                    )
                    break
                except sqlite3.IntegrityError:
                    # Another process appended to this log: continue after its last event.
                    seq = self._max_seq(key) + 1
            self._next_seq[key] = seq + 1
            if len(self._next_seq) > 10_000:
                self._next_seq.clear()
            self._keep(key, stored)
        return stored

    def _keep(self, key: str, stored: StreamEvent) -> None:
        """Remember ``stored`` in its log's tail (on the log's thread, after its insert committed)."""
        tail = self._tails.get(key)
        if tail is not None and tail[0] + len(tail[1]) == stored.seq:
            first, events = tail
            if len(events) >= _TAIL_EVENTS:
                first, events = first + 1, events[1:]
            self._tails[key] = (first, (*events, stored))
            return
        # A first event here, or one after another process's appends: the tail starts again at it.
        self._tails.pop(key, None)
        if len(self._tails) >= _TAIL_KEYS:
            self._tails.pop(next(iter(self._tails)))
        self._tails[key] = (stored.seq, (stored,))

    def recent_events(self, key: str, from_offset: int) -> list[StreamEvent] | None:
        """The events from ``from_offset`` in the log's tail kept here (``[]`` just past its end); None elsewhere."""
        tail = self._tails.get(key)
        if tail is None:
            return None
        first, events = tail
        if not first <= from_offset <= first + len(events):
            return None
        return list(events[from_offset - first :])

    async def append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        """Check for a terminal event and insert in one write transaction; None when the log has ended."""
        stored = await self._off_loop(self._append_if_open, key, event)
        if stored is not None:
            self._notifier.notify(key, stored.seq)
        return stored

    def _append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        # One write transaction (BEGIN IMMEDIATE) for the check and the insert: no writer of this process
        # or another can append between them.
        with self._seq_lock, self._db.transaction() as conn:
            row = conn.execute(
                "SELECT seq, event FROM stream_events WHERE stream_key = ? ORDER BY seq DESC LIMIT 1", (key,)
            ).fetchone()
            if row is not None and StreamEvent.model_validate_json(row["event"]).is_terminal:
                return None
            seq = 0 if row is None else int(row["seq"]) + 1
            stored = event.model_copy(update={"seq": seq})
            conn.execute(
                "INSERT INTO stream_events (stream_key, seq, event) VALUES (?, ?, ?)",
                (key, seq, stored.model_dump_json(exclude={"seq"})),
            )
            self._next_seq[key] = seq + 1
        self._keep(key, stored)
        return stored

    async def get_events(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        """Events with ``seq >= from_offset`` in order."""
        return await self._off_loop(self._get_events, key, from_offset)

    def _get_events(self, key: str, from_offset: int) -> list[StreamEvent]:
        rows = self._db.query(
            "SELECT seq, event FROM stream_events WHERE stream_key = ? AND seq >= ? ORDER BY seq",
            (key, max(0, from_offset)),
        )
        return [StreamEvent.model_validate_json(row["event"]).model_copy(update={"seq": row["seq"]}) for row in rows]

    async def last_event(self, key: str) -> StreamEvent | None:
        """The log's last event, or None for an empty log."""
        return await self._off_loop(self._last_event, key)

    def _last_event(self, key: str) -> StreamEvent | None:
        row = self._db.query_one(
            "SELECT seq, event FROM stream_events WHERE stream_key = ? ORDER BY seq DESC LIMIT 1", (key,)
        )
        if row is None:
            return None
        return StreamEvent.model_validate_json(row["event"]).model_copy(update={"seq": row["seq"]})

    async def has_events(self, key: str) -> bool:
        """Whether the log holds any event (one row read)."""
        row = await self._off_loop(
            self._db.query_one, "SELECT 1 FROM stream_events WHERE stream_key = ? LIMIT 1", (key,)
        )
        return row is not None

    async def unended_keys(self, limit: int = 1000) -> list[str] | None:
        """Keys of logs whose last event is not terminal, at most ``limit``: the turns recovery looks at."""
        return await self._off_loop(self._unended_keys, limit)

    def _unended_keys(self, limit: int) -> list[str]:
        terminal = ", ".join(f"'{t.value}'" for t in sorted(TERMINAL_TYPES))
        rows = self._db.query(
            "SELECT e.stream_key FROM stream_events AS e JOIN"
            " (SELECT stream_key, MAX(seq) AS seq FROM stream_events GROUP BY stream_key) AS last"
            " ON e.stream_key = last.stream_key AND e.seq = last.seq"
            f" WHERE json_extract(e.event, '$.type') NOT IN ({terminal}) LIMIT ?",
            (limit,),
        )
        return [str(row["stream_key"]) for row in rows]

    async def wait_for_append(self, key: str, after_seq: int, timeout: float) -> bool:
        """Wait for an append to ``key`` after ``after_seq``; appends by other processes are not seen (readers poll too)."""
        return await self._notifier.wait(key, after_seq, timeout)

    def _max_seq(self, key: str) -> int:
        row = self._db.query_one("SELECT MAX(seq) AS seq FROM stream_events WHERE stream_key = ?", (key,))
        return -1 if row is None or row["seq"] is None else int(row["seq"])
