"""Knowledge bases: create, list, get."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import ApiError
from ragline.server.views import Items
from ragline.store.models import DuplicateName, KnowledgeBase

router = APIRouter(prefix="/api/v1/knowledge-bases", tags=["knowledge"])


class KnowledgeBaseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=2000)
    wiki_enabled: bool = False
    graph_extraction_enabled: bool = False


class KnowledgeBaseView(KnowledgeBase):
    document_count: int = 0


@router.post("", status_code=201)
async def create_knowledge_base(
    body: KnowledgeBaseBody, tenant: TenantDep, container: ContainerDep
) -> KnowledgeBaseView:
    try:
        kb = container.knowledge.create_knowledge_base(
            tenant.id,
            body.name.strip(),
            container.models.default_embedder_id,
            body.description,
            wiki_enabled=body.wiki_enabled,
            graph_extraction_enabled=body.graph_extraction_enabled,
        )
    except DuplicateName:
        raise ApiError(409, "duplicate_name", f"a knowledge base named {body.name!r} exists", "name") from None
    return KnowledgeBaseView(**kb.model_dump(), document_count=0)


@router.get("")
async def list_knowledge_bases(tenant: TenantDep, container: ContainerDep) -> Items[KnowledgeBaseView]:
    bases = container.knowledge.list_knowledge_bases(tenant.id)
    counts = container.knowledge.document_counts([kb.id for kb in bases])
    return Items(items=[KnowledgeBaseView(**kb.model_dump(), document_count=counts.get(kb.id, 0)) for kb in bases])


@router.get("/{kb_id}")
async def get_knowledge_base(kb_id: str, tenant: TenantDep, container: ContainerDep) -> KnowledgeBaseView:
    kb = knowledge_base_of(container, tenant, kb_id)
    count = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    return KnowledgeBaseView(**kb.model_dump(), document_count=count)
