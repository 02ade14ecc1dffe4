"""An in-process log: tests, and single-process use without persistence."""

from __future__ import annotations

import threading

from ragline.stream.base import AppendNotifier, StreamManager
from ragline.types import StreamEvent


class InMemoryStreamManager(StreamManager):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[str, list[StreamEvent]] = {}
        self._notifier = AppendNotifier()

    async def append_event(self, key: str, event: StreamEvent) -> StreamEvent:
        with self._lock:
            log = self._logs.setdefault(key, [])
            stored = event.model_copy(update={"seq": len(log)})
            log.append(stored)
        self._notifier.notify(key, stored.seq)
        return stored.model_copy()

    async def append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        with self._lock:
            log = self._logs.setdefault(key, [])
            if log and log[-1].is_terminal:
                return None
            stored = event.model_copy(update={"seq": len(log)})
            log.append(stored)
        self._notifier.notify(key, stored.seq)
        return stored.model_copy()

    async def last_event(self, key: str) -> StreamEvent | None:
        with self._lock:
            log = self._logs.get(key)
            return log[-1].model_copy() if log else None

    async def get_events(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        with self._lock:
            # Copies: a reader must never see a later mutation of what it was handed.
            return [event.model_copy() for event in self._logs.get(key, [])[max(0, from_offset) :]]

    async def wait_for_append(self, key: str, after_seq: int, timeout: float) -> bool:
        return await self._notifier.wait(key, after_seq, timeout)
