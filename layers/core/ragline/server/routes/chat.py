"""Questions, their streamed answers (SSE, resumable by offset or ``Last-Event-ID``) and stop."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse

from ragline.container import Container
from ragline.runtime.turns import AcceptedTurn, QuestionBody, TurnLauncher, UnknownKnowledgeBase
from ragline.server.deps import (
    ContainerDep,
    LauncherDep,
    StreamBaseDep,
    TenantDep,
    UserIdHeader,
    check_query_length,
    session_of,
)
from ragline.server.errors import ApiError, not_found
from ragline.server.sse import frames, sse_response
from ragline.store.models import Session, Tenant
from ragline.stream.base import stream_key
from ragline.stream.replay import start_offset

router = APIRouter(prefix="/api/v1", tags=["chat"])

# What OpenAPI says about a streamed reply: SSE frames, each a JSON StreamResponse in ``data``.
SSE_REPLY: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `id: <offset>`, `event: message`, `data: <StreamResponse JSON>`",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID")]


class StopBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_id: str = Field(min_length=1)


class AcceptedQuestion(BaseModel):
    """The ids of an accepted turn and where its answer streams from."""

    session_id: str
    request_id: str
    user_message_id: str
    assistant_message_id: str
    stream_url: str


class StopReply(BaseModel):
    status: Literal["stopped", "already_completed"]
    message: str


async def _accept(
    container: Container, launcher: TurnLauncher, session: Session, body: QuestionBody, user_id: str
) -> AcceptedTurn:
    check_query_length(container, body.query)
    try:
        turn = await container.turns.accept(session, body, user_id)
    except UnknownKnowledgeBase as exc:
        raise not_found(f"{exc.field[:-4].replace('_', ' ')} {exc.value}", exc.field) from None
    if not turn.duplicate:
        await launcher.launch(turn)
    return turn


@router.post("/sessions/{session_id}/questions", status_code=202)
async def ask(
    session_id: str,
    body: QuestionBody,
    tenant: TenantDep,
    container: ContainerDep,
    launcher: LauncherDep,
    stream_base_url: StreamBaseDep,
    x_user_id: UserIdHeader = "",
) -> AcceptedQuestion:
    session = session_of(container, tenant, session_id)
    turn = await _accept(container, launcher, session, body, x_user_id)
    ids = turn.ids()
    ids["stream_url"] = stream_base_url + ids["stream_url"]
    return AcceptedQuestion(**ids)


@router.post("/knowledge-chat/{session_id}", responses=SSE_REPLY, response_class=EventSourceResponse)
async def knowledge_chat(
    session_id: str,
    body: QuestionBody,
    tenant: TenantDep,
    container: ContainerDep,
    launcher: LauncherDep,
    x_user_id: UserIdHeader = "",
) -> EventSourceResponse:
    """Ask and stream in one call (WeKnora-compatible)."""
    session = session_of(container, tenant, session_id)
    turn = await _accept(container, launcher, session, body, x_user_id)
    return _answer_stream(container, session.id, turn.assistant_message.id, turn.request.request_id, 0)


def _answer_stream(
    container: Container, session_id: str, message_id: str, request_id: str, start: int
) -> EventSourceResponse:
    """The SSE reply that follows one answer's event log from ``start`` until its terminal event."""
    config = container.config.stream
    key = stream_key(session_id, message_id)
    body = frames(
        container.stream,
        key,
        start,
        config,
        request_id=request_id,
        session_id=session_id,
        assistant_message_id=message_id,
    )
    return sse_response(body, config)


async def _stream_message(
    container: Container,
    tenant: Tenant,
    session_id: str,
    message_id: str,
    last_event_id: str | None,
    offset: int | None,
) -> EventSourceResponse:
    session = session_of(container, tenant, session_id)
    message = container.sessions.message(tenant.id, session.id, message_id)
    if message is None or message.role != "assistant":
        raise not_found("message", "message_id")
    key = stream_key(session.id, message.id)
    if not await container.stream.has_events(key):
        raise not_found("stream", "message_id")
    try:
        start = start_offset(last_event_id, offset)
    except ValueError as exc:
        field = "Last-Event-ID" if last_event_id is not None else "offset"
        raise ApiError(422, "invalid_field", str(exc), field) from None
    return _answer_stream(container, session.id, message.id, message.request_id, start)


@router.get(
    "/sessions/{session_id}/messages/{message_id}/events", responses=SSE_REPLY, response_class=EventSourceResponse
)
async def message_events(
    session_id: str,
    message_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    offset: Annotated[int | None, Query()] = None,
    last_event_id: LastEventId = None,
) -> EventSourceResponse:
    return await _stream_message(container, tenant, session_id, message_id, last_event_id, offset)


@router.get("/sessions/continue-stream/{session_id}", responses=SSE_REPLY, response_class=EventSourceResponse)
async def continue_stream(
    session_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    message_id: Annotated[str, Query(min_length=1)],
    offset: Annotated[int | None, Query()] = None,
    last_event_id: LastEventId = None,
) -> EventSourceResponse:
    return await _stream_message(container, tenant, session_id, message_id, last_event_id, offset)


@router.post("/sessions/{session_id}/stop")
async def stop(
    session_id: str, body: StopBody, tenant: TenantDep, container: ContainerDep, launcher: LauncherDep
) -> StopReply:
    session = session_of(container, tenant, session_id)
    try:
        status = await container.turns.stop(launcher, tenant.id, session.id, body.message_id)
    except LookupError:
        raise not_found("message", "message_id") from None
    if status == "already_completed":
        return StopReply(status="already_completed", message="Message already completed")
    return StopReply(status="stopped", message="Generation stopped")
