"""The StreamManager port: producers append, consumers read by offset, anyone can replay from 0."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict

from ragline.types import StreamEvent


def stream_key(session_id: str, message_id: str) -> str:
    """The log of one assistant message; also the DynamoDB partition key."""
    return f"{session_id}#{message_id}"


class StreamManager(ABC):
    """Append-only, gap-free log per turn. ``seq`` is the offset, starting at 0."""

    @abstractmethod
    async def append_event(self, key: str, event: StreamEvent) -> StreamEvent:
        """Append and return the event with its ``seq``."""

    @abstractmethod
    async def get_events(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        """Events with ``seq >= from_offset`` in order."""

    def recent_events(self, key: str, from_offset: int) -> list[StreamEvent] | None:
        """Events from ``from_offset`` that this process appended and still holds in memory, or None: read the log.

        For live readers, which ask for what was just appended: an answer is the start of what ``get_events``
        returns (another process may have appended after it), never a different event; ``[]`` when ``from_offset``
        is just past the last event this process appended (nothing more was appended here since).
        """
        return None

    async def wait_for_append(self, key: str, after_seq: int, timeout: float) -> bool:
        """Wait until an event with ``seq > after_seq`` may exist, at most ``timeout`` seconds.

        The default cannot be woken and simply sleeps (a poll); logs that know of their own appends
        override it so live readers wake the moment an event lands.
        """
        await asyncio.sleep(timeout)
        return False

    async def append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        """Append ``event`` unless the log already ends with a terminal event; None when it does.

        How every terminal event (``complete``, ``error``, ``stop``) is written, by the turn's writer, a
        stop, recovery or shutdown alike, so a log never holds two and none is followed by another. Every
        log overrides this default (which checks, then appends) with a check and an append that no other
        writer can come between.
        """
        last = await self.last_event(key)
        if last is not None and last.is_terminal:
            return None
        return await self.append_event(key, event)

    async def has_events(self, key: str) -> bool:
        """Whether the log holds any event (a turn that was started writes ``agent_query`` first)."""
        return bool(await self.get_events(key, 0))

    async def unended_keys(self, limit: int = 1000) -> list[str] | None:
        """Keys of logs whose last event is not terminal, where the log can list them cheaply.

        None where it cannot (recovery then relies on the messages not yet completed).
        """
        return None

    async def last_event(self, key: str) -> StreamEvent | None:
        """The log's last event, or None for an empty log; logs override this with a read of one item."""
        events = await self.get_events(key, 0)
        return events[-1] if events else None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; most logs hold none."""


class AppendNotifier:
    """Wakes readers waiting on a key when an event is appended, across threads and event loops."""

    _MAX_TRACKED_KEYS = 10_000

    def __init__(self) -> None:
        """A notifier with no waiters; it remembers the latest offset of the last 10,000 keys."""
        self._lock = threading.Lock()
        self._latest: OrderedDict[str, int] = OrderedDict()
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    def notify(self, key: str, seq: int) -> None:
        """Record that ``seq`` was appended to ``key`` and wake every reader waiting on it, in its own loop."""
        with self._lock:
            self._latest[key] = max(seq, self._latest.get(key, -1))
            self._latest.move_to_end(key)
            while len(self._latest) > self._MAX_TRACKED_KEYS:
                self._latest.popitem(last=False)
            waiters = self._waiters.pop(key, [])
        for loop, future in waiters:
            # A reader whose loop was torn down without cancelling its task must not make the append fail
            # (the event is already stored) nor keep the other readers from being woken.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, future)

    async def wait(self, key: str, after_seq: int, timeout: float) -> bool:
        """Wait until ``key`` has an event after ``after_seq``; False after ``timeout`` seconds without one."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._latest.get(key, -1) > after_seq:
                return True
            self._waiters.setdefault(key, []).append((loop, future))
        try:
            await asyncio.wait_for(future, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self._lock:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting[:] = [(lp, fut) for lp, fut in waiting if fut is not future]
                    if not waiting:
                        del self._waiters[key]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
