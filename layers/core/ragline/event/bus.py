"""A per-request event bus. Stages publish; the stream handler turns events into the turn's log.

Stages never write the HTTP response: they publish here, which is what lets generation continue while
no client is connected and lets any number of readers follow the log by offset.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class BusEventType(StrEnum):
    """What happened in a turn, as the stages emit it; the stream handler maps each to a ``ResponseType``."""

    AGENT_QUERY = "agent_query"
    THOUGHT = "thought"
    FINAL_ANSWER = "final_answer"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    REFERENCES = "references"
    REFLECTION = "reflection"
    SESSION_TITLE = "session_title"
    MEMORY_RECALLED = "memory_recalled"
    ERROR = "error"
    COMPLETE = "complete"
    STOP = "stop"


@dataclass
class BusEvent:
    """One event on the bus: ``id`` groups the chunks of one answer or thought, ``done`` ends that group."""

    type: BusEventType
    id: str
    content: str = ""
    done: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    references: list[dict[str, Any]] | None = None


Subscriber = Callable[[BusEvent], Awaitable[None]]


class EventBus:
    """Delivers each event to every subscriber, in order, before ``emit`` returns."""

    def __init__(self) -> None:
        """A bus with no subscribers yet."""
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> None:
        """Add ``subscriber``; it receives every later event, after those subscribed before it."""
        self._subscribers.append(subscriber)

    async def emit(self, event: BusEvent) -> None:
        """Deliver ``event`` to every subscriber in turn, awaiting each."""
        for subscriber in self._subscribers:
            await subscriber(event)
