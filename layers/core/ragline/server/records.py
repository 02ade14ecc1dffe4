"""Stored records as the API shows them.

WeKnora's fields (so its clients decode them) and ragline's own fields beside them (so ragline's page and CLI keep what
they read). Tenant ids are numbers here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.runtime.search import SearchHit, search_hit
from ragline.server.wire import match_type_code, string_map, tenant_number, wire_references
from ragline.store.models import Chunk, Document, KnowledgeBase, Message, Session
from ragline.types import SearchResult

# A document's ingestion status (ragline's names) as WeKnora's parse_status.
_PARSE_STATUS = {"pending": "processing", "indexed": "completed", "failed": "failed"}
# WeKnora's chunk status: 2 is "indexed" (stored and searchable).
CHUNK_STATUS_INDEXED = 2


class ChunkingConfigView(BaseModel):
    """A knowledge base's chunking as WeKnora shows it.

    The size and overlap ragline cuts with (the knowledge base's own, else the deployment's), and whatever else of
    WeKnora's chunking settings the client sent (``strategy``, ``parser_engine_rules``, …), returned as sent.
    """

    model_config = ConfigDict(extra="allow")
    chunk_size: int
    chunk_overlap: int = 0
    separators: list[str] = Field(default_factory=list)
    enable_parent_child: bool = True
    parent_chunk_size: int
    child_chunk_size: int


class IndexingStrategyView(BaseModel):
    """Which indexes a knowledge base has (WeKnora's ``indexing_strategy``): ragline always keeps both searches."""

    vector_enabled: bool = True
    keyword_enabled: bool = True
    wiki_enabled: bool = False
    graph_enabled: bool = False


class CapabilitiesView(BaseModel):
    """What a knowledge base can be searched with (WeKnora's computed ``capabilities``)."""

    vector: bool = True
    keyword: bool = True
    wiki: bool = False
    graph: bool = False
    faq: bool = False


class StorageProviderView(BaseModel):
    """Where a knowledge base's files are kept: the deployment's store (``local`` embedded, ``s3`` on AWS)."""

    provider: str


class KnowledgeBaseView(BaseModel):
    """A knowledge base as the API shows it: WeKnora's record with ragline's fields beside it."""

    id: str
    name: str
    description: str
    type: Literal["document", "faq"] = "document"
    is_temporary: bool = False
    tenant_id: int
    creator_id: str = ""
    chunking_config: ChunkingConfigView
    image_processing_config: dict[str, Any] = Field(default_factory=lambda: {"model_id": ""})
    embedding_model_id: str
    summary_model_id: str = ""
    vlm_config: dict[str, Any] = Field(default_factory=lambda: {"enabled": False, "model_id": ""})
    asr_config: dict[str, Any] = Field(default_factory=lambda: {"enabled": False, "model_id": ""})
    storage_provider_config: StorageProviderView
    storage_config: StorageProviderView
    extract_config: dict[str, Any] | None = None
    faq_config: dict[str, Any] | None = None
    question_generation_config: dict[str, Any] | None = None
    auto_tag_config: dict[str, Any] | None = None
    wiki_config: dict[str, Any] | None = None
    indexing_strategy: IndexingStrategyView
    capabilities: CapabilitiesView
    is_pinned: bool = False
    pinned_at: str | None = None
    knowledge_count: int
    chunk_count: int
    processing_count: int = 0
    is_processing: bool = False
    share_count: int = 0
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    # ragline's own fields.
    document_count: int
    embedding_model: str
    wiki_enabled: bool
    graph_extraction_enabled: bool
    # The language mix detected in its documents (en, zh, mixed), and whether that picks the model.
    language: str = ""
    embedding_model_auto: bool = False

    @classmethod
    def of(
        cls,
        kb: KnowledgeBase,
        chunking: ChunkingConfigView,
        *,
        storage_provider: str,
        knowledge_count: int,
        chunk_count: int = 0,
        processing_count: int = 0,
    ) -> KnowledgeBaseView:
        """The view of ``kb`` with the deployment's chunking and storage, and its document counts.

        The knowledge base's own chunk size and overlap replace the deployment's; the settings a client sent that
        ragline keeps without acting on come back as sent.
        """
        settings = kb.settings
        sent: dict[str, Any] = settings.client_config
        sent_chunking = sent.get("chunking_config") or {}
        chunking = chunking.model_copy(
            update={
                **{k: v for k, v in sent_chunking.items() if k not in ChunkingConfigView.model_fields},
                "chunk_size": settings.chunk_size or chunking.chunk_size,
                "child_chunk_size": settings.chunk_size or chunking.child_chunk_size,
                "chunk_overlap": settings.chunk_overlap,
                "separators": sent_chunking.get("separators") or chunking.separators,
            }
        )
        storage = StorageProviderView(provider=storage_provider)
        kb_type = "faq" if sent.get("type") == "faq" else "document"
        extract = sent.get("extract_config")
        if kb.graph_extraction_enabled:
            extract = {**(extract or {}), "enabled": True}
        optional = {
            key: sent[key]
            for key in ("image_processing_config", "vlm_config", "asr_config")
            if isinstance(sent.get(key), dict)
        }
        return cls(
            id=kb.id,
            name=kb.name,
            description=kb.description,
            type=kb_type,
            is_temporary=bool(sent.get("is_temporary", False)),
            tenant_id=tenant_number(kb.tenant_id),
            creator_id=settings.creator_id,
            chunking_config=chunking,
            embedding_model_id=kb.embedding_model,
            summary_model_id=settings.summary_model_id,
            storage_provider_config=storage,
            storage_config=storage,
            extract_config=extract,
            faq_config=sent.get("faq_config"),
            question_generation_config=sent.get("question_generation_config"),
            auto_tag_config=sent.get("auto_tag_config"),
            wiki_config=sent.get("wiki_config"),
            indexing_strategy=IndexingStrategyView(
                wiki_enabled=kb.wiki_enabled, graph_enabled=kb.graph_extraction_enabled
            ),
            capabilities=CapabilitiesView(
                wiki=kb.wiki_enabled, graph=kb.graph_extraction_enabled, faq=kb_type == "faq"
            ),
            is_pinned=kb.pinned_at is not None,
            pinned_at=kb.pinned_at,
            knowledge_count=knowledge_count,
            chunk_count=chunk_count,
            processing_count=processing_count,
            is_processing=processing_count > 0,
            created_at=kb.created_at,
            updated_at=str(getattr(kb, "updated_at", "") or kb.created_at),
            document_count=knowledge_count,
            embedding_model=kb.embedding_model,
            wiki_enabled=kb.wiki_enabled,
            graph_extraction_enabled=kb.graph_extraction_enabled,
            language=kb.language,
            embedding_model_auto=kb.embedding_model_auto,
            **optional,
        )


def knowledge_type(document: Document) -> Literal["file", "url", "manual"]:
    """WeKnora's kind of a document: fetched from a URL, uploaded as a file, or written by hand."""
    if document.source.startswith(("http://", "https://")):
        return "url"
    return "file" if document.filename else "manual"


class KnowledgeView(BaseModel):
    """A document (WeKnora: a "knowledge")."""

    id: str
    tenant_id: int
    knowledge_base_id: str
    type: Literal["file", "url", "manual"]
    title: str
    description: str
    source: str
    channel: str = ""
    tag_id: str = ""
    # Enrichment (generated questions, summary, KB description): none | pending | processing | completed | failed.
    summary_status: str = "none"
    parse_status: Literal["pending", "processing", "completed", "failed"]
    enable_status: Literal["enabled", "disabled"]
    embedding_model_id: str = ""
    file_name: str
    folder_path: str = ""
    file_type: str
    file_size: int = 0
    file_hash: str
    file_path: str = ""
    storage_size: int = 0
    metadata: dict[str, Any] | None = None
    created_at: str
    updated_at: str
    processed_at: str | None = None
    error_message: str = ""
    deleted_at: str | None = None
    # ragline's own fields.
    filename: str
    chunk_count: int
    tags: list[str]
    enabled: bool
    duplicate: bool = False
    # Ingestion: pending (keyword-searchable, vectors being computed) → indexed | failed (reason).
    status: Literal["pending", "indexed", "failed"] = "indexed"
    reason: str = ""
    embedded_count: int = 0
    size_bytes: int = 0
    pages: int = 0
    embedding_model: str = ""

    @classmethod
    def of(cls, document: Document, *, duplicate: bool = False) -> KnowledgeView:
        """The view of ``document``; ``duplicate`` when the upload matched a stored document."""
        status = str(getattr(document, "status", "indexed"))
        parse_status = _PARSE_STATUS.get(status, "completed")
        updated_at = str(getattr(document, "updated_at", "") or document.created_at)
        return cls(
            id=document.id,
            tenant_id=tenant_number(document.tenant_id),
            knowledge_base_id=document.knowledge_base_id,
            type=knowledge_type(document),
            title=document.title,
            description=document.description,
            source=document.source,
            tag_id=document.tags[0] if document.tags else "",
            parse_status=parse_status,
            summary_status=str(getattr(document, "summary_status", "none")),
            enable_status="enabled" if document.enabled else "disabled",
            embedding_model_id=str(getattr(document, "embedding_model", "") or ""),
            file_name=document.filename,
            file_type=document.file_type,
            file_size=int(getattr(document, "size_bytes", 0) or 0),
            file_hash=document.content_hash,
            created_at=document.created_at,
            updated_at=updated_at,
            processed_at=updated_at if parse_status == "completed" else None,
            error_message=str(getattr(document, "reason", "") or ""),
            filename=document.filename,
            chunk_count=document.chunk_count,
            tags=document.tags,
            enabled=document.enabled,
            duplicate=duplicate,
            status=document.status.value,
            reason=document.reason,
            embedded_count=document.embedded_count,
            size_bytes=document.size_bytes,
            pages=document.pages,
            embedding_model=document.embedding_model,
        )


class ChunkView(BaseModel):
    """A chunk as the API shows it, in WeKnora's shape."""

    id: str
    tenant_id: int
    knowledge_id: str
    knowledge_base_id: str
    tag_id: str = ""
    content: str
    chunk_index: int
    is_enabled: bool
    status: int = CHUNK_STATUS_INDEXED
    start_at: int
    end_at: int
    pre_chunk_id: str
    next_chunk_id: str
    chunk_type: str
    parent_chunk_id: str
    relation_chunks: list[str] | None = None
    indirect_relation_chunks: list[str] | None = None
    metadata: dict[str, Any]
    content_hash: str = ""
    image_info: str = ""
    created_at: str = ""
    updated_at: str = ""
    deleted_at: str | None = None
    # ragline's own fields.
    header: str
    searchable: bool
    enabled: bool

    @classmethod
    def of(cls, chunk: Chunk) -> ChunkView:
        """The view of ``chunk``."""
        return cls(
            id=chunk.id,
            tenant_id=tenant_number(chunk.tenant_id),
            knowledge_id=chunk.knowledge_id,
            knowledge_base_id=chunk.knowledge_base_id,
            content=chunk.content,
            chunk_index=chunk.chunk_index,
            is_enabled=chunk.enabled,
            start_at=chunk.start_at,
            end_at=chunk.end_at,
            pre_chunk_id=chunk.pre_chunk_id,
            next_chunk_id=chunk.next_chunk_id,
            chunk_type=chunk.chunk_type,
            parent_chunk_id=chunk.parent_chunk_id,
            metadata=dict(chunk.metadata),
            image_info=str(chunk.metadata.get("image_info", "") or ""),
            header=chunk.header,
            searchable=chunk.searchable,
            enabled=chunk.enabled,
        )


class SessionView(BaseModel):
    """A session as the API shows it, in WeKnora's shape with ragline's fields."""

    id: str
    title: str
    description: str
    tenant_id: int
    user_id: str = ""
    is_pinned: bool = False
    pinned_at: str | None = None
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    # ragline's own fields.
    knowledge_base_ids: list[str]
    options: dict[str, Any]
    # The title is the first question's words until the generated one replaces it.
    title_provisional: bool = False
    # A session found by a search of its messages: the words around the match ("" when its title matched).
    matched_content: str | None = None

    @classmethod
    def of(cls, session: Session, matched_content: str | None = None) -> SessionView:
        """The view of ``session``; ``matched_content`` when a search matched one of its messages."""
        return cls(
            title_provisional=session.title_provisional,
            matched_content=matched_content,
            id=session.id,
            title=session.title,
            description=session.description,
            tenant_id=tenant_number(session.tenant_id),
            is_pinned=session.pinned_at is not None,
            pinned_at=session.pinned_at,
            created_at=session.created_at,
            updated_at=session.updated_at,
            knowledge_base_ids=session.knowledge_base_ids,
            options=session.options,
        )


class MessageView(BaseModel):
    """A message as the API shows it, in WeKnora's shape with ragline's fields."""

    id: str
    session_id: str
    request_id: str
    content: str
    role: str
    knowledge_references: list[dict[str, Any]]
    agent_steps: list[dict[str, Any]] = Field(default_factory=list)
    is_completed: bool
    is_fallback: bool = False
    channel: str = ""
    mentioned_items: list[dict[str, Any]] = Field(default_factory=list)
    images: list[dict[str, Any]] = Field(default_factory=list)
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    # ragline's own fields: why the answer ended early ("stopped", "error", "" when it completed).
    stop_reason: str
    # The reader's rating of an answer ("up", "down", "") and comment.
    feedback: str = ""
    feedback_comment: str = ""
    # The first answer of the alternatives (regenerated or edited turns) this message's turn belongs to.
    alternative_of: str = ""

    @classmethod
    def of(cls, message: Message) -> MessageView:
        """The view of ``message``, its references in WeKnora's shape."""
        return cls(
            id=message.id,
            session_id=message.session_id,
            request_id=message.request_id,
            content=message.content,
            role=message.role,
            knowledge_references=wire_references(message.knowledge_references) or [],
            is_completed=message.is_completed,
            created_at=message.created_at,
            updated_at=message.updated_at,
            stop_reason=message.stop_reason,
            feedback=message.feedback,
            feedback_comment=message.feedback_comment,
            alternative_of=message.alternative_of,
            images=[dict(image) for image in message.images],
        )


class SearchResultView(SearchHit):
    """A ranked passage.

    WeKnora's ``SearchResult`` (integer ``match_type``, ``seq`` the rank from 1) and ragline's scores.
    """

    match_type: int  # type: ignore[assignment]
    seq: int
    start_at: int
    end_at: int
    image_info: str
    metadata: dict[str, str]
    knowledge_filename: str
    knowledge_source: str
    knowledge_channel: str = ""
    parent_chunk_id: str
    sub_chunk_id: list[str]

    @classmethod
    def of(cls, result: SearchResult, rank: int) -> SearchResultView:
        """The view of a result ranked ``rank`` (from 1)."""
        return cls(
            **search_hit(result).model_dump(exclude={"match_type"}),
            match_type=match_type_code(result.match_type),
            seq=rank,
            start_at=result.start_at,
            end_at=result.end_at,
            # The chunk's own image_info (an image passage's picture) where retrieval left the result's empty.
            image_info=result.image_info or str(result.chunk_metadata.get("image_info", "") or ""),
            metadata=string_map(result.metadata),
            knowledge_filename=result.knowledge_filename,
            knowledge_source=result.knowledge_source,
            parent_chunk_id=result.parent_chunk_id,
            sub_chunk_id=result.sub_chunk_id,
        )
