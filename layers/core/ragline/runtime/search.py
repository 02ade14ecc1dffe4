"""The knowledge-search API.

The same search → rerank → MMR → top-k path a chat turn takes, without generation, so search quality can be inspected
(and benchmarked) exactly as chat sees it.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.config import AppConfig
from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, EventManager, PluginError
from ragline.reads import read_off_loop
from ragline.runtime.turns import Query, UnknownKnowledgeBase, tag_targets
from ragline.store.base import KnowledgeStore
from ragline.types import ChatManage, EventType, PipelineRequest, SearchResult, SearchTarget, SearchTargetType
from ragline.types.text import Identifier, IdList

# The stages of a chat turn that decide which passages it sees, in order; absent ones are skipped.
SEARCH_STAGES = (EventType.CHUNK_SEARCH_PARALLEL, EventType.CHUNK_RERANK, EventType.FILTER_TOP_K)


class SearchBody(BaseModel):
    """The body of the knowledge-search API: a query, the knowledge bases (and optionally documents or tags) to search."""

    model_config = ConfigDict(extra="forbid")

    query: Query
    knowledge_base_ids: IdList = Field(min_length=1)
    knowledge_ids: IdList | None = None
    tags: list[Identifier] | None = Field(default=None, max_length=50)
    top_k: int = Field(default=10, ge=1, le=200)
    retrievers: Literal["hybrid", "vector", "keyword"] = "hybrid"
    vector_threshold: float | None = Field(default=None, ge=0, le=1)
    keyword_threshold: float | None = Field(default=None, ge=0, le=1)
    rerank_model_id: Identifier | None = None
    enable_query_expansion: bool | None = None


class SearchFailed(Exception):
    """The search pipeline failed; ``error`` is the stage's error."""

    def __init__(self, error: PluginError) -> None:
        """The failure carrying ``error``."""
        super().__init__(error.message)
        self.error = error


class SearchScores(BaseModel):
    """Every score that ranked a hit: retrieval (vector, keyword), rerank (base, model) and composite."""

    vector: float | None = None
    keyword: float | None = None
    base: float | None = None
    model: float | None = None
    composite: float | None = None


class SearchHit(BaseModel):
    """What a caller needs to judge a hit: the passage, its document and every score that ranked it."""

    id: str
    knowledge_id: str
    knowledge_base_id: str
    knowledge_title: str
    header: str
    chunk_index: int
    chunk_type: str
    content: str
    match_type: str
    score: float
    scores: SearchScores


def search_hit(result: SearchResult) -> SearchHit:
    """The API's view of a ranked result, with every score that ranked it."""
    metadata = result.metadata
    return SearchHit(
        id=result.id,
        knowledge_id=result.knowledge_id,
        knowledge_base_id=result.knowledge_base_id,
        knowledge_title=result.knowledge_title,
        header=result.header,
        chunk_index=result.chunk_index,
        chunk_type=result.chunk_type,
        content=result.content,
        match_type=result.match_type,
        score=result.score,
        scores=SearchScores(
            vector=result.vector_score,
            keyword=result.keyword_score,
            base=_number(metadata.get("base_score")),
            model=_number(metadata.get("model_score")),
            composite=_number(metadata.get("composite_score")),
        ),
    )


def result_view(result: SearchResult) -> dict[str, Any]:
    """A hit as a JSON-ready dict."""
    return search_hit(result).model_dump()


def _number(value: str | None) -> float | None:
    return float(value) if value not in (None, "") else None


class SearchService:
    """Runs the chat turn's search stages for the knowledge-search API."""

    def __init__(self, events: EventManager, knowledge: KnowledgeStore, config: AppConfig) -> None:
        """A search running ``events``' stages over ``knowledge``, with ``config``'s conversation settings."""
        self._events = events
        self._knowledge = knowledge
        self._config = config

    def request_for(self, tenant_id: str, body: SearchBody) -> PipelineRequest:
        """The pipeline request a search stands for: the chat turn's search settings at the body's depth."""
        conversation = self._config.conversation
        return PipelineRequest(
            query=body.query,
            request_id=str(uuid.uuid4()),
            session_id="",
            tenant_id=tenant_id,
            knowledge_base_ids=tuple(body.knowledge_base_ids),
            knowledge_ids=tuple(body.knowledge_ids or ()),
            search_targets=(
                tag_targets(body.knowledge_base_ids, body.tags or [], body.knowledge_ids or [])
                or self._document_targets(tenant_id, body)
            ),
            # Recall enough candidates for the requested depth: the chat default is the floor.
            embedding_top_k=max(body.top_k, conversation.embedding_top_k),
            rerank_top_k=body.top_k,
            rerank_threshold=conversation.rerank_threshold,
            rerank_model_id=body.rerank_model_id or "",
            vector_threshold=conversation.vector_threshold if body.vector_threshold is None else body.vector_threshold,
            keyword_threshold=(
                conversation.keyword_threshold if body.keyword_threshold is None else body.keyword_threshold
            ),
            faq_priority_enabled=conversation.faq_priority_enabled,
            faq_direct_answer_threshold=conversation.faq_direct_answer_threshold,
            faq_score_boost=conversation.faq_score_boost,
            vector_search_enabled=body.retrievers in ("hybrid", "vector"),
            keyword_search_enabled=body.retrievers in ("hybrid", "keyword"),
            enable_query_expansion=(
                conversation.enable_query_expansion
                if body.enable_query_expansion is None
                else body.enable_query_expansion
            ),
        )

    def _document_targets(self, tenant_id: str, body: SearchBody) -> tuple[SearchTarget, ...]:
        """``knowledge_ids`` narrow a search to those documents (of the knowledge bases named).

        A chat turn, by contrast, searches its knowledge bases and the documents named besides.
        """
        by_kb: dict[str, list[str]] = {}
        for knowledge_id in dict.fromkeys(body.knowledge_ids or ()):
            document = self._knowledge.document(tenant_id, knowledge_id)
            if document is None or document.knowledge_base_id not in body.knowledge_base_ids:
                raise UnknownKnowledgeBase("knowledge_ids", knowledge_id)
            by_kb.setdefault(document.knowledge_base_id, []).append(knowledge_id)
        return tuple(
            SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id=kb_id, knowledge_ids=tuple(ids))
            for kb_id, ids in by_kb.items()
        )

    async def search(self, tenant_id: str, body: SearchBody) -> list[SearchResult]:
        """The ranked results for ``body``; :class:`UnknownKnowledgeBase` for a knowledge base not the tenant's."""
        bases = await read_off_loop(self._knowledge.knowledge_bases, tenant_id, body.knowledge_base_ids)
        found = {kb.id for kb in bases}
        for kb_id in body.knowledge_base_ids:
            if kb_id not in found:
                raise UnknownKnowledgeBase("knowledge_base_ids", kb_id)
        cm = ChatManage.start(self.request_for(tenant_id, body))
        for stage in SEARCH_STAGES:
            if not self._events.has(stage):
                continue
            error = await self._events.trigger(stage, cm)
            if error is not None:
                if error.error_type == ERR_SEARCH_NOTHING.error_type:
                    return []
                raise SearchFailed(error)
        return cm.final_results()[: body.top_k]
