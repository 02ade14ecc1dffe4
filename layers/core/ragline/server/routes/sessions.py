"""Sessions and their messages (WeKnora's ``/sessions``): create, read, page, update, pin, title, clear and delete.

A session whose answer is still being written is not deleted or cleared (409): stop it first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel

from ragline.container import Container
from ragline.pipeline.session_title import SessionTitler
from ragline.runtime.conversations import TurnRunning, UnknownMessage, fork_session, rewind_session, search_sessions
from ragline.server.body_limit import upload_body
from ragline.server.deps import ContainerDep, TenantDep, session_of
from ragline.server.errors import ApiError, ErrorReply, not_found
from ragline.server.records import MessageView, SessionView
from ragline.server.schemas.sessions import (
    AtMessage,
    BatchDeleteBody,
    FeedbackBody,
    GenerateTitleBody,
    SessionBody,
    SessionUpdate,
)
from ragline.server.views import Done, Envelope, Page, page_of
from ragline.server.wire import log_ignored
from ragline.store.models import Session, Tenant

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])

# WeKnora's default page size for sessions, and the largest page served.
SESSION_PAGE_SIZE = 10
MAX_PAGE_SIZE = 1000
# Sessions read for a listing: a tenant's newest ones.
MAX_LISTED_SESSIONS = 10_000


PageNumber = Annotated[int, Query(ge=1, le=1_000_000)]
PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]


@router.post("", status_code=201)
def create_session(body: SessionBody, tenant: TenantDep, container: ContainerDep) -> Envelope[SessionView]:
    """Create a session over the tenant's knowledge bases (an unknown one is a 404)."""
    field, ids = "knowledge_base_ids", list(dict.fromkeys(body.knowledge_base_ids))
    if not ids and body.agent_config is not None:
        log_ignored(body.agent_config, tuple(body.agent_config.model_extra or ()), "create session agent_config")
        field, ids = "agent_config.knowledge_bases", list(dict.fromkeys(body.agent_config.knowledge_bases))
    found = {kb.id for kb in container.knowledge.knowledge_bases(tenant.id, ids)}
    for kb_id in ids:
        if kb_id not in found:
            raise not_found(f"knowledge base {kb_id}", field)
    session = container.sessions.create_session(tenant.id, ids, title=body.title, description=body.description)
    return Envelope(data=SessionView.of(session))


def _check_idle(container: Container, tenant: Tenant, sessions: list[Session], field: str) -> None:
    """409 when an answer of one of ``sessions`` is still being written: deleting it would cut it off."""
    for session in sessions:
        messages = container.sessions.messages(tenant.id, session.id, limit=100_000)
        if any(m.role == "assistant" and not m.is_completed for m in messages):
            raise ApiError(
                409,
                "message_running",
                f"session {session.id} has an answer still being written; stop it first",
                field,
            )


@router.delete("/batch")
def delete_sessions(body: BatchDeleteBody, tenant: TenantDep, container: ContainerDep) -> Done:
    """The sessions named in ``ids`` with their messages, all or none: an unknown id is a 404 and deletes nothing.

    ``delete_all`` deletes every session of the tenant and ignores ``ids``.
    """
    if body.delete_all:
        sessions = container.sessions.sessions(tenant.id, limit=MAX_LISTED_SESSIONS)
    else:
        ids = list(dict.fromkeys(i.strip() for i in body.ids if i.strip()))
        if not ids:
            raise ApiError(422, "missing_field", "ids are required when delete_all is false", "ids")
        sessions = []
        for session_id in ids:
            session = container.sessions.session(tenant.id, session_id)
            if session is None:
                raise not_found(f"session {session_id}", "ids")
            sessions.append(session)
    _check_idle(container, tenant, sessions, "delete_all" if body.delete_all else "ids")
    for session in sessions:
        container.sessions.delete_session(tenant.id, session.id)
    message = "All sessions deleted successfully" if body.delete_all else "Sessions deleted successfully"
    return Done(message=message)


@router.get("")
def list_sessions(
    tenant: TenantDep,
    container: ContainerDep,
    page: PageNumber = 1,
    page_size: PageSize = SESSION_PAGE_SIZE,
    keyword: Annotated[str, Query(max_length=200)] = "",
    source: Annotated[str, Query(max_length=64)] = "",
    agent_id: Annotated[str, Query(max_length=200)] = "",
) -> Page[SessionView]:
    """The tenant's sessions.

    Pinned ones first, then the most recently active; ``keyword`` keeps those whose title or messages hold it
    (case-insensitive), a message match with its words in ``matched_content``. ``source`` and ``agent_id`` filter IM
    sessions in WeKnora: ragline has web sessions only, so ``source=web`` lists them all and another source none.
    """
    sessions = container.sessions.sessions(tenant.id, limit=MAX_LISTED_SESSIONS)
    # Pinned sessions first, the most recently pinned on top; then by activity (the store's order).
    sessions.sort(key=lambda s: s.pinned_at or "", reverse=True)
    if source.strip() and source.strip() != "web":
        sessions = []
    if agent_id.strip():
        logger.debug("list sessions: agent_id filters IM sessions, which ragline does not have")
    if not keyword.strip():
        return page_of([SessionView.of(s) for s in sessions], page, page_size)
    found = search_sessions(container.sessions, tenant.id, keyword, sessions)
    return page_of([SessionView.of(s, match or None) for s, match in found], page, page_size)


@router.get("/{session_id}")
def get_session(session_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[SessionView]:
    """One session."""
    return Envelope(data=SessionView.of(session_of(container, tenant, session_id)))


@router.get("/{session_id}/messages")
async def list_messages(session_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[list[MessageView]]:
    """Every message of the session, oldest first (an answer whose stream has ended, saved)."""
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    messages = await asyncio.to_thread(container.sessions.messages, tenant.id, session.id)
    return Envelope(data=[MessageView.of(m) for m in await container.turns.with_ended_answers(messages)])


READ_ONLY_SESSION_FIELDS = tuple(name for name in SessionUpdate.model_fields if name not in {"title", "description"})


@router.put("/{session_id}")
def update_session(
    session_id: str, body: SessionUpdate, tenant: TenantDep, container: ContainerDep
) -> Envelope[SessionView]:
    """Change a session's title or description."""
    session_of(container, tenant, session_id)
    log_ignored(body, READ_ONLY_SESSION_FIELDS, "update session")
    updated = container.sessions.update_session(tenant.id, session_id, title=body.title, description=body.description)
    if updated is None:
        raise not_found("session", "session_id")
    return Envelope(data=SessionView.of(updated))


@router.delete("/{session_id}")
def delete_session(session_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """Delete a session and its messages; 409 while one of its turns is still being written."""
    session = session_of(container, tenant, session_id)
    _check_idle(container, tenant, [session], "session_id")
    if not container.sessions.delete_session(tenant.id, session.id):
        raise not_found("session", "session_id")
    return Done(message="Session deleted successfully")


@router.delete("/{session_id}/messages")
def clear_messages(session_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """Every message of the session; the session stays (with its title)."""
    session = session_of(container, tenant, session_id)
    _check_idle(container, tenant, [session], "session_id")
    container.sessions.clear_messages(tenant.id, session.id)
    return Done(message="Session messages cleared successfully")


class PinReply(BaseModel):
    """WeKnora's pin reply: ``{"success": true, "is_pinned": ...}``."""

    success: Literal[True] = True
    is_pinned: bool


@router.post("/{session_id}/pin")
def pin_session(session_id: str, tenant: TenantDep, container: ContainerDep) -> PinReply:
    """Pins the session to the top of the list (pinning again keeps it pinned, on top)."""
    session_of(container, tenant, session_id)
    if container.sessions.update_session(tenant.id, session_id, pinned=True) is None:
        raise not_found("session", "session_id")
    return PinReply(is_pinned=True)


@router.delete("/{session_id}/pin")
def unpin_session(session_id: str, tenant: TenantDep, container: ContainerDep) -> PinReply:
    """Unpin a session."""
    session_of(container, tenant, session_id)
    if container.sessions.update_session(tenant.id, session_id, pinned=False) is None:
        raise not_found("session", "session_id")
    return PinReply(is_pinned=False)


class TitleReply(BaseModel):
    """WeKnora's reply: the title itself in ``data``."""

    success: Literal[True] = True
    data: str


@router.post("/{session_id}/generate_title")
@upload_body
async def generate_title(
    session_id: str, body: GenerateTitleBody, tenant: TenantDep, container: ContainerDep
) -> TitleReply:
    """A title from the conversation's first question, stored as the session's title and returned.

    A title from the conversation's first question (the chat model's, or the question's first words with the extractive
    default), stored as the session's title and returned.
    """
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    question = next((m.content for m in body.messages if m.role == "user" and m.content.strip()), "")
    if not question:
        raise ApiError(422, "invalid_field", "messages must hold a user message with content", "messages")
    titler = SessionTitler(container.sessions, container.models, container.templates)
    title = await titler.title_for(question, container.config.conversation.language, session_id=session.id)
    if not title:
        raise ApiError(422, "invalid_field", "the user message holds no text to title", "messages")
    await asyncio.to_thread(container.sessions.update_session, tenant.id, session.id, title=title)
    return TitleReply(data=title)


class ForkReply(BaseModel):
    """A fork's reply: the new session and its copied messages."""

    success: Literal[True] = True
    data: SessionView
    messages: list[MessageView]


@router.post("/{session_id}/fork", status_code=201, responses={409: {"model": ErrorReply}})
def fork(session_id: str, body: AtMessage, tenant: TenantDep, container: ContainerDep) -> ForkReply:
    """A new session holding copies of the turns up to and including ``message_id``'s.

    A new session (same knowledge bases and options) holding copies of the turns up to and including ``message_id``'s;
    this session is unchanged. 409 when one of those turns is still being written.
    """
    session = session_of(container, tenant, session_id)
    try:
        forked, copies = fork_session(container.sessions, session, body.message_id)
    except UnknownMessage:
        raise not_found(f"message {body.message_id}", "message_id") from None
    except TurnRunning:
        raise ApiError(
            409, "message_running", "an answer up to that point is still being written", "message_id"
        ) from None
    return ForkReply(data=SessionView.of(forked), messages=[MessageView.of(m) for m in copies])


class RewindResult(BaseModel):
    """What a rewind deleted: how many messages and their ids."""

    deleted_count: int
    deleted_ids: list[str]


@router.post("/{session_id}/rewind", responses={409: {"model": ErrorReply}})
def rewind(session_id: str, body: AtMessage, tenant: TenantDep, container: ContainerDep) -> Envelope[RewindResult]:
    """Deletes the turns after ``message_id``'s (that turn stays).

    409 when one of them is still being written: stop it first.
    """
    session = session_of(container, tenant, session_id)
    try:
        deleted = rewind_session(container.sessions, session, body.message_id)
    except UnknownMessage:
        raise not_found(f"message {body.message_id}", "message_id") from None
    except TurnRunning:
        raise ApiError(
            409, "message_running", "an answer after that point is still being written", "message_id"
        ) from None
    return Envelope(data=RewindResult(deleted_count=len(deleted), deleted_ids=[m.id for m in deleted]))


@router.put("/{session_id}/messages/{message_id}/feedback")
def set_feedback(
    session_id: str, message_id: str, body: FeedbackBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[MessageView]:
    """Stores the rating and comment on the answer (replacing any earlier ones)."""
    session = session_of(container, tenant, session_id)
    message = container.sessions.message(tenant.id, session.id, message_id)
    if message is None:
        raise not_found("message", "message_id")
    if message.role != "assistant":
        raise ApiError(422, "invalid_field", "feedback is given on answers (assistant messages)", "message_id")
    rating = "" if body.rating == "none" else body.rating
    comment = body.comment.strip() if rating else ""
    updated = container.sessions.set_feedback(tenant.id, session.id, message_id, rating, comment)
    if updated is None:
        raise not_found("message", "message_id")
    return Envelope(data=MessageView.of(updated))
