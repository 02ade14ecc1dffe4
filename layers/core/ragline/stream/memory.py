"""An in-process log: tests, and single-process use without persistence."""

from __future__ import annotations

import threading

from ragline.stream.base import AppendNotifier, StreamManager
from ragline.types import StreamEvent


class InMemoryStreamManager(StreamManager):
    """A log per key in this process's memory, with wake-ups for live readers; nothing survives the process."""

    def __init__(self) -> None:
        """An empty set of logs."""
        self._lock = threading.Lock()
        self._logs: dict[str, list[StreamEvent]] = {}
        self._notifier = AppendNotifier()

    async def append_event(self, key: str, event: StreamEvent) -> StreamEvent:
        """Append at the end of the log and wake its readers; a copy of the stored event."""
        with self._lock:
            log = self._logs.setdefault(key, [])
            stored = event.model_copy(update={"seq": len(log)})
            log.append(stored)
        self._notifier.notify(key, stored.seq)
        return stored.model_copy()

    async def append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        """Append unless the log ends with a terminal event, under the same lock as the check."""
        with self._lock:
            log = self._logs.setdefault(key, [])
            if log and log[-1].is_terminal:
                return None
            stored = event.model_copy(update={"seq": len(log)})
            log.append(stored)
        self._notifier.notify(key, stored.seq)
        return stored.model_copy()

    async def last_event(self, key: str) -> StreamEvent | None:
        """A copy of the log's last event, or None for an empty log."""
        with self._lock:
            log = self._logs.get(key)
            return log[-1].model_copy() if log else None

    async def get_events(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        """Copies of the events with ``seq >= from_offset``."""
        with self._lock:
            # Copies: a reader must never see a later mutation of what it was handed.
            return [event.model_copy() for event in self._logs.get(key, [])[max(0, from_offset) :]]

    async def wait_for_append(self, key: str, after_seq: int, timeout: float) -> bool:
        """Wait for an append to ``key`` after ``after_seq``, woken by the append itself."""
        return await self._notifier.wait(key, after_seq, timeout)
