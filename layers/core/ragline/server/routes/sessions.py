"""Sessions and their messages."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ragline.server.deps import ContainerDep, TenantDep, session_of
from ragline.server.errors import not_found
from ragline.server.views import Items
from ragline.store.models import Message, Session

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])


class SessionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    knowledge_base_ids: list[str] = Field(default_factory=list)
    title: str = Field(default="", max_length=200)


@router.post("", status_code=201)
async def create_session(body: SessionBody, tenant: TenantDep, container: ContainerDep) -> Session:
    ids = list(dict.fromkeys(body.knowledge_base_ids))
    found = {kb.id for kb in container.knowledge.knowledge_bases(tenant.id, ids)}
    for kb_id in ids:
        if kb_id not in found:
            raise not_found(f"knowledge base {kb_id}", "knowledge_base_ids")
    return container.sessions.create_session(tenant.id, ids, title=body.title)


@router.get("")
async def list_sessions(tenant: TenantDep, container: ContainerDep) -> Items[Session]:
    return Items(items=container.sessions.sessions(tenant.id))


@router.get("/{session_id}")
async def get_session(session_id: str, tenant: TenantDep, container: ContainerDep) -> Session:
    return session_of(container, tenant, session_id)


@router.get("/{session_id}/messages")
async def list_messages(session_id: str, tenant: TenantDep, container: ContainerDep) -> Items[Message]:
    session = session_of(container, tenant, session_id)
    return Items(items=container.sessions.messages(tenant.id, session.id))
