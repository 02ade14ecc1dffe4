"""Chunks: a document's chunks in order, and one chunk by id (WeKnora's ``/chunks``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ragline.container import Container
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import not_found
from ragline.server.records import ChunkView
from ragline.server.views import Envelope, Page, page_of
from ragline.store.models import Chunk, Document, Tenant

router = APIRouter(prefix="/api/v1", tags=["chunks"])

CHUNK_PAGE_SIZE = 20
MAX_PAGE_SIZE = 1000


def document_of(container: Container, tenant: Tenant, knowledge_id: str, field: str = "knowledge_id") -> Document:
    document = container.knowledge.document(tenant.id, knowledge_id)
    if document is None:
        raise not_found("document", field)
    return document


@router.get("/chunks/by-id/{chunk_id}")
async def get_chunk(chunk_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[ChunkView]:
    chunks = container.knowledge.chunks(tenant.id, [chunk_id])
    if not chunks:
        raise not_found("chunk", "chunk_id")
    return Envelope(data=ChunkView.of(chunks[0]))


@router.get("/chunks/{knowledge_id}")
async def list_knowledge_chunks(
    knowledge_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = CHUNK_PAGE_SIZE,
    chunk_type: Annotated[list[str] | None, Query(max_length=20)] = None,
) -> Page[ChunkView]:
    """A document's chunks in order, one page at a time; ``chunk_type`` (repeatable) keeps those types."""
    document = document_of(container, tenant, knowledge_id)
    chunks: list[Chunk] = container.knowledge.chunks_of_document(tenant.id, document.id)
    if chunk_type:
        chunks = [c for c in chunks if c.chunk_type in chunk_type]
    return page_of([ChunkView.of(c) for c in chunks], page, page_size)


@router.get("/knowledge-bases/{kb_id}/documents/{document_id}/chunks")
async def list_chunks(
    kb_id: str, document_id: str, tenant: TenantDep, container: ContainerDep
) -> Envelope[list[ChunkView]]:
    """Every chunk of a document of this knowledge base, in order (parents included)."""
    kb = knowledge_base_of(container, tenant, kb_id)
    document = document_of(container, tenant, document_id, "document_id")
    if document.knowledge_base_id != kb.id:
        raise not_found("document", "document_id")
    return Envelope(data=[ChunkView.of(c) for c in container.knowledge.chunks_of_document(tenant.id, document.id)])
