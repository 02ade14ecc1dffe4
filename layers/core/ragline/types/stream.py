"""What the log stores (StreamEvent) and what a client receives (StreamResponse)."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class ResponseType(StrEnum):
    """The SSE ``response_type``; shared by the writer, the replay and every client."""

    AGENT_QUERY = "agent_query"
    THINKING = "thinking"
    ANSWER = "answer"
    REFERENCES = "references"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    REFLECTION = "reflection"
    SESSION_TITLE = "session_title"
    ERROR = "error"
    COMPLETE = "complete"
    MEMORY_RECALLED = "memory_recalled"
    STOP = "stop"


# A stream ends after one of these; nothing is appended to a turn's log after it.
TERMINAL_TYPES = frozenset({ResponseType.COMPLETE, ResponseType.ERROR, ResponseType.STOP})

# Incremental text whose consecutive chunks a replay may join into one frame.
COALESCABLE_TYPES = frozenset({ResponseType.ANSWER, ResponseType.THINKING, ResponseType.REFLECTION})


def now_ms() -> int:
    """The current time in milliseconds since the epoch (the unit of stream events' timestamps)."""
    return int(time.time() * 1000)


class StreamEvent(BaseModel):
    """One entry of a turn's append-only log. ``seq`` is its offset, assigned by the log on append."""

    id: str
    type: ResponseType
    content: str = ""
    done: bool = False
    timestamp: int = Field(default_factory=now_ms)
    data: dict[str, Any] = Field(default_factory=dict)
    knowledge_references: list[dict[str, Any]] | None = None
    seq: int = -1

    @property
    def is_terminal(self) -> bool:
        """True for an event that ends the log (``complete``, ``error``, ``stop``)."""
        return self.type in TERMINAL_TYPES


class StreamResponse(BaseModel):
    """The JSON a client receives in each SSE frame."""

    id: str
    response_type: ResponseType
    content: str = ""
    done: bool = False
    knowledge_references: list[dict[str, Any]] | None = None
    session_id: str | None = None
    assistant_message_id: str | None = None
    data: dict[str, Any] | None = None

    @classmethod
    def from_event(
        cls, event: StreamEvent, *, request_id: str, session_id: str, assistant_message_id: str
    ) -> StreamResponse:
        """The SSE frame for a stored log event, with the ids the client correlates it by."""
        return cls(
            id=request_id,
            response_type=event.type,
            content=event.content,
            done=event.done,
            knowledge_references=event.knowledge_references,
            session_id=session_id,
            assistant_message_id=assistant_message_id,
            data=event.data or None,
        )

    def to_json(self) -> str:
        """The frame as JSON, unset fields left out."""
        return self.model_dump_json(exclude_none=True)
