"""WeKnora's features ragline does not have, answered as WeKnora answers when none is configured.

Organizations and what they share, favourites, invitations, IM and embed channels, MCP services, web search
providers as tenant records, vector stores, skills, and folders of uploaded documents. WeKnora's web app lists each
on every page load: an empty list (or count) is the true answer here — ragline has none, and nobody can make one —
where a 404 would be an error in the app. Creating any of them is not served (a 404, as for any route ragline lacks).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi import Query as QueryParam
from pydantic import BaseModel, Field

from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.views import Envelope

router = APIRouter(prefix="/api/v1", tags=["not served: none configured"])

Empty = Envelope[list[dict[str, Any]]]


def _none() -> Empty:
    return Envelope(data=[])


class ResourceCounts(BaseModel):
    """Knowledge bases and agents shared per organization (none)."""

    knowledge_bases: dict[str, Any] = Field(default_factory=lambda: {"by_organization": {}})
    agents: dict[str, Any] = Field(default_factory=lambda: {"by_organization": {}})


class Organizations(BaseModel):
    """WeKnora's list of the caller's organizations."""

    organizations: list[dict[str, Any]] = Field(default_factory=list)
    total: int = 0
    resource_counts: ResourceCounts = Field(default_factory=ResourceCounts)


@router.get("/organizations")
def organizations(tenant: TenantDep) -> Envelope[Organizations]:
    """The caller's organizations: none (ragline has no shared spaces)."""
    del tenant
    return Envelope(data=Organizations())


@router.get("/shared-knowledge-bases")
def shared_knowledge_bases(tenant: TenantDep) -> Empty:
    """Knowledge bases shared with the caller through organizations: none."""
    del tenant
    return _none()


@router.get("/shared-agents")
def shared_agents(tenant: TenantDep) -> Empty:
    """Agents shared with the caller through organizations: none."""
    del tenant
    return _none()


@router.get("/user/favorites")
def favorites(tenant: TenantDep, type: Annotated[Literal["kb", "agent"] | None, QueryParam()] = None) -> Empty:
    """The caller's favourite knowledge bases or agents: none (ragline pins knowledge bases instead)."""
    del tenant, type
    return _none()


class PendingCount(BaseModel):
    """Invitations waiting for the caller."""

    pending_count: int = 0


@router.get("/me/invitations/pending-count")
def pending_invitations(tenant: TenantDep) -> Envelope[PendingCount]:
    """Invitations to other tenants waiting for the caller: none (a tenant has one user here)."""
    del tenant
    return Envelope(data=PendingCount())


@router.get("/im-channels")
def im_channels(tenant: TenantDep) -> Empty:
    """IM channels (WeCom, Feishu, Slack, …) of the tenant's agents: none."""
    del tenant
    return _none()


@router.get("/embed-channels")
def embed_channels(tenant: TenantDep) -> Empty:
    """Embedded chat widgets of the tenant's agents: none."""
    del tenant
    return _none()


@router.get("/mcp-services")
def mcp_services(tenant: TenantDep) -> Empty:
    """MCP tool services: none (ragline has no agent mode to call tools)."""
    del tenant
    return _none()


@router.get("/web-search-providers")
def web_search_providers(tenant: TenantDep) -> Empty:
    """The tenant's web search providers: none as records (ragline's one is the deployment's, set by environment)."""
    del tenant
    return _none()


@router.get("/vector-stores")
def vector_stores(tenant: TenantDep) -> Empty:
    """The tenant's own vector databases: none (ragline's engine is the deployment's)."""
    del tenant
    return _none()


class Skills(Envelope[list[dict[str, Any]]]):
    """Agent skills, and whether they can run here."""

    skills_available: bool = False


@router.get("/skills")
def skills(tenant: TenantDep) -> Skills:
    """Agent skills: none, and not available (no agent mode, no sandbox)."""
    del tenant
    return Skills(data=[])


class FolderTree(BaseModel):
    """WeKnora's folders of a knowledge base's uploaded folders: none; every document is at the top level."""

    root_document_count: int
    total_document_count: int
    folders: list[dict[str, Any]] = Field(default_factory=list)


@router.get("/knowledge-bases/{kb_id}/knowledge/folders")
def knowledge_folders(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[FolderTree]:
    """The knowledge base's folders: none (uploads are files, not folders), with its document count."""
    kb = knowledge_base_of(container, tenant, kb_id)
    count = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    return Envelope(data=FolderTree(root_document_count=count, total_document_count=count))
