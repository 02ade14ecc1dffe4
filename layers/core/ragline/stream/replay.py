"""Reading a turn's log for a client: offsets, live following, and what the answer was."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ragline.stream.base import StreamManager
from ragline.stream.coalesce import coalesce
from ragline.types import ResponseType, StreamEvent


def start_offset(last_event_id: str | None, offset: int | None) -> int:
    """``Last-Event-ID: N`` resumes after N; ``?offset=N`` starts at N; neither starts at 0."""
    if last_event_id is not None and last_event_id.strip():
        try:
            return int(last_event_id.strip()) + 1
        except ValueError:
            raise ValueError("Last-Event-ID must be an event sequence number") from None
    if offset is not None:
        if offset < 0:
            raise ValueError("offset must be >= 0")
        return offset
    return 0


async def follow(
    manager: StreamManager,
    key: str,
    start: int,
    *,
    min_wait_s: float = 0.05,
    max_wait_s: float = 1.0,
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
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            return
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
        if not woken:
            wait = min(max_wait_s, wait * 2)


@dataclass
class AnswerSummary:
    """What a turn's log says the answer was: the text the client received, its references, the end."""

    content: str = ""
    references: list[dict[str, Any]] = field(default_factory=list)
    terminal: ResponseType | None = None
    is_fallback: bool = False


def summarize_answer(events: list[StreamEvent]) -> AnswerSummary:
    """Answer text up to (not after) the first terminal event; a reader never sees past it either."""
    summary = AnswerSummary()
    parts: list[str] = []
    for event in events:
        if event.is_terminal:
            summary.terminal = event.type
            break
        if event.type == ResponseType.ANSWER:
            parts.append(event.content)
            summary.is_fallback = summary.is_fallback or bool(event.data.get("is_fallback"))
        elif event.type == ResponseType.REFERENCES and event.knowledge_references:
            summary.references = event.knowledge_references
    summary.content = "".join(parts)
    return summary
