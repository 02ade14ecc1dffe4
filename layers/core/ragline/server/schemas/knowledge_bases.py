"""The request bodies of the knowledge-base routes: a knowledge base, its settings, its model and its search."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragline.runtime.turns import Query
from ragline.server.schemas.fields import MAX_DESCRIPTION_CHARS, MAX_TAGS, Separators, Threshold
from ragline.types.text import Identifier, IdList, PlainName, PlainText

# A setting WeKnora sends and ragline keeps as sent.
Config = dict[str, Any] | None
# A chunk's size in characters, when a knowledge base chooses its own (WeKnora's web app offers 100-4000).
MIN_CHUNK_SIZE = 50
MAX_CHUNK_SIZE = 8192


class ChunkingBody(BaseModel):
    """WeKnora's ``chunking_config``: size and overlap are honoured, the rest is kept and returned as sent."""

    model_config = ConfigDict(extra="allow")
    # Characters; 0 (what WeKnora's Go client sends when unset): the deployment's size.
    chunk_size: int = Field(default=0, ge=0, le=MAX_CHUNK_SIZE)
    chunk_overlap: int = Field(default=0, ge=0, le=MAX_CHUNK_SIZE)
    separators: Separators | None = None

    @model_validator(mode="after")
    def _sizes(self) -> ChunkingBody:
        if 0 < self.chunk_size < MIN_CHUNK_SIZE:
            raise ValueError(f"chunk_size must be 0 (the deployment's) or at least {MIN_CHUNK_SIZE}")
        if self.chunk_overlap and self.chunk_overlap >= (self.chunk_size or MIN_CHUNK_SIZE):
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return self


class IndexingStrategyBody(BaseModel):
    """WeKnora's ``indexing_strategy``: the wiki and graph switches act; vector and keyword search are always kept."""

    model_config = ConfigDict(extra="forbid")
    vector_enabled: bool = True
    keyword_enabled: bool = True
    wiki_enabled: bool = False
    graph_enabled: bool = False


class KnowledgeBaseBody(BaseModel):
    """WeKnora's knowledge base and ragline's switches.

    Everything WeKnora's web app and Go client send (the Go client sends the whole object back, read-only fields
    included). ragline acts on the name, description, embedding model, chunk size and overlap, and the wiki and graph
    switches; it keeps the other settings (``summary_model_id``, ``wiki_config``, ``vlm_config``, …) and returns them.
    """

    model_config = ConfigDict(extra="forbid")
    name: PlainName = Field(min_length=1, max_length=200)
    description: PlainText = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    wiki_enabled: bool = False
    graph_extraction_enabled: bool = False
    embedding_model_id: str = Field(default="", max_length=200)
    # ragline's choice of model (an id, or minilm / e5; unknown: 422). Neither this nor a known
    # embedding_model_id: the documents' language picks it (MiniLM for English, e5 for Chinese or mixed).
    embedding_model: str | None = Field(default=None, max_length=200)
    # Graph extraction is on when ``extract_config.enabled`` (or ``indexing_strategy.graph_enabled``) is.
    extract_config: Config = None
    indexing_strategy: IndexingStrategyBody | None = None
    chunking_config: ChunkingBody | None = None
    summary_model_id: str = Field(default="", max_length=200)
    # Kept and returned as sent: ragline parses, stores and searches the same way whatever they say.
    type: Literal["document", "faq", ""] = "document"
    is_temporary: bool = False
    image_processing_config: Config = None
    vlm_config: Config = None
    asr_config: Config = None
    storage_provider_config: Config = None
    storage_config: Config = None
    storage_backend_id: str | None = Field(default=None, max_length=200)
    cos_config: Config = None
    faq_config: Config = None
    question_generation_config: Config = None
    auto_tag_config: Config = None
    wiki_config: Config = None
    vector_store_id: Identifier | None = None
    # Read-only fields of the object WeKnora's Go client sends back: never taken from a request.
    id: Identifier = ""
    tenant_id: int | Identifier | None = None
    creator_id: Identifier | None = None
    creator_name: str | None = Field(default=None, max_length=500)
    is_pinned: bool = False
    pinned_at: Identifier | None = None
    created_at: Identifier | None = None
    updated_at: Identifier | None = None
    deleted_at: Identifier | None = None
    knowledge_count: int = 0
    chunk_count: int = 0
    is_processing: bool = False
    processing_count: int = 0
    share_count: int = 0
    capabilities: Config = None


class EmbeddingModelBody(BaseModel):
    """The embedding model to switch a knowledge base to."""

    model_config = ConfigDict(extra="forbid")
    embedding_model: str = Field(min_length=1, max_length=200)


class HybridSearchBody(BaseModel):
    """WeKnora's ``SearchParams``."""

    model_config = ConfigDict(extra="forbid")
    query_text: Query
    vector_threshold: Threshold | None = None
    keyword_threshold: Threshold | None = None
    match_count: int | None = Field(default=None, ge=0, le=200)
    disable_keywords_match: bool = False
    disable_vector_match: bool = False
    knowledge_ids: IdList | None = None
    tag_ids: list[Identifier] | None = Field(default=None, max_length=MAX_TAGS)
    knowledge_base_ids: IdList | None = None
    # Accepted and not acted on.
    only_recommended: bool = False
    skip_context_enrichment: bool = False


class KnowledgeBaseConfigBody(BaseModel):
    """WeKnora's update ``config``: chunk size and overlap act on later uploads; the rest is kept as sent."""

    model_config = ConfigDict(extra="forbid")
    chunking_config: ChunkingBody | None = None
    image_processing_config: Config = None
    faq_config: Config = None
    wiki_config: Config = None
    auto_tag_config: Config = None
    indexing_strategy: IndexingStrategyBody | None = None


class KnowledgeBaseUpdateBody(BaseModel):
    """WeKnora's update: a name, a description and a ``config``."""

    model_config = ConfigDict(extra="forbid")
    name: PlainName = Field(min_length=1, max_length=200)
    description: PlainText | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    config: KnowledgeBaseConfigBody | None = None
