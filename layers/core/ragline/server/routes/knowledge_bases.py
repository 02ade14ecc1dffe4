"""Knowledge bases.

Create, list, get, update, delete, clear, and hybrid search within one (WeKnora's ``/knowledge-bases``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi import Query as QueryParam
from pydantic import BaseModel

from ragline.container import Container
from ragline.ingest.language import resolve_embedding_model
from ragline.runtime.search import SearchBody
from ragline.runtime.suggestions import suggested_questions
from ragline.server.deps import ContainerDep, TenantDep, account_id_of, knowledge_base_of
from ragline.server.errors import ApiError, not_found, parse_body
from ragline.server.records import ChunkingConfigView, KnowledgeBaseView, SearchResultView
from ragline.server.routes.search import run_search
from ragline.server.routes.tags import tag_filter
from ragline.server.schemas.knowledge_bases import (
    ChunkingBody,
    EmbeddingModelBody,
    HybridSearchBody,
    KnowledgeBaseBody,
    KnowledgeBaseUpdateBody,
)
from ragline.server.views import Done, Envelope
from ragline.server.wire import log_ignored
from ragline.store.models import DocumentTotals, DuplicateName, KnowledgeBase, KnowledgeBaseSettings, Tenant

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1/knowledge-bases", tags=["knowledge bases"])


# Settings kept as sent and returned (WeKnora's names), beside those ragline acts on.
KEPT_SETTINGS = (
    "type",
    "is_temporary",
    "chunking_config",
    "image_processing_config",
    "vlm_config",
    "asr_config",
    "storage_backend_id",
    "cos_config",
    "faq_config",
    "question_generation_config",
    "auto_tag_config",
    "wiki_config",
    "extract_config",
    "vector_store_id",
)
# Taken from WeKnora's record and never acted on: the storage is the deployment's, the rest is read-only.
IGNORED_FIELDS = (
    "storage_provider_config",
    "storage_config",
    "id",
    "tenant_id",
    "creator_id",
    "creator_name",
    "is_pinned",
    "pinned_at",
    "created_at",
    "updated_at",
    "deleted_at",
    "knowledge_count",
    "chunk_count",
    "is_processing",
    "processing_count",
    "share_count",
    "capabilities",
)


def settings_of(
    sent: dict[str, Any], chunking: ChunkingBody | None, base: KnowledgeBaseSettings
) -> KnowledgeBaseSettings:
    """``base`` with what a client sent: its chunk size and overlap, and its other settings kept as sent."""
    client_config = {**base.client_config, **{k: v for k, v in sent.items() if v is not None}}
    update: dict[str, Any] = {"client_config": client_config}
    if chunking is not None:
        update["chunk_size"] = chunking.chunk_size or None
        update["chunk_overlap"] = chunking.chunk_overlap
    return base.model_copy(update=update)


def chunking_of(container: Container) -> ChunkingConfigView:
    """The deployment's chunking settings, which a knowledge base's own size and overlap replace."""
    ingestion = container.config.ingestion
    return ChunkingConfigView(
        chunk_size=ingestion.chunk_size,
        parent_chunk_size=ingestion.parent_chunk_size,
        child_chunk_size=ingestion.chunk_size,
    )


def storage_provider(container: Container) -> str:
    """Where this deployment keeps the files documents were made from (``local``, ``s3``)."""
    return container.originals.provider if container.originals is not None else "local"


def knowledge_base_view(container: Container, kb: KnowledgeBase, knowledge_count: int) -> KnowledgeBaseView:
    """The view of ``kb``, its documents counted whole (none to count when ``knowledge_count`` is 0)."""
    totals = container.knowledge.document_totals(kb.tenant_id, kb.id) if knowledge_count else DocumentTotals()
    return KnowledgeBaseView.of(
        kb,
        chunking_of(container),
        storage_provider=storage_provider(container),
        knowledge_count=totals.documents,
        chunk_count=totals.chunks,
        processing_count=totals.processing,
    )


@router.post("", status_code=201)
def create_knowledge_base(
    body: KnowledgeBaseBody, request: Request, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeBaseView]:
    """Create a knowledge base; its embedding model is chosen by its documents' language unless named."""
    log_ignored(body, IGNORED_FIELDS, "create knowledge base")
    sent = body.model_dump(include=set(KEPT_SETTINGS), exclude_unset=True)
    settings = settings_of(sent, body.chunking_config, KnowledgeBaseSettings(creator_id=account_id_of(request)))
    settings.summary_model_id = body.summary_model_id
    embedder = _embedding_model(container, body.embedding_model) if body.embedding_model else body.embedding_model_id
    if embedder and not container.models.has_embedder(embedder):
        logger.debug("create knowledge base: unknown embedding_model_id %r, chosen by language", embedder)
        embedder = ""
    strategy = body.indexing_strategy
    graph = (
        body.graph_extraction_enabled
        or bool((body.extract_config or {}).get("enabled"))
        or (strategy is not None and strategy.graph_enabled)
    )
    wiki = body.wiki_enabled or (strategy is not None and strategy.wiki_enabled)
    try:
        kb = container.knowledge.create_knowledge_base(
            tenant.id,
            body.name.strip(),
            embedder or container.models.default_embedder_id,
            body.description,
            wiki_enabled=wiki,
            graph_extraction_enabled=graph,
            embedding_model_auto=not embedder,
            settings=settings,
        )
    except DuplicateName:
        raise ApiError(409, "duplicate_name", f"a knowledge base named {body.name!r} exists", "name") from None
    return Envelope(data=knowledge_base_view(container, kb, 0))


def _embedding_model(container: Container, name: str) -> str:
    try:
        return resolve_embedding_model(name, container.models)
    except ValueError as exc:
        raise ApiError(422, "invalid_field", str(exc), "embedding_model") from None


@router.put("/{kb_id}/embedding-model")
def set_embedding_model(
    kb_id: str, body: EmbeddingModelBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeBaseView]:
    """Choose the knowledge base's embedding model.

    Its documents are re-embedded in the background (status ``pending`` with progress); keyword search answers meanwhile
    and vector search uses the vectors present.
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    model = _embedding_model(container, body.embedding_model)
    updated = container.ingest.change_embedding_model(kb, model)
    count = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    return Envelope(data=knowledge_base_view(container, updated, count))


def pinned_first(bases: list[KnowledgeBase]) -> list[KnowledgeBase]:
    """The pinned knowledge bases first, the last pinned first; then the others in the order they were made."""
    pinned = sorted((kb for kb in bases if kb.pinned_at), key=lambda kb: kb.pinned_at or "", reverse=True)
    return pinned + [kb for kb in bases if not kb.pinned_at]


def _views(container: Container, bases: list[KnowledgeBase]) -> list[KnowledgeBaseView]:
    counts = container.knowledge.document_counts([kb.id for kb in bases])
    return [knowledge_base_view(container, kb, counts.get(kb.id, 0)) for kb in bases]


@router.get("")
def list_knowledge_bases(
    tenant: TenantDep, container: ContainerDep, agent_id: Annotated[str, QueryParam(max_length=200)] = ""
) -> Envelope[list[KnowledgeBaseView]]:
    """The tenant's knowledge bases, pinned ones first.

    (``agent_id``, WeKnora's shared agents, is accepted and not acted on: ragline has no agents.)
    """
    if agent_id:
        logger.debug("list knowledge bases: ignoring agent_id")
    return Envelope(data=_views(container, pinned_first(container.knowledge.list_knowledge_bases(tenant.id))))


@router.put("/{kb_id}/pin")
def toggle_pin(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[KnowledgeBaseView]:
    """Pins the knowledge base to the top of the list, or unpins it when it is pinned (no body, as WeKnora)."""
    kb = knowledge_base_of(container, tenant, kb_id)
    updated = container.knowledge.update_knowledge_base(tenant.id, kb.id, pinned=kb.pinned_at is None)
    if updated is None:
        raise not_found("knowledge base", "kb_id")
    return Envelope(data=_views(container, [updated])[0])


class Duplicated(BaseModel):
    """A duplicate's reply: the source, the new knowledge base and a message."""

    source_id: str
    target_id: str
    message: str
    knowledge_base: KnowledgeBaseView


def copy_name(container: Container, tenant_id: str, name: str, suffix: str) -> str:
    """``name`` with ``suffix``, numbered from 2 when taken (WeKnora's naming of a copy)."""
    candidate, number = f"{name} {suffix}", 1
    while container.knowledge.knowledge_base_by_name(tenant_id, candidate) is not None:
        number += 1
        candidate = f"{name} {suffix} {number}"
    return candidate


@router.post("/{kb_id}/duplicate", status_code=201)
def duplicate_knowledge_base(
    kb_id: str, request: Request, tenant: TenantDep, container: ContainerDep
) -> Envelope[Duplicated]:
    """A new, empty knowledge base with the settings of this one.

    A new, empty knowledge base with the settings of this one (model, language, wiki and graph switches, description);
    named "<name> Copy" (or "<name> 副本" for ``Accept-Language: zh``), numbered when taken.
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    suffix = "副本" if request.headers.get("accept-language", "").lower().startswith("zh") else "Copy"
    for _ in range(5):  # a concurrent copy may take the name between the check and the write
        try:
            copy = container.knowledge.create_knowledge_base(
                tenant.id,
                copy_name(container, tenant.id, kb.name, suffix),
                kb.embedding_model,
                kb.description,
                wiki_enabled=kb.wiki_enabled,
                graph_extraction_enabled=kb.graph_extraction_enabled,
                embedding_model_auto=kb.embedding_model_auto,
                settings=kb.settings.model_copy(update={"creator_id": account_id_of(request)}),
            )
            break
        except DuplicateName:
            continue
    else:
        raise ApiError(409, "duplicate_name", "no free name for the copy", "kb_id")
    if kb.language:
        copy = (
            container.knowledge.set_embedding_model(tenant.id, copy.id, copy.embedding_model, language=kb.language)
            or copy
        )
    view = knowledge_base_view(container, copy, 0)
    return Envelope(
        data=Duplicated(
            source_id=kb.id, target_id=copy.id, message="Knowledge base duplicate created", knowledge_base=view
        )
    )


@router.get("/{kb_id}/move-targets")
def move_targets(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[list[KnowledgeBaseView]]:
    """The knowledge bases this one's documents can move to.

    The tenant's others with the same embedding model (their vectors are in the same space).
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    bases = [
        other
        for other in container.knowledge.list_knowledge_bases(tenant.id)
        if other.id != kb.id and other.embedding_model == kb.embedding_model
    ]
    return Envelope(data=_views(container, pinned_first(bases)))


class SuggestedQuestion(BaseModel):
    """A suggested first question, with the document (and section) it is about."""

    question: str
    knowledge_id: str
    knowledge_title: str
    heading: str


@router.get("/{kb_id}/suggested-questions")
def suggested_questions_of(
    kb_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    limit: Annotated[int, QueryParam(ge=1, le=20)] = 4,
) -> Envelope[list[SuggestedQuestion]]:
    """Questions to start a session with, from the documents' titles and section headings (no model)."""
    kb = knowledge_base_of(container, tenant, kb_id)
    found = suggested_questions(container.knowledge, tenant.id, kb.id, limit)
    return Envelope(data=[SuggestedQuestion(**vars(s)) for s in found])


@router.get("/{kb_id}")
def get_knowledge_base(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[KnowledgeBaseView]:
    """One knowledge base, with its document count."""
    kb = knowledge_base_of(container, tenant, kb_id)
    count = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    return Envelope(data=knowledge_base_view(container, kb, count))


DEFAULT_MATCH_COUNT = 10


def _retrievers(body: HybridSearchBody) -> Literal["hybrid", "vector", "keyword"]:
    if body.disable_keywords_match and body.disable_vector_match:
        raise ApiError(
            422,
            "invalid_field",
            "disable_keywords_match and disable_vector_match cannot both be true",
            "disable_vector_match",
        )
    if body.disable_keywords_match:
        return "vector"
    return "keyword" if body.disable_vector_match else "hybrid"


_HYBRID_SEARCH_BODY = {
    "requestBody": {"content": {"application/json": {"schema": HybridSearchBody.model_json_schema()}}, "required": True}
}


@router.post("/{kb_id}/hybrid-search", openapi_extra=_HYBRID_SEARCH_BODY)
async def hybrid_search(
    kb_id: str, request: Request, tenant: TenantDep, container: ContainerDep
) -> Envelope[list[SearchResultView]]:
    """Search within one knowledge base (or ``knowledge_base_ids``) through the chat pipeline's search path."""
    return Envelope(data=await _hybrid_search(kb_id, request, tenant, container))


@router.get("/{kb_id}/hybrid-search", openapi_extra=_HYBRID_SEARCH_BODY)
async def hybrid_search_get(
    kb_id: str, request: Request, tenant: TenantDep, container: ContainerDep
) -> Envelope[list[SearchResultView]]:
    """The same search with the JSON body on a GET, as WeKnora's older clients send it."""
    return Envelope(data=await _hybrid_search(kb_id, request, tenant, container))


async def _hybrid_search(kb_id: str, request: Request, tenant: Tenant, container: Container) -> list[SearchResultView]:
    body = parse_body(HybridSearchBody, await request.body())
    log_ignored(body, ("only_recommended", "skip_context_enrichment"), "hybrid search")
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, kb_id)
    kb_ids = body.knowledge_base_ids or [kb.id]
    search = SearchBody(
        query=body.query_text,
        knowledge_base_ids=kb_ids,
        knowledge_ids=body.knowledge_ids,
        tags=await asyncio.to_thread(tag_filter, container, tenant.id, kb_ids, body.tag_ids),
        top_k=body.match_count or DEFAULT_MATCH_COUNT,
        retrievers=_retrievers(body),
        vector_threshold=body.vector_threshold,
        keyword_threshold=body.keyword_threshold,
    )
    return await run_search(container, tenant.id, search)


@router.put("/{kb_id}")
def update_knowledge_base(
    kb_id: str, body: KnowledgeBaseUpdateBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeBaseView]:
    """Rename, re-describe or re-configure a knowledge base; a name the tenant already uses is refused (409).

    A new chunk size or overlap applies to documents uploaded (or parsed again) after it.
    """
    current = knowledge_base_of(container, tenant, kb_id)
    settings = None
    if body.config is not None:
        sent = body.config.model_dump(exclude={"indexing_strategy"}, exclude_unset=True)
        settings = settings_of(sent, body.config.chunking_config, current.settings)
        if body.config.indexing_strategy is not None:
            # Switching the wiki boost or graph extraction on or off is not served by an update (ragline's are set
            # when the knowledge base is made): the strategy is kept, the record keeps saying what is in force.
            log_ignored(body.config, ("indexing_strategy",), "update knowledge base")
    try:
        kb = container.knowledge.update_knowledge_base(
            tenant.id, kb_id, name=body.name.strip(), description=body.description, settings=settings
        )
    except DuplicateName:
        raise ApiError(409, "duplicate_name", f"a knowledge base named {body.name!r} exists", "name") from None
    if kb is None:
        raise not_found("knowledge base", "kb_id")
    count = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    return Envelope(data=knowledge_base_view(container, kb, count))


@router.delete("/{kb_id}")
def delete_knowledge_base(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """The knowledge base, its documents, chunks, index entries and graph."""
    knowledge_base_of(container, tenant, kb_id)
    if not container.removal.delete_knowledge_base(tenant.id, kb_id):
        raise not_found("knowledge base", "kb_id")
    return Done(message="Knowledge base deleted successfully")


class DeletedCount(BaseModel):
    """How many documents were deleted."""

    deleted_count: int


class Cleared(Done):
    """A clear's reply: how many documents went."""

    data: DeletedCount


@router.delete("/{kb_id}/knowledge")
def clear_knowledge_base(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Cleared:
    """Every document of the knowledge base deleted, the knowledge base kept (done before the reply; WeKnora queues it)."""
    knowledge_base_of(container, tenant, kb_id)
    deleted = container.removal.clear_knowledge_base(tenant.id, kb_id)
    message = "Knowledge base contents cleared" if deleted else "Knowledge base is already empty"
    return Cleared(message=message, data=DeletedCount(deleted_count=deleted))
