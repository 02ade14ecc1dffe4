"""Reading a turn's log for a client: offsets, live following, and what the answer was."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ragline.stream.base import StreamManager
from ragline.stream.coalesce import coalesce
from ragline.stream.config import DEFAULTS
from ragline.types import ResponseType, StreamEvent

# The largest offset any log can hold: SQLite's INTEGER (DynamoDB numbers go further). An offset or an id
# beyond it names no event of any log; it is refused rather than passed to a store that would overflow.
MAX_SEQ = 2**63 - 1
_SEQUENCE_NUMBER = re.compile(r"-?[0-9]+")


def start_offset(last_event_id: str | None, offset: int | None) -> int:
    """``Last-Event-ID: N`` resumes after N; ``?offset=N`` starts at N; neither starts at 0.

    ``ValueError`` (naming the input) for anything that is no sequence number: not an integer, negative,
    or beyond :data:`MAX_SEQ`.
    """
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        if len(text) > 21 or not _SEQUENCE_NUMBER.fullmatch(text):
            raise ValueError("Last-Event-ID must be an event sequence number")
        value = int(text)
        if not -1 <= value < MAX_SEQ:
            raise ValueError(f"Last-Event-ID must be between -1 and {MAX_SEQ - 1}")
        return value + 1
    if offset is not None:
        if not 0 <= offset <= MAX_SEQ:
            raise ValueError(f"offset must be between 0 and {MAX_SEQ}")
        return offset
    return 0


class StreamPosition(StrEnum):
    """Where a reader's start offset falls in a log, decided before any frame is sent."""

    # Events at or after the start exist, or may still be appended: replay and follow.
    READABLE = "readable"
    # The log ended (terminal event) before the start: nothing will ever follow; close at once.
    ENDED = "ended"
    # The start is past the log's end (beyond the next offset to be written): no such position.
    BEYOND = "beyond"


async def stream_position(manager: StreamManager, key: str, start: int) -> StreamPosition:
    """Where a reader's offset stands: ended, beyond the log, or readable.

    ``ENDED`` for a reader already past the terminal event (``Last-Event-ID`` = its seq); ``BEYOND`` for an offset no
    event has reached and, the stream being finished, none ever will, or which skips events not yet written; else
    ``READABLE``.
    """
    last = await manager.last_event(key)
    end = 0 if last is None else last.seq + 1  # the offset of the next event
    if start < end:
        return StreamPosition.READABLE
    if last is not None and last.is_terminal:
        return StreamPosition.ENDED if start == end else StreamPosition.BEYOND
    return StreamPosition.READABLE if start == end else StreamPosition.BEYOND


async def follow(
    manager: StreamManager,
    key: str,
    start: int,
    *,
    min_wait_s: float = DEFAULTS.poll_min_wait_s,
    max_wait_s: float = DEFAULTS.poll_max_wait_s,
    coalesce_replay: bool = True,
    max_duration_s: float | None = None,
) -> AsyncIterator[StreamEvent]:
    """Events from ``start`` on, live, until a terminal event (``complete``, ``error``, ``stop``).

    Waits are woken by appends where the log supports it; otherwise (and across processes) the reader
    polls, quickly while events flow and backing off to ``max_wait_s`` while idle. ``max_duration_s``
    ends the response early (a Lambda must return before its timeout); the client resumes from the last
    ``id`` it received and loses nothing.
    """
    next_seq = start
    wait = min_wait_s
    deadline = None if max_duration_s is None else time.monotonic() + max_duration_s
    # A reader already past the end of a finished log would wait forever: nothing more is ever appended.
    if await stream_position(manager, key, start) != StreamPosition.READABLE:
        return
    polled = True  # the log must be read: no wake-up vouches that nothing was appended since the last read
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            return
        events = manager.recent_events(key, next_seq)
        if events is None or (not events and polled):
            events = await manager.get_events(key, next_seq)
        if events:
            wait = min_wait_s
            for event in coalesce(events) if coalesce_replay else events:
                yield event
                if event.is_terminal:
                    return
            next_seq = events[-1].seq + 1
            continue
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - time.monotonic()))
        woken = await manager.wait_for_append(key, next_seq - 1, wait)
        # Woken, the append is this process's and in memory; after a timeout, another process may have appended.
        polled = not woken
        if not woken:
            wait = min(max_wait_s, wait * 2)


@dataclass
class AnswerSummary:
    """What a turn's log says the answer was: the text the client received, its references, the end."""

    content: str = ""
    references: list[dict[str, Any]] = field(default_factory=list)
    terminal: ResponseType | None = None
    is_fallback: bool = False
    # The terminal event's ``data.reason`` (``interrupted`` for a turn whose runner was gone).
    terminal_reason: str = ""

    @property
    def stop_reason(self) -> str:
        """What the message records about how the turn ended.

        "" (complete or still running), ``stopped``, ``error`` or ``interrupted``.
        """
        if self.terminal == ResponseType.STOP:
            return "stopped"
        if self.terminal == ResponseType.ERROR:
            return "interrupted" if self.terminal_reason == "interrupted" else "error"
        return ""


def summarize_answer(events: list[StreamEvent]) -> AnswerSummary:
    """Answer text up to (not after) the first terminal event; a reader never sees past it either."""
    summary = AnswerSummary()
    parts: list[str] = []
    for event in events:
        if event.is_terminal:
            summary.terminal = event.type
            summary.terminal_reason = str(event.data.get("reason") or "")
            break
        if event.type == ResponseType.ANSWER:
            parts.append(event.content)
            summary.is_fallback = summary.is_fallback or bool(event.data.get("is_fallback"))
        elif event.type == ResponseType.REFERENCES and event.knowledge_references:
            summary.references = event.knowledge_references
    summary.content = "".join(parts)
    return summary
