"""Questions, their streamed answers (SSE, resumable by offset or ``Last-Event-ID``) and stop.

WeKnora's ``/knowledge-chat`` and ``/agent-chat`` ask and stream in one call; ragline's ``/questions``
accepts the question (202) and names the stream to follow, which in AWS another function serves.
``router`` asks; ``stream_router`` reads and stops (the routes of AWS's stream_reader).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, BeforeValidator
from sse_starlette.sse import EventSourceResponse

from ragline.container import Container
from ragline.runtime.question_images import BadQuestionImage
from ragline.runtime.turns import STOP_REPLIES, AcceptedTurn, QuestionBody, TurnLauncher, UnknownKnowledgeBase
from ragline.server.body_limit import upload_body
from ragline.server.deps import (
    ContainerDep,
    LauncherDep,
    StreamBaseDep,
    TenantDep,
    UserIdHeader,
    check_query_length,
    session_of,
)
from ragline.server.errors import TURN_REPLIES, ApiError, ErrorReply, not_found
from ragline.server.routes.tags import tag_filter
from ragline.server.schemas.chat import StopBody
from ragline.server.sse import frames, sse_response
from ragline.server.views import Envelope
from ragline.store.models import Session, Tenant
from ragline.stream.base import stream_key
from ragline.stream.replay import MAX_SEQ, StreamPosition, start_offset, stream_position
from ragline.types.text import MAX_ID_CHARS
from ragline.understanding.prompt import REWRITE_TEMPLATES_FILE

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1", tags=["chat"])
# Following, resuming and stopping an answer: all that stream_reader serves in AWS.
stream_router = APIRouter(prefix="/api/v1", tags=["chat"])

# What OpenAPI says about a streamed reply: SSE frames, each a JSON StreamResponse in ``data``.
SSE_REPLY: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `id: <offset>`, `event:message`, `data: <StreamResponse JSON>`",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", max_length=32)]


def _digits_only(value: object) -> object:
    """An offset is written in digits alone, as ``Last-Event-ID`` is: ``+3`` or ``3.0`` is refused (422), not read as 3."""
    if isinstance(value, str) and not (value.isascii() and value.isdigit()):
        raise ValueError("must be a whole number written in digits")
    return value


# An event's offset in its answer's log: ``?offset=N`` replays from event N on.
EventOffset = Annotated[int | None, BeforeValidator(_digits_only), Query(ge=0, le=MAX_SEQ)]
# The replies of a resumable stream besides its events.
STREAM_REPLIES: dict[int | str, dict[str, Any]] = {
    **SSE_REPLY,
    204: {"description": "The reader is already past the answer's last event: nothing more will come"},
    416: {"description": "The offset is past the end of the answer's events", "model": ErrorReply},
}


class AcceptedQuestion(BaseModel):
    """The ids of an accepted turn and where its answer streams from."""

    session_id: str
    request_id: str
    user_message_id: str
    assistant_message_id: str
    stream_url: str


class StopStatus(BaseModel):
    """``stopped``, or how the answer had already ended."""

    status: Literal["stopped", "already_completed", "already_stopped", "already_failed", "already_interrupted"]


class StopReply(BaseModel):
    """WeKnora's reply (``success``, ``message``) with ragline's status in ``data``."""

    success: Literal[True] = True
    message: str
    data: StopStatus


async def _accept(
    container: Container,
    launcher: TurnLauncher,
    session: Session,
    body: QuestionBody,
    user_id: str,
    *,
    agent_requested: bool = False,
) -> AcceptedTurn:
    check_query_length(container, body.query)
    if body.summary_model_id and not container.models.has_chat_model(body.summary_model_id):
        # WeKnora's model ids name models of a WeKnora deployment: the configured model answers instead.
        logger.debug("question: unknown summary_model_id %r, using the default model", body.summary_model_id)
        body = body.model_copy(update={"summary_model_id": None})
    if body.understand_model_id and not container.models.has_chat_model(body.understand_model_id):
        raise ApiError(
            422, "invalid_field", "understand_model_id names no chat model of this deployment", "understand_model_id"
        )
    if body.rewrite_template_id and body.rewrite_template_id not in container.templates.ids(REWRITE_TEMPLATES_FILE):
        raise ApiError(
            422, "invalid_field", "rewrite_template_id names no template of rewrite.yaml", "rewrite_template_id"
        )
    if body.tags or body.tag_ids:
        refs = [*(body.tags or []), *(body.tag_ids or [])]

        def tags_of(body: QuestionBody = body) -> list[str] | None:
            return tag_filter(container, session.tenant_id, container.turns.scope(session, body)[0], refs)

        body = body.model_copy(update={"tags": await asyncio.to_thread(tags_of)})
    try:
        turn = await container.turns.accept(session, body, user_id, agent_requested=agent_requested)
    except UnknownKnowledgeBase as exc:
        raise not_found(f"{exc.what} {exc.value}", exc.field) from None
    except BadQuestionImage as exc:
        raise ApiError(422, "invalid_image", f"{exc.field}: {exc}", exc.field) from None
    # A repeated request id is the same turn; it is started here if the accept that stored it never did.
    if not turn.duplicate or await container.turns.never_started(turn, launcher):
        await launcher.launch(turn)
    return turn


@router.post("/sessions/{session_id}/questions", status_code=202, responses=TURN_REPLIES)
@upload_body
async def ask(
    session_id: str,
    body: QuestionBody,
    tenant: TenantDep,
    container: ContainerDep,
    launcher: LauncherDep,
    stream_base_url: StreamBaseDep,
    x_user_id: UserIdHeader = "",
) -> Envelope[AcceptedQuestion]:
    """Ask a question in the session: the turn starts, and the reply says where to follow its answer."""
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    turn = await _accept(container, launcher, session, body, x_user_id)
    ids = turn.ids()
    ids["stream_url"] = stream_base_url + ids["stream_url"]
    return Envelope(data=AcceptedQuestion(**ids))


@router.post(
    "/knowledge-chat/{session_id}", responses={**SSE_REPLY, **TURN_REPLIES}, response_class=EventSourceResponse
)
@upload_body
async def knowledge_chat(
    session_id: str,
    body: QuestionBody,
    tenant: TenantDep,
    container: ContainerDep,
    launcher: LauncherDep,
    x_user_id: UserIdHeader = "",
) -> EventSourceResponse:
    """Ask and stream in one call (WeKnora's knowledge chat)."""
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    turn = await _accept(container, launcher, session, body, x_user_id)
    return _answer_stream(container, session.id, turn.assistant_message.id, turn.request.request_id, 0)


@router.post("/agent-chat/{session_id}", responses={**SSE_REPLY, **TURN_REPLIES}, response_class=EventSourceResponse)
@upload_body
async def agent_chat(
    session_id: str,
    body: QuestionBody,
    tenant: TenantDep,
    container: ContainerDep,
    launcher: LauncherDep,
    x_user_id: UserIdHeader = "",
) -> EventSourceResponse:
    """WeKnora's agent chat.

    Agent mode is not implemented: the question runs the knowledge-chat pipeline, and the first event (``agent_query``)
    says so: ``data.agent_mode`` is ``"off"``.
    """
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    turn = await _accept(container, launcher, session, body, x_user_id, agent_requested=True)
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
) -> Response:
    """The answer's events from the reader's position.

    A replay and the live rest, 204 for a reader already past the terminal event, 416 for an offset the answer never
    reached.
    """
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    message = await asyncio.to_thread(container.sessions.message, tenant.id, session.id, message_id)
    if message is None or message.role != "assistant":
        raise ApiError(404, "not_found", "message not found", "message_id")
    key = stream_key(session.id, message.id)
    if not await container.stream.has_events(key):
        raise ApiError(404, "not_found", "No stream events found", "message_id")
    field = "Last-Event-ID" if last_event_id is not None and last_event_id.strip() else "offset"
    try:
        start = start_offset(last_event_id, offset)
    except ValueError as exc:
        raise ApiError(422, "invalid_field", str(exc), field) from None
    position = await stream_position(container.stream, key, start)
    if position == StreamPosition.ENDED:
        # At or after the terminal event: nothing will ever follow. 204 also tells a browser's EventSource
        # not to reconnect (it reconnects after any other close).
        return Response(status_code=204, headers={"Cache-Control": "no-store"})
    if position == StreamPosition.BEYOND:
        raise ApiError(416, "offset_out_of_range", f"{field} is past the end of this answer's events", field)
    return _answer_stream(container, session.id, message.id, message.request_id, start)


@stream_router.get(
    "/sessions/{session_id}/messages/{message_id}/events", responses=STREAM_REPLIES, response_class=EventSourceResponse
)
async def message_events(
    session_id: str,
    message_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    offset: EventOffset = None,
    last_event_id: LastEventId = None,
) -> Response:
    """The answer's events as SSE from ``offset`` (or ``Last-Event-ID``), replayed then live."""
    return await _stream_message(container, tenant, session_id, message_id, last_event_id, offset)


@stream_router.get(
    "/sessions/continue-stream/{session_id}", responses=STREAM_REPLIES, response_class=EventSourceResponse
)
async def continue_stream(
    session_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    message_id: Annotated[str, Query(min_length=1, max_length=MAX_ID_CHARS)],
    offset: EventOffset = None,
    last_event_id: LastEventId = None,
) -> Response:
    """WeKnora's continue-stream: the answer of ``message_id`` as SSE, from where the reader is."""
    return await _stream_message(container, tenant, session_id, message_id, last_event_id, offset)


@stream_router.post("/sessions/{session_id}/stop")
async def stop(
    session_id: str, body: StopBody, tenant: TenantDep, container: ContainerDep, launcher: LauncherDep
) -> StopReply:
    """Stop the answer of ``message_id``; the reply says whether it was running, already ended, or stopped now."""
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    try:
        status = await container.turns.stop(launcher, tenant.id, session.id, body.message_id)
    except LookupError:
        raise not_found("message", "message_id") from None
    return StopReply(message=STOP_REPLIES[status], data=StopStatus(status=status))
