"""SSE framing: ``id: <seq>``, ``event:message``, one JSON ``data`` line; a ``: ping`` comment when idle.

``event:message`` has no space after the colon: WeKnora's Go client compares the raw text after ``event:``
with ``message``, and the SSE standard strips one optional space, so every other client reads it the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from ragline.config import StreamConfig
from ragline.server.wire import wire_references
from ragline.stream.base import StreamManager
from ragline.stream.replay import follow
from ragline.types import StreamEvent, StreamResponse

SSE_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


def sse_frame(event: StreamEvent, *, request_id: str, session_id: str, assistant_message_id: str) -> bytes:
    """One SSE frame for a stored event, in the shape WeKnora's clients read."""
    response = StreamResponse.from_event(
        event, request_id=request_id, session_id=session_id, assistant_message_id=assistant_message_id
    )
    response.knowledge_references = wire_references(response.knowledge_references)
    return f"id: {event.seq}\nevent:message\ndata: {response.to_json()}\n\n".encode()


async def frames(
    stream: StreamManager,
    key: str,
    start: int,
    config: StreamConfig,
    *,
    request_id: str,
    session_id: str,
    assistant_message_id: str,
) -> AsyncIterator[bytes]:
    """The frames of the log ``key`` from offset ``start``, replayed then live, until the terminal event."""
    async for event in follow(
        stream,
        key,
        start,
        min_wait_s=config.poll_min_wait_s,
        max_wait_s=config.poll_max_wait_s,
        max_duration_s=config.max_stream_seconds,
    ):
        yield sse_frame(event, request_id=request_id, session_id=session_id, assistant_message_id=assistant_message_id)


def sse_response(body: AsyncIterator[bytes], config: StreamConfig) -> EventSourceResponse:
    """An SSE response of ``body`` with pings every ``config.ping_interval_s``."""
    return EventSourceResponse(
        body,
        headers=SSE_HEADERS,
        ping=int(config.ping_interval_s),
        sep="\n",
        ping_message_factory=lambda: ServerSentEvent(comment="ping", sep="\n"),
        # On shutdown the body goes on (up to this long) until its turn's terminal event: a stream ends
        # with its turn, not with the process.
        shutdown_grace_period=config.shutdown_drain_s,
    )
