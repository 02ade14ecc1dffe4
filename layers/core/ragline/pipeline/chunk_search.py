"""CHUNK_SEARCH: knowledge-base search over the request's targets.

Targets are grouped by embedding-model identity so each group needs one query vector. In a group, whole
knowledge bases go into one HybridSearch call; targets narrowed to documents or tags are searched one by
one, with recall thresholds off (the user chose the scope explicitly).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.pipeline.plugin import ERR_SEARCH, ERR_SEARCH_NOTHING, NextFn, PluginError
from ragline.pipeline.query_expansion import KEYWORD_THRESHOLD_FACTOR, MAX_CONCURRENCY, expansion_variants
from ragline.reads import read_off_loop
from ragline.retrieval.base import RetrieveEngine, RetrieveParams
from ragline.retrieval.config import RetrievalConfig
from ragline.retrieval.hybrid import hybrid_search
from ragline.store.base import KnowledgeStore
from ragline.store.models import KnowledgeBase
from ragline.text.segmentation import normalize_content
from ragline.types import ChatManage, ChunkType, EventType, SearchResult, SearchTarget, SearchTargetType

logger = logging.getLogger(__name__)

# The expansion variants' searches, shared by every request (a pool per request cost a thread start per
# variant; most requests have one variant).
# Deeper searches when negative questions ruled FAQ entries out (the reference's maxIterations).
FAQ_SEARCH_ROUNDS = 5

_VARIANT_THREADS = ThreadPoolExecutor(max_workers=MAX_CONCURRENCY, thread_name_prefix="query-expansion")


class TargetGroup(BaseModel):
    """Targets that share one embedding model, hence one query vector."""

    embedding_model: str
    whole_bases: list[str] = Field(default_factory=list)
    constrained: list[SearchTarget] = Field(default_factory=list)


def resolve_targets(cm: ChatManage, knowledge_store: KnowledgeStore) -> list[SearchTarget]:
    """Explicit targets, else whole knowledge bases plus documents narrowed to their knowledge base."""
    request = cm.request
    if request.search_targets:
        return list(request.search_targets)
    targets = [SearchTarget(knowledge_base_id=kb_id) for kb_id in request.knowledge_base_ids]
    if request.knowledge_ids:
        by_kb: dict[str, list[str]] = {}
        for knowledge_id in request.knowledge_ids:
            document = knowledge_store.document(request.tenant_id, knowledge_id)
            if document is not None:
                by_kb.setdefault(document.knowledge_base_id, []).append(knowledge_id)
        targets.extend(
            SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id=kb_id, knowledge_ids=tuple(ids))
            for kb_id, ids in by_kb.items()
        )
    return targets


def group_targets(targets: list[SearchTarget], bases: dict[str, KnowledgeBase]) -> list[TargetGroup]:
    """Group by embedding model, preserving first-seen order; unknown knowledge bases are dropped."""
    groups: dict[str, TargetGroup] = {}
    for target in targets:
        kb = bases.get(target.knowledge_base_id)
        if kb is None:
            continue
        group = groups.setdefault(kb.embedding_model, TargetGroup(embedding_model=kb.embedding_model))
        if target.is_constrained:
            group.constrained.append(target)
        elif target.knowledge_base_id not in group.whole_bases:
            group.whole_bases.append(target.knowledge_base_id)
    return list(groups.values())


def target_documents(knowledge: KnowledgeStore, tenant_id: str, target: SearchTarget) -> list[str]:
    """The documents a narrowed target allows: its documents, and (or) those carrying its tags."""
    ids = list(target.knowledge_ids)
    if target.tag_ids:
        tagged = set(knowledge.document_ids_with_tags(tenant_id, target.knowledge_base_id, list(target.tag_ids)))
        ids = [i for i in ids if i in tagged] if ids else sorted(tagged)
    return ids


class PluginSearch:
    """The CHUNK_SEARCH stage: hybrid search of the request's targets, one group per embedding model."""

    def __init__(
        self,
        knowledge_store: KnowledgeStore,
        engine: RetrieveEngine,
        models: ModelRegistry,
        config: RetrievalConfig,
    ) -> None:
        """A search stage over ``engine``, resolving targets through ``knowledge_store`` and queries through ``models``."""
        self._knowledge = knowledge_store
        self._engine = engine
        self._models = models
        self._config = config

    def activation_events(self) -> list[EventType]:
        """Runs at CHUNK_SEARCH."""
        return [EventType.CHUNK_SEARCH]

    def plan_groups(self, cm: ChatManage) -> list[TargetGroup]:
        """The request's targets, authorised for the caller's tenant, grouped by embedding model."""
        targets = resolve_targets(cm, self._knowledge)
        if not targets:
            return []
        # Authorisation: only the caller's own knowledge bases are searched.
        bases = {
            kb.id: kb
            for kb in self._knowledge.knowledge_bases(cm.request.tenant_id, [t.knowledge_base_id for t in targets])
        }
        return group_targets(targets, bases)

    async def search_group(self, cm: ChatManage, group: TargetGroup) -> list[SearchResult]:
        """One group's hits; raises when the group's engine fails or exceeds the group timeout."""
        return await asyncio.wait_for(
            read_off_loop(self._search_group, cm, group), timeout=self._config.group_timeout_s
        )

    @staticmethod
    def conclude(cm: ChatManage, results: list[SearchResult], errors: list[str]) -> PluginError | None:
        """Store the groups' hits; a failure only counts when nothing was found at all."""
        results = _dedupe_by_id(results)
        cm.state.search_result = results
        cm.state.candidate_count = len(results)
        if errors and not results:
            return ERR_SEARCH.with_cause(errors[0])
        if not results:
            return ERR_SEARCH_NOTHING
        return None

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Search every group concurrently (bounded) and store their hits; a failure counts only when nothing was found."""
        if not cm.needs_retrieval():
            return await next()
        groups = self.plan_groups(cm)
        if not groups:
            return await next()
        semaphore = asyncio.Semaphore(self._config.group_concurrency)

        async def run_group(group: TargetGroup) -> list[SearchResult]:
            async with semaphore:
                return await self.search_group(cm, group)

        outcomes = await asyncio.gather(*(run_group(g) for g in groups), return_exceptions=True)
        results: list[SearchResult] = []
        errors: list[str] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                errors.append(f"{type(outcome).__name__}: {outcome}")
                logger.warning("search group failed: %s", outcome, extra={"stage": event_type.value})
            else:
                results.extend(outcome)
        error = self.conclude(cm, results, errors)
        if error is not None:
            return error
        return await next()

    def _search_group(self, cm: ChatManage, group: TargetGroup) -> list[SearchResult]:
        request = cm.request
        query = cm.search_query
        embedded: list[npt.NDArray[np.float32] | None] = []

        def embedding() -> npt.NDArray[np.float32] | None:
            """The query vector, computed once (while the first keyword search runs)."""
            if not embedded:
                embedded.append(self._query_embedding(group, query) if request.vector_search_enabled else None)
            return embedded[0]

        base = RetrieveParams(
            query=query,
            knowledge_base_ids=[],
            tenant_id=request.tenant_id,
            embedding_model=group.embedding_model,
            match_count=request.embedding_top_k,
            vector_threshold=request.vector_threshold,
            keyword_threshold=request.keyword_threshold,
            vector_enabled=request.vector_search_enabled,
            keyword_enabled=request.keyword_search_enabled,
        )
        results: list[SearchResult] = []
        asked = [request.query, query]
        deepen = request.faq_priority_enabled
        if group.whole_bases:
            base.knowledge_base_ids = list(group.whole_bases)
            results.extend(
                search_past_negative_faq(
                    lambda p: hybrid_search(self._engine, p, self._config, query_embedding=embedding),
                    base,
                    self._config,
                    asked,
                    deepen=deepen,
                )
            )
        for target in group.constrained:
            knowledge_ids = target_documents(self._knowledge, cm.request.tenant_id, target)
            if not knowledge_ids:
                continue  # the tags name no document: nothing in this scope
            scoped = RetrieveParams(
                query=query,
                knowledge_base_ids=[target.knowledge_base_id],
                tenant_id=request.tenant_id,
                query_embedding=embedding(),
                embedding_model=group.embedding_model,
                knowledge_ids=knowledge_ids,
                tag_ids=list(target.tag_ids),
                match_count=request.embedding_top_k,
                vector_threshold=0.0,
                keyword_threshold=0.0,
                vector_enabled=request.vector_search_enabled,
                keyword_enabled=request.keyword_search_enabled,
            )
            results.extend(
                search_past_negative_faq(
                    lambda p: hybrid_search(self._engine, p, self._config), scoped, self._config, asked, deepen=deepen
                )
            )
        if (
            request.enable_query_expansion
            and request.keyword_search_enabled
            and len(results) < max(1, request.embedding_top_k)
        ):
            results = self._expand(cm, group, results)
        return drop_negative_faq(results, asked)

    def _query_embedding(self, group: TargetGroup, query: str) -> npt.NDArray[np.float32] | None:
        try:
            return self._models.embedder(group.embedding_model).embed_query(query)
        except UnknownModel:
            # The knowledge base was indexed with a model this process does not have: keyword search still
            # answers, and a query vector from another model would compare nothing meaningful.
            logger.warning("embedding model %s unavailable; keyword search only", group.embedding_model)
            return None

    def _expand(self, cm: ChatManage, group: TargetGroup, first: list[SearchResult]) -> list[SearchResult]:
        """Keyword-only searches for the query's local variants, to fill a short first recall.

        New hits come after the first recall: their keyword-only scores are not on the fused scale, so they
        never outrank a hit the full query found (scores are capped at the first recall's lowest); a hit
        already found keeps its score.
        """
        request = cm.request
        variants = expansion_variants(cm.search_query)
        if not variants:
            return first
        params: list[RetrieveParams] = []
        for variant in variants:
            if group.whole_bases:
                params.append(self._keyword_params(cm, variant, list(group.whole_bases), []))
            for target in group.constrained:
                scope = target_documents(self._knowledge, cm.request.tenant_id, target)
                if scope:
                    params.append(self._keyword_params(cm, variant, [target.knowledge_base_id], scope))
        if not params:
            return first
        match_count = max(2 * request.embedding_top_k, 2 * request.rerank_top_k)
        for p in params:
            p.match_count = match_count
        if len(params) == 1:
            batches = [hybrid_search(self._engine, params[0], self._config)]
        else:
            batches = list(_VARIANT_THREADS.map(lambda p: hybrid_search(self._engine, p, self._config), params))
        known = {r.id for r in first}
        ceiling = min((r.score for r in first), default=None)
        extra: dict[str, SearchResult] = {}
        for hit in (h for batch in batches for h in batch):
            if hit.id in known or (hit.id in extra and extra[hit.id].score >= hit.score):
                continue
            extra[hit.id] = hit
        added = sorted(extra.values(), key=lambda r: (-r.score, r.id))
        if ceiling is not None:
            added = [
                r.model_copy(
                    update={"score": min(r.score, ceiling), "metadata": {**r.metadata, "query_expansion": "true"}}
                )
                for r in added
            ]
        else:
            added = [r.model_copy(update={"metadata": {**r.metadata, "query_expansion": "true"}}) for r in added]
        return [*first, *added]

    def _keyword_params(
        self, cm: ChatManage, variant: str, kb_ids: list[str], knowledge_ids: list[str]
    ) -> RetrieveParams:
        scoped = bool(knowledge_ids)
        return RetrieveParams(
            query=variant,
            knowledge_base_ids=kb_ids,
            tenant_id=cm.request.tenant_id,
            knowledge_ids=knowledge_ids,
            vector_enabled=False,
            keyword_enabled=True,
            keyword_threshold=0.0 if scoped else cm.request.keyword_threshold * KEYWORD_THRESHOLD_FACTOR,
        )


def search_past_negative_faq(
    search: Callable[[RetrieveParams], list[SearchResult]],
    params: RetrieveParams,
    config: RetrievalConfig,
    queries: list[str],
    *,
    deepen: bool,
) -> list[SearchResult]:
    """One group's hybrid search without the FAQ entries whose negative questions were asked.

    One group's hybrid search without the FAQ entries whose negative questions were asked — searched deeper when FAQ
    answers come first (``deepen``, FAQ priority on) and those entries left the list short: the reference's FAQ
    iteration. Each round asks for twice as many results as the one before (the first deeper one three times the count
    wanted), at most :data:`FAQ_SEARCH_ROUNDS` rounds and the pool cap; it stops once enough results are left, or when a
    round came back short (nothing deeper to find).
    """
    wanted = params.match_count if params.match_count > 0 else config.default_match_count
    depth = wanted
    found = search(params)
    kept = drop_negative_faq(found, queries)
    for _ in range(FAQ_SEARCH_ROUNDS):
        if not deepen or len(kept) >= wanted or len(found) < depth or depth >= config.max_pool_size:
            break
        depth = min(max(depth * 2, wanted * 3), config.max_pool_size)
        logger.info("FAQ entries ruled out by negative questions: searching %d deep", depth)
        found = search(replace(params, match_count=depth))
        kept = drop_negative_faq(found, queries)
    return kept[:wanted]


def drop_negative_faq(results: list[SearchResult], queries: list[str]) -> list[SearchResult]:
    """An FAQ entry never answers a question listed among its negative questions (exact, normalised)."""
    asked = {normalize_content(q) for q in queries if q}
    kept: list[SearchResult] = []
    for result in results:
        negatives = result.chunk_metadata.get("negative_questions") if result.chunk_type == ChunkType.FAQ else None
        if isinstance(negatives, list) and asked & {normalize_content(str(n)) for n in negatives}:
            continue
        kept.append(result)
    return kept


def _dedupe_by_id(results: list[SearchResult]) -> list[SearchResult]:
    best: dict[str, SearchResult] = {}
    for result in results:
        if result.id not in best or result.score > best[result.id].score:
            best[result.id] = result
    return sorted(best.values(), key=lambda r: (-r.score, r.id))
