"""Sessions and their messages (WeKnora's ``/sessions``)."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from ragline.server.deps import ContainerDep, TenantDep, session_of
from ragline.server.errors import not_found
from ragline.server.records import MessageView, SessionView
from ragline.server.views import Envelope, Page, page_of
from ragline.server.wire import log_ignored
from ragline.types.text import PlainName, PlainText

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])

# WeKnora's default page size for sessions, and the largest page served.
SESSION_PAGE_SIZE = 10
MAX_PAGE_SIZE = 1000
# Sessions read for a listing: a tenant's newest ones.
MAX_LISTED_SESSIONS = 10_000

PageNumber = Annotated[int, Query(ge=1, le=1_000_000)]
PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]


class SessionBody(BaseModel):
    """WeKnora's session (a title and a description) and the knowledge bases ragline searches by default."""

    model_config = ConfigDict(extra="forbid")
    knowledge_base_ids: list[str] = Field(default_factory=list)
    title: PlainName = Field(default="", max_length=200)
    description: PlainText = Field(default="", max_length=2000)


@router.post("", status_code=201)
async def create_session(body: SessionBody, tenant: TenantDep, container: ContainerDep) -> Envelope[SessionView]:
    ids = list(dict.fromkeys(body.knowledge_base_ids))
    found = {kb.id for kb in container.knowledge.knowledge_bases(tenant.id, ids)}
    for kb_id in ids:
        if kb_id not in found:
            raise not_found(f"knowledge base {kb_id}", "knowledge_base_ids")
    log_ignored(body, ("description",), "create session")
    session = container.sessions.create_session(tenant.id, ids, title=body.title)
    return Envelope(data=SessionView.of(session))


@router.get("")
async def list_sessions(
    tenant: TenantDep,
    container: ContainerDep,
    page: PageNumber = 1,
    page_size: PageSize = SESSION_PAGE_SIZE,
    keyword: Annotated[str, Query(max_length=200)] = "",
) -> Page[SessionView]:
    """The tenant's sessions, most recently active first; ``keyword`` matches titles."""
    sessions = container.sessions.sessions(tenant.id, limit=MAX_LISTED_SESSIONS)
    if keyword.strip():
        needle = keyword.strip().casefold()
        sessions = [s for s in sessions if needle in s.title.casefold()]
    return page_of([SessionView.of(s) for s in sessions], page, page_size)


@router.get("/{session_id}")
async def get_session(session_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[SessionView]:
    return Envelope(data=SessionView.of(session_of(container, tenant, session_id)))


@router.get("/{session_id}/messages")
async def list_messages(session_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[list[MessageView]]:
    """Every message of the session, oldest first."""
    session = session_of(container, tenant, session_id)
    return Envelope(data=[MessageView.of(m) for m in container.sessions.messages(tenant.id, session.id)])
