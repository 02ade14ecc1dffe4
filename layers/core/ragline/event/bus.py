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
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    async def emit(self, event: BusEvent) -> None:
        for subscriber in self._subscribers:
            await subscriber(event)
