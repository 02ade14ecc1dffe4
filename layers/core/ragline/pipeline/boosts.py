"""CHUNK_RERANK's inner links: boosts that call ``next()`` first and post-process the ranking.

Registration order is PluginRerank → PluginWikiBoost → PluginMemoryAffinity, so MemoryAffinity (innermost)
post-processes first and WikiBoost last. A boost never fails the stage: a failing lookup is logged and the
ranking passes on unboosted.

Both boost the list the next stage reads: ``rerank_result``, or ``search_result`` when rerank kept the
retrieval results (no model, model unavailable or failing). The seed boosts ``rerank_result`` only, which
with no rerank model — the embedded default — would switch both boosts off entirely.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ragline.pipeline.plugin import NextFn, PluginError
from ragline.reranking.boosts import apply_memory_affinity, apply_wiki_boost
from ragline.reranking.citations import CitationHistory
from ragline.reranking.config import MemoryAffinityConfig, RerankConfig
from ragline.types import ChatManage, ChunkType, EventType, PipelineRequest, SearchResult

logger = logging.getLogger(__name__)

STAGE = EventType.CHUNK_RERANK.value


def ranked_results(cm: ChatManage) -> list[SearchResult]:
    """The list the stages after rerank will read."""
    return cm.state.rerank_result or cm.state.search_result


def target_knowledge_bases(request: PipelineRequest) -> list[str]:
    ids = [*request.knowledge_base_ids, *(target.knowledge_base_id for target in request.search_targets)]
    return list(dict.fromkeys(kb_id for kb_id in ids if kb_id))


class PluginWikiBoost:
    """Wiki pages are pre-synthesised and cross-referenced by an LLM: prefer them over raw chunks.

    ``wiki_enabled(kb_id)`` says whether a knowledge base has its wiki on. A ``wiki_page`` result is boosted
    when its own knowledge base has (search only returns results from the request's targets); a result
    that does not name its knowledge base is boosted when any target has.
    """

    def __init__(self, wiki_enabled: Callable[[str], bool], config: RerankConfig | None = None) -> None:
        self._wiki_enabled = wiki_enabled
        self._factor = (config if config is not None else RerankConfig()).wiki_boost

    def activation_events(self) -> list[EventType]:
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        error = await next()
        if error is not None:
            return error
        try:
            boosted = self.boost(cm)
        except Exception as exc:
            logger.warning("wiki boost skipped: %s", exc, extra={"stage": STAGE})
            return None
        if boosted:
            logger.info("wiki boost ×%.2f on %d wiki pages", self._factor, boosted, extra={"stage": STAGE})
        return None

    def boost(self, cm: ChatManage) -> int:
        """Boost and re-sort; returns how many results were boosted."""
        results = ranked_results(cm)
        if not any(r.chunk_type == ChunkType.WIKI_PAGE for r in results):
            # No wiki page: no knowledge-base lookups on ordinary turns.
            return 0
        enabled: dict[str, bool] = {}

        def is_enabled(kb_id: str) -> bool:
            if kb_id not in enabled:
                enabled[kb_id] = bool(self._wiki_enabled(kb_id))
            return enabled[kb_id]

        targets = target_knowledge_bases(cm.request)

        def is_boosted(result: SearchResult) -> bool:
            if result.knowledge_base_id:
                return is_enabled(result.knowledge_base_id)
            return any(is_enabled(kb_id) for kb_id in targets)

        return apply_wiki_boost(results, is_boosted, self._factor)


class PluginMemoryAffinity:
    """Prefers documents this caller's past answers keep drawing on; a tie-breaker between comparable
    passages (×1.15 at most), never a reason for an irrelevant document to rank first."""

    def __init__(self, history: CitationHistory, config: MemoryAffinityConfig | None = None) -> None:
        self._history = history
        self._config = config if config is not None else MemoryAffinityConfig()

    def activation_events(self) -> list[EventType]:
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        error = await next()
        if error is not None:
            return error
        try:
            boosted = await self.boost(cm)
        except Exception as exc:
            logger.warning("memory affinity skipped: %s", exc, extra={"stage": STAGE})
            return None
        if boosted:
            logger.info("memory affinity boosted %d results", boosted, extra={"stage": STAGE})
        return None

    async def boost(self, cm: ChatManage) -> int:
        """Boost and re-sort; returns how many results were boosted."""
        results = ranked_results(cm)
        if not any(r.knowledge_id for r in results):
            return 0
        request = cm.request
        hits = await asyncio.to_thread(
            self._history.cited_documents, request.tenant_id, request.user_id, self._config.max_doc_ids
        )
        if not hits:
            return 0
        return apply_memory_affinity(results, hits, self._config)
