"""Chunks: a document's chunks in order, one chunk by id, edited or deleted (WeKnora's ``/chunks``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ragline.container import Container
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import not_found
from ragline.server.records import ChunkView
from ragline.server.schemas.chunks import ChunkUpdateBody
from ragline.server.views import Done, Envelope, Page, page_of
from ragline.server.wire import log_ignored
from ragline.store.models import Chunk, Document, Tenant
from ragline.types.text import Identifier

router = APIRouter(prefix="/api/v1", tags=["chunks"])

CHUNK_PAGE_SIZE = 20
MAX_PAGE_SIZE = 1000


def document_of(container: Container, tenant: Tenant, knowledge_id: str, field: str = "knowledge_id") -> Document:
    """The tenant's document ``knowledge_id``; a 404 naming ``field`` otherwise."""
    document = container.knowledge.document(tenant.id, knowledge_id)
    if document is None:
        raise not_found("document", field)
    return document


@router.get("/chunks/by-id/{chunk_id}")
def get_chunk(chunk_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[ChunkView]:
    """One chunk by id."""
    chunks = container.knowledge.chunks(tenant.id, [chunk_id])
    if not chunks:
        raise not_found("chunk", "chunk_id")
    return Envelope(data=ChunkView.of(chunks[0]))


@router.get("/chunks/{knowledge_id}")
def list_knowledge_chunks(
    knowledge_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = CHUNK_PAGE_SIZE,
    chunk_type: Annotated[list[Identifier] | None, Query(max_length=20)] = None,
) -> Page[ChunkView]:
    """A document's chunks in order, one page at a time; ``chunk_type`` (repeatable) keeps those types."""
    document = document_of(container, tenant, knowledge_id)
    chunks: list[Chunk] = container.knowledge.chunks_of_document(tenant.id, document.id)
    if chunk_type:
        chunks = [c for c in chunks if c.chunk_type in chunk_type]
    return page_of([ChunkView.of(c) for c in chunks], page, page_size)


@router.get("/knowledge-bases/{kb_id}/documents/{document_id}/chunks")
def list_chunks(kb_id: str, document_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[list[ChunkView]]:
    """Every chunk of a document of this knowledge base, in order (parents included)."""
    kb = knowledge_base_of(container, tenant, kb_id)
    document = document_of(container, tenant, document_id, "document_id")
    if document.knowledge_base_id != kb.id:
        raise not_found("document", "document_id")
    return Envelope(data=[ChunkView.of(c) for c in container.knowledge.chunks_of_document(tenant.id, document.id)])


def _chunk_of(container: Container, tenant: Tenant, knowledge_id: str, chunk_id: str) -> Chunk:
    """The chunk, which must belong to the document the path names."""
    document = document_of(container, tenant, knowledge_id)
    chunks = container.knowledge.chunks(tenant.id, [chunk_id])
    if not chunks or chunks[0].knowledge_id != document.id:
        raise not_found("chunk", "id")
    return chunks[0]


@router.put("/chunks/{knowledge_id}/{chunk_id}")
def update_chunk(
    knowledge_id: str, chunk_id: str, body: ChunkUpdateBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[ChunkView]:
    """A chunk's text (embedded and indexed again) or its enabled flag (a disabled chunk is not searched)."""
    _chunk_of(container, tenant, knowledge_id, chunk_id)
    log_ignored(body, ("chunk_index", "start_at", "end_at", "image_info", "embedding", "expected_revision"), "chunk")
    # An empty text is what WeKnora's Go client sends when only the flag changes: it means "unchanged".
    content = body.content if body.content and body.content.strip() else None
    chunk = container.chunk_edits.update(tenant.id, chunk_id, content=content, enabled=body.is_enabled)
    if chunk is None:
        raise not_found("chunk", "id")
    return Envelope(data=ChunkView.of(chunk))


@router.delete("/chunks/{knowledge_id}/{chunk_id}")
def delete_chunk(knowledge_id: str, chunk_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """Delete a chunk of a document; its neighbours are relinked and the index forgets it."""
    _chunk_of(container, tenant, knowledge_id, chunk_id)
    if not container.removal.delete_chunk(tenant.id, chunk_id):
        raise not_found("chunk", "id")
    return Done(message="Chunk deleted")


@router.delete("/chunks/{knowledge_id}")
def delete_knowledge_chunks(knowledge_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """Every chunk of the document (the document stays, with nothing to find in it)."""
    document = document_of(container, tenant, knowledge_id)
    for chunk in container.knowledge.chunks_of_document(tenant.id, document.id):
        container.removal.delete_chunk(tenant.id, chunk.id)
    return Done(message="All chunks under knowledge deleted")
