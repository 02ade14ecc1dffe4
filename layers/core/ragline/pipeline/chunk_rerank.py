"""CHUNK_RERANK (outermost link): rerank the search results, then let the boosts post-process.

Outcomes (the diagnostics' ``outcome``, logged once per turn and left in ``cm.context.extras``):

- ``no_candidates``: no search result, or none with text to score → search results kept, ``next()``;
- ``no_model``: the request names no rerank model and the registry has no default → search results kept,
  ``next()`` (see below for MMR);
- ``model_unavailable``: the named model cannot be built (unknown id, missing model directory) → search
  results kept as they were, ``next()``;
- ``model_error``: the call failed or timed out → search results kept as they were, ``next()``;
- ``ok`` / ``threshold_degraded`` / ``fallback_top1``: ``rerank_result`` holds the MMR-selected top-k
  copies with composite scores, ``next()``;
- ``all_below_threshold``: nothing relevant → ``search_nothing`` (the fallback answer), the boosts never run.

Decision on ``no_model``. The seed skips the stage, so ``rerank_result`` stays empty and the merge stage falls
back to ``search_result``; we keep that. But the embedded default ships no cross-encoder (MODELS.md), so that
path is the common one, and without MMR its context would be the top-k by retrieval score — often the same
paragraph from near-identical chunks. So ``search_result`` is replaced by its MMR selection over retrieval
scores (top-k, graph hits appended; no composite: there is no model score to blend), unless
``RerankConfig.diversify_without_model`` is off. Merge sorts by score and cuts to top-k anyway, so this only
changes which k survive. ``model_unavailable`` and ``model_error`` are failures of a configured model: the
seed's rule there is "fall back to the raw search results", and they stay raw.

The boosts (CHUNK_RERANK's inner links, below PluginRerank): they call ``next()`` first and post-process the
ranking. Registration order is PluginRerank → PluginWikiBoost → PluginMemoryAffinity, so MemoryAffinity
(innermost) post-processes first and WikiBoost last. A boost never fails the stage: a failing lookup is
logged and the ranking passes on unboosted. Both boost the list the next stage reads: ``rerank_result``, or
``search_result`` when rerank kept the retrieval results (no model, model unavailable or failing). The seed
boosts ``rerank_result`` only, which with no rerank model — the embedded default — would switch both boosts
off entirely.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ragline.models.registry import UnknownModel
from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, NextFn, PluginError
from ragline.reads import read_off_loop
from ragline.reranking.base import RerankModel
from ragline.reranking.boosts import apply_memory_affinity, apply_wiki_boost
from ragline.reranking.citations import CitationHistory
from ragline.reranking.config import MemoryAffinityConfig, RerankConfig
from ragline.reranking.registry import RerankModelRegistry
from ragline.reranking.rerank import RerankDiagnostics, RerankOptions, diversify, rerank_results
from ragline.reranking.scoring import RerankOutcome
from ragline.types import ChatManage, ChunkType, EventType, PipelineRequest, SearchResult

logger = logging.getLogger(__name__)

STAGE = EventType.CHUNK_RERANK.value
DIAGNOSTICS_KEY = "rerank_diagnostics"


def has_explicit_scope(request: PipelineRequest) -> bool:
    """The user narrowed the turn to documents or tags."""
    return bool(request.knowledge_ids) or any(target.is_constrained for target in request.search_targets)


def rerank_options(request: PipelineRequest) -> RerankOptions:
    """The request's rerank settings: threshold, top-k, whether the scope was explicit, and the FAQ boost."""
    return RerankOptions(
        threshold=request.rerank_threshold,
        top_k=max(1, request.rerank_top_k),
        explicit_scope=has_explicit_scope(request),
        faq_boost=request.faq_score_boost if request.faq_priority_enabled else None,
        vector_threshold=request.vector_threshold,
    )


class PluginRerank:
    """Score search results with the request's rerank model and select the top-k with MMR.

    Scores search results with the request's rerank model (``rerank_model_id``, else the registry's default) and selects
    the top-k with MMR. Does its work before ``next()``, so the boosts registered after it (WikiBoost, MemoryAffinity)
    post-process its result.
    """

    def __init__(self, models: RerankModelRegistry, config: RerankConfig | None = None) -> None:
        """A rerank stage choosing models from ``models``, tuned by ``config``."""
        self._models = models
        self._config = config if config is not None else RerankConfig()

    def activation_events(self) -> list[EventType]:
        """Runs at CHUNK_RERANK, first in its chain."""
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Rerank, then run the boosts after it; ``search_nothing`` when nothing is left to answer from."""
        if not cm.needs_retrieval():
            return await next()
        diagnostics = await self.rerank(cm)
        self._record(cm, diagnostics)
        if not diagnostics.outcome.keeps_retrieval_results and not cm.state.rerank_result:
            return ERR_SEARCH_NOTHING
        return await next()

    async def rerank(self, cm: ChatManage) -> RerankDiagnostics:
        """Write ``rerank_result`` (or, without a model, the diversified ``search_result``); return what happened."""
        state = cm.state
        options = rerank_options(cm.request)
        state.rerank_result = []
        base = RerankDiagnostics(
            outcome=RerankOutcome.NO_CANDIDATES,
            threshold=options.threshold,
            effective_threshold=options.threshold,
            input_count=len(state.search_result),
        )
        if not state.search_result:
            return base
        model_id = self._models.resolve_id(cm.request.rerank_model_id)
        if not model_id:
            if self._config.diversify_without_model:
                state.search_result = diversify(state.search_result, options.top_k, self._config)
            base.outcome = RerankOutcome.NO_MODEL
            base.result_count = len(state.search_result)
            return base
        base.model_id = model_id
        model = await self._model(model_id, base)
        if model is None:
            return base
        run = await rerank_results(model, cm.search_query, state.search_result, options, self._config)
        # Name the model as configuration does, not by the adapter's endpoint.
        run.diagnostics.model_id = model_id
        if not run.diagnostics.outcome.keeps_retrieval_results:
            state.rerank_result = run.results
        return run.diagnostics

    async def _model(self, model_id: str, diagnostics: RerankDiagnostics) -> RerankModel | None:
        try:
            # The first use builds the adapter (a local model loads its weights): off the event loop.
            return await asyncio.to_thread(self._models.get, model_id)
        except UnknownModel:
            diagnostics.error = f"unknown rerank model {model_id!r}"
        except Exception as exc:  # a factory that cannot build its model (missing files, bad config)
            diagnostics.error = f"{type(exc).__name__}: {exc}"
        diagnostics.outcome = RerankOutcome.MODEL_UNAVAILABLE
        return None

    @staticmethod
    def _record(cm: ChatManage, diagnostics: RerankDiagnostics) -> None:
        cm.context.extras[DIAGNOSTICS_KEY] = diagnostics
        level = logging.WARNING if diagnostics.error else logging.INFO
        logger.log(
            level,
            "rerank outcome=%s model=%s candidates=%d results=%d threshold=%.3f effective=%.3f top=%s%s",
            diagnostics.outcome.value,
            diagnostics.model_id or "-",
            diagnostics.candidate_count,
            diagnostics.result_count,
            diagnostics.threshold,
            diagnostics.effective_threshold,
            "-" if diagnostics.top_score is None else f"{diagnostics.top_score:.4f}",
            f" error={diagnostics.error}" if diagnostics.error else "",
            extra={"stage": STAGE, "outcome": diagnostics.outcome.value},
        )


def ranked_results(cm: ChatManage) -> list[SearchResult]:
    """The list the stages after rerank will read."""
    return cm.state.rerank_result or cm.state.search_result


def target_knowledge_bases(request: PipelineRequest) -> list[str]:
    """The knowledge bases the request searches, each once, in request order."""
    ids = [*request.knowledge_base_ids, *(target.knowledge_base_id for target in request.search_targets)]
    return list(dict.fromkeys(kb_id for kb_id in ids if kb_id))


class PluginWikiBoost:
    """Wiki pages are pre-synthesised and cross-referenced by an LLM: prefer them over raw chunks.

    ``wiki_enabled(kb_id)`` says whether a knowledge base has its wiki on. A ``wiki_page`` result is boosted
    when its own knowledge base has (search only returns results from the request's targets); a result
    that does not name its knowledge base is boosted when any target has.
    """

    def __init__(self, wiki_enabled: Callable[[str], bool], config: RerankConfig | None = None) -> None:
        """A boost of ``config.wiki_boost`` for wiki pages of knowledge bases where ``wiki_enabled`` says so."""
        self._wiki_enabled = wiki_enabled
        self._factor = (config if config is not None else RerankConfig()).wiki_boost

    def activation_events(self) -> list[EventType]:
        """Runs at CHUNK_RERANK, after rerank."""
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Boost the wiki pages of the rerank result once rerank has run; a failed boost leaves the result as it was."""
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
    """Prefers documents this caller's past answers keep drawing on.

    A tie-breaker between comparable passages (×1.15 at most), never a reason for an irrelevant document to rank first.
    """

    def __init__(self, history: CitationHistory, config: MemoryAffinityConfig | None = None) -> None:
        """A boost drawing on ``history``, tuned by ``config``."""
        self._history = history
        self._config = config if config is not None else MemoryAffinityConfig()

    def activation_events(self) -> list[EventType]:
        """Runs at CHUNK_RERANK, after rerank."""
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Boost the documents this caller's answers cite once rerank has run; a failed boost changes nothing."""
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
        hits = await read_off_loop(
            self._history.cited_documents, request.tenant_id, request.user_id, self._config.max_doc_ids
        )
        if not hits:
            return 0
        return apply_memory_affinity(results, hits, self._config)
