"""The stream handler: turns a turn's bus events into log entries.

Incremental answer and thinking chunks are written at most once per ``batch_max_delay_ms`` (or when a batch
reaches ``batch_max_chars``), so a turn costs tens of writes, not one per token. The window is a throttle with a
leading edge: a chunk that comes a window or more after the last chunk write is written at once, and only the chunks
that come sooner wait, joined, until the window since that write ends. So the first words of an answer are not held
back, and pieces that come a window apart reach the reader a window apart, not alternately one and two windows apart
as a batch that always waited its window made them. Anything else flushes the batch first, so the log keeps the
bus's order. Nothing is appended once the turn is stopped or after a
terminal event, and the answer's ``done`` is written once.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ragline.event.bus import BusEvent, BusEventType
from ragline.event.cancel import CancelToken
from ragline.stream.base import StreamManager
from ragline.stream.config import DEFAULTS
from ragline.types import ResponseType, StreamEvent
from ragline.types.stream import COALESCABLE_TYPES, now_ms

RESPONSE_TYPES: dict[BusEventType, ResponseType] = {
    BusEventType.AGENT_QUERY: ResponseType.AGENT_QUERY,
    BusEventType.THOUGHT: ResponseType.THINKING,
    BusEventType.FINAL_ANSWER: ResponseType.ANSWER,
    BusEventType.TOOL_CALL: ResponseType.TOOL_CALL,
    BusEventType.TOOL_RESULT: ResponseType.TOOL_RESULT,
    BusEventType.REFERENCES: ResponseType.REFERENCES,
    BusEventType.REFLECTION: ResponseType.REFLECTION,
    BusEventType.SESSION_TITLE: ResponseType.SESSION_TITLE,
    BusEventType.MEMORY_RECALLED: ResponseType.MEMORY_RECALLED,
    BusEventType.ERROR: ResponseType.ERROR,
    BusEventType.COMPLETE: ResponseType.COMPLETE,
    BusEventType.STOP: ResponseType.STOP,
}


def to_stream_event(event: BusEvent) -> StreamEvent:
    """The log entry for a bus event: its type mapped to the client's ``ResponseType``."""
    return StreamEvent(
        id=event.id,
        type=RESPONSE_TYPES[event.type],
        content=event.content,
        done=event.done,
        data=dict(event.data),
        knowledge_references=event.references,
    )


class StreamHandler:
    """Writes one turn's bus events to its log, coalescing answer and thinking chunks."""

    def __init__(
        self,
        manager: StreamManager,
        key: str,
        *,
        cancel: CancelToken | None = None,
        batch_max_delay_ms: int = DEFAULTS.batch_max_delay_ms,
        batch_max_chars: int = DEFAULTS.batch_max_chars,
    ) -> None:
        """A handler of the log ``key`` in ``manager``; chunks are batched per ``batch_max_delay_ms`` or ``batch_max_chars``."""
        self._manager = manager
        self._key = key
        self._cancel = cancel
        self._delay = batch_max_delay_ms / 1000
        self._max_chars = batch_max_chars
        self._lock = asyncio.Lock()
        self._pending: StreamEvent | None = None
        self._pending_parts: list[str] = []
        self._pending_chars = 0
        self._timer: asyncio.TimerHandle | None = None
        self._last_batch_at = -math.inf  # the loop's time of the last chunk write
        self._finished = False
        self._done_answers: set[str] = set()
        self.appended = 0

    @property
    def finished(self) -> bool:
        """True once a terminal event was appended: nothing more is written."""
        return self._finished

    async def handle(self, bus_event: BusEvent) -> None:
        """Subscriber of the bus: append ``bus_event`` to the log, or buffer it when it is a chunk to coalesce."""
        if self._joins_pending(bus_event):
            # Most chunks of an answer: joined to the batch under way, with no log entry made for them and no wait.
            self._join(bus_event.content, bus_event.data, now_ms())
            return
        event = to_stream_event(bus_event)
        async with self._lock:
            # Once stopped, nothing more is written, terminal events included: ``stop`` (appended by whoever
            # stopped the turn) must be the last event, never followed by ``complete`` or ``error``.
            if self._stopped:
                return
            if event.type == ResponseType.ANSWER and event.done:
                if event.id in self._done_answers:
                    return  # a duplicate terminal answer would end a client's answer twice
                self._done_answers.add(event.id)
            if event.type in COALESCABLE_TYPES and not event.done and self._delay > 0:
                await self._buffer(event)
                return
            await self._flush()
            await self._append(event)

    def _joins_pending(self, bus_event: BusEvent) -> bool:
        """Whether ``bus_event`` is the next chunk of the batch under way, which it leaves under its size limit.

        Decided and done without yielding to the loop, so no flush can run in between; anything else takes the lock.
        """
        pending = self._pending
        return (
            pending is not None
            and not bus_event.done
            and bus_event.id == pending.id
            and RESPONSE_TYPES[bus_event.type] == pending.type
            and self._pending_chars + len(bus_event.content) < self._max_chars
            and not self._lock.locked()
            and not self._stopped
        )

    @property
    def _stopped(self) -> bool:
        """A terminal event was appended or the turn was stopped: nothing more is written."""
        return self._finished or (self._cancel is not None and self._cancel.cancelled)

    def _join(self, content: str, data: dict[str, Any], timestamp: int) -> None:
        """Add a chunk to the pending batch (same type and id)."""
        assert self._pending is not None
        self._pending_parts.append(content)
        self._pending_chars += len(content)
        self._pending.data.update(data)
        self._pending.timestamp = timestamp

    async def flush(self) -> None:
        """Append the buffered chunks now (before a terminal event, or when the turn ends)."""
        async with self._lock:
            await self._flush()

    async def _buffer(self, event: StreamEvent) -> None:
        pending = self._pending
        if pending is not None and (pending.type != event.type or pending.id != event.id):
            await self._flush()
            pending = None
        if pending is None:
            loop = asyncio.get_running_loop()
            now = loop.time()
            wait = self._last_batch_at + self._delay - now
            if wait <= 0:
                self._last_batch_at = now
                await self._append(event)
                return
            self._pending = event
            self._pending_parts = [event.content]
            self._pending_chars = len(event.content)
            self._timer = loop.call_later(wait, self._on_timer)
        else:
            self._join(event.content, event.data, event.timestamp)
        if self._pending_chars >= self._max_chars:
            await self._flush()

    def _on_timer(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self.flush())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, None
        if pending is None:
            return
        pending.content = "".join(self._pending_parts)
        self._pending_parts = []
        self._pending_chars = 0
        if self._cancel is not None and self._cancel.cancelled:
            return
        self._last_batch_at = asyncio.get_running_loop().time()
        await self._append(pending)

    async def _append(self, event: StreamEvent) -> None:
        if event.is_terminal:
            # Through the log's check-and-append: a stop or a recovery sweep may have ended the turn already.
            self._finished = True
            if await self._manager.append_if_open(self._key, event) is not None:
                self.appended += 1
            return
        await self._manager.append_event(self._key, event)
        self.appended += 1
