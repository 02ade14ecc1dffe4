"""A session's messages, newest page first (WeKnora's ``/messages``).

How a client reloads a conversation and finds an unfinished answer to resume (``is_completed`` false) with
continue-stream.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from ragline.server.deps import ContainerDep, TenantDep, session_of
from ragline.server.errors import ApiError, not_found
from ragline.server.records import MessageView
from ragline.server.views import Done, Envelope
from ragline.store.models import Message

router = APIRouter(prefix="/api/v1/messages", tags=["messages"])

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000


def _instant(value: str, field: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(422, "invalid_field", f"{field} must be an RFC 3339 time", field) from None
    if moment.tzinfo is None:
        raise ApiError(422, "invalid_field", f"{field} must include a time zone", field)
    return moment


def page_before(messages: list[Message], before: datetime | None, limit: int) -> list[Message]:
    """The newest ``limit`` messages created before ``before`` (all when None).

    Oldest first, a turn's question before its answer. A page never splits a turn: a question and its answer share their
    ``created_at``, so a question cut off here could never be fetched by the next page.
    """
    older = [m for m in messages if before is None or _instant(m.created_at, "created_at") < before]
    older.sort(key=lambda m: (_instant(m.created_at, "created_at"), m.role != "user"))
    start = max(0, len(older) - limit)
    if 0 < start < len(older) and older[start - 1].request_id == older[start].request_id:
        start -= 1
    return older[start:]


@router.get("/{session_id}/load")
async def load_messages(
    session_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    before_time: Annotated[str | None, Query(max_length=64)] = None,
) -> Envelope[list[MessageView]]:
    """The newest ``limit`` messages.

    With ``before_time`` (the ``created_at`` of the oldest one a client holds), the ``limit`` before it; oldest first
    either way.
    """
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    before = _instant(before_time, "before_time") if before_time and before_time.strip() else None
    messages = await asyncio.to_thread(container.sessions.messages, tenant.id, session.id, limit=100_000)
    page = await container.turns.with_ended_answers(page_before(messages, before, limit))
    return Envelope(data=[MessageView.of(m) for m in page])


@router.delete("/{session_id}/{message_id}")
def delete_message(session_id: str, message_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """One message of the session. An answer still being written is refused (409): stop it first."""
    session = session_of(container, tenant, session_id)
    message = container.sessions.message(tenant.id, session.id, message_id)
    if message is None:
        raise not_found("message", "message_id")
    if message.role == "assistant" and not message.is_completed:
        raise ApiError(409, "message_running", "the answer is still being written; stop it first", "message_id")
    if not container.sessions.delete_message(tenant.id, session.id, message_id):
        raise not_found("message", "message_id")
    return Done(message="Message deleted successfully")
