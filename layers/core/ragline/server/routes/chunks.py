"""Chunks: a document's chunks in order, and one chunk by id."""

from __future__ import annotations

from fastapi import APIRouter

from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import not_found
from ragline.server.views import Items
from ragline.store.models import Chunk

router = APIRouter(prefix="/api/v1", tags=["knowledge"])


@router.get("/knowledge-bases/{kb_id}/documents/{document_id}/chunks")
async def list_chunks(kb_id: str, document_id: str, tenant: TenantDep, container: ContainerDep) -> Items[Chunk]:
    kb = knowledge_base_of(container, tenant, kb_id)
    document = container.knowledge.document(tenant.id, document_id)
    if document is None or document.knowledge_base_id != kb.id:
        raise not_found("document", "document_id")
    return Items(items=container.knowledge.chunks_of_document(tenant.id, document_id))


@router.get("/chunks/{chunk_id}")
async def get_chunk(chunk_id: str, tenant: TenantDep, container: ContainerDep) -> Chunk:
    chunks = container.knowledge.chunks(tenant.id, [chunk_id])
    if not chunks:
        raise not_found("chunk", "chunk_id")
    return chunks[0]
