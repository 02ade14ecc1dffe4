"""ENTITY_SEARCH: passages reached through the knowledge graph, beside chunk search.

Run by CHUNK_SEARCH_PARALLEL as its entity branch, on a clone of the turn (never registered on its own in
the default chain). For the names QUERY_UNDERSTAND extracted, it finds matching nodes in the knowledge
bases that have a graph (``state.entity_kb_ids``); the passages of those nodes and of their relations are
loaded by id and kept only when:
- their knowledge base is in the request's scope (and, for a target narrowed to documents or tags, their
  document is one of those);
- the passage is still enabled and searchable (a parent chunk is context, never a hit);
- their document still exists and is enabled: the graph is derived data and may lag a deletion.

At most ``max_hits`` (30) passages, in node order (exact name matches first), each with score 0 and
match type ``graph``: graph hits have no retrieval score, the rerank model scores them. The nodes and
edges found are written to ``state.graph_result`` as a small JSON-serialisable summary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ragline.graph.store import GraphHit, GraphStore
from ragline.pipeline.chunk_search import resolve_targets, target_documents
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.store.base import KnowledgeStore
from ragline.store.models import Chunk, Document
from ragline.types import ChatManage, EventType, MatchType, SearchResult

logger = logging.getLogger(__name__)

STAGE = EventType.ENTITY_SEARCH.value
# The reference design's cap on graph hits per turn.
MAX_GRAPH_HITS = 30
# Nodes asked of the graph store; each may point to several passages.
MAX_GRAPH_NODES = 30
# Passages loaded before filtering: enough that filtered-out ones rarely leave the cap unfilled.
CANDIDATE_FACTOR = 4
# graph_result travels in the turn's state (a Step Functions payload in AWS): it stays small.
MAX_GRAPH_EDGES = 100
MAX_GRAPH_DESCRIPTION_CHARS = 200
GRAPH_SCORE = 0.0
# Metadata key naming the node that led to a passage (for traces and debugging).
GRAPH_ENTITY_METADATA = "graph_entity"

# knowledge base id → the documents a narrowed target allows, or None for the whole knowledge base.
Scope = dict[str, frozenset[str] | None]


@dataclass
class _Documents:
    """Documents by id, each loaded once per search; None for a document that does not exist."""

    knowledge: KnowledgeStore
    tenant_id: str
    loaded: dict[str, Document | None] = field(default_factory=dict)

    def get(self, document_id: str) -> Document | None:
        if document_id not in self.loaded:
            self.loaded[document_id] = self.knowledge.document(self.tenant_id, document_id)
        return self.loaded[document_id]


def _in_scope(scope: Scope, knowledge_base_id: str, knowledge_id: str) -> bool:
    if knowledge_base_id not in scope:
        return False
    documents = scope[knowledge_base_id]
    return documents is None or knowledge_id in documents


def _usable(document: Document | None, knowledge_base_id: str) -> bool:
    return document is not None and document.enabled and document.knowledge_base_id == knowledge_base_id


def _candidate_chunk_ids(hits: list[GraphHit]) -> Iterator[tuple[str, GraphHit]]:
    """Passages of each node first, then those of its relations; node order kept."""
    for hit in hits:
        for chunk_id in hit.chunk_ids:
            yield chunk_id, hit
        for related in hit.related:
            for chunk_id in related.chunk_ids:
                yield chunk_id, hit


def to_search_result(chunk: Chunk, document: Document, entity: str) -> SearchResult:
    """A graph hit as every later stage reads a search result: score 0 until rerank scores it."""
    return SearchResult(
        id=chunk.id,
        content=chunk.content,
        knowledge_id=chunk.knowledge_id,
        knowledge_base_id=chunk.knowledge_base_id,
        knowledge_title=document.title,
        knowledge_filename=document.filename,
        knowledge_description=document.description,
        header=chunk.header,
        chunk_index=chunk.chunk_index,
        chunk_type=chunk.chunk_type,
        parent_chunk_id=chunk.parent_chunk_id,
        pre_chunk_id=chunk.pre_chunk_id,
        next_chunk_id=chunk.next_chunk_id,
        start_at=chunk.start_at,
        end_at=chunk.end_at,
        score=GRAPH_SCORE,
        match_type=MatchType.GRAPH,
        chunk_metadata=dict(chunk.metadata),
        metadata={GRAPH_ENTITY_METADATA: entity},
    )


def graph_summary(hits: list[GraphHit]) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}``: names, types, short descriptions and where each node lives."""
    nodes = [
        {
            "name": hit.name,
            "type": hit.type,
            "description": hit.description[:MAX_GRAPH_DESCRIPTION_CHARS],
            "knowledge_base_id": hit.knowledge_base_id,
            "knowledge_id": hit.knowledge_id,
        }
        for hit in hits
    ]
    edges: list[dict[str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for hit in hits:
        for related in hit.related:
            source, target = (hit.name, related.name) if related.outgoing else (related.name, hit.name)
            key = (source, target, related.relation)
            if key in seen:
                continue
            seen.add(key)
            edges.append({"source": source, "target": target, "relation": related.relation})
            if len(edges) == MAX_GRAPH_EDGES:
                return {"nodes": nodes, "edges": edges}
    return {"nodes": nodes, "edges": edges}


class PluginSearchEntity:
    """Graph hits for ``state.entity``; writes ``state.search_result`` and ``state.graph_result``."""

    def __init__(
        self,
        store: GraphStore,
        knowledge: KnowledgeStore,
        max_hits: int = MAX_GRAPH_HITS,
        max_nodes: int = MAX_GRAPH_NODES,
    ) -> None:
        """An entity search over ``store``, loading documents from ``knowledge``; ``max_hits`` and ``max_nodes`` bound it."""
        self._store = store
        self._knowledge = knowledge
        self._max_hits = max_hits
        self._max_nodes = max_nodes

    def activation_events(self) -> list[EventType]:
        """Runs at ENTITY_SEARCH."""
        return [EventType.ENTITY_SEARCH]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Without entities the state is left as it is.

        With entities, ``search_result`` is replaced by the graph hits (this runs on the parallel stage's own clone)
        even when there are none, and a failing graph store only means no graph hits: chunk search answers alone.
        """
        if not cm.state.entity:
            return await next()
        try:
            results, graph = await asyncio.to_thread(self.search, cm)
        except Exception:
            logger.warning("entity search failed; no graph hits", exc_info=True, extra={"stage": STAGE})
            results, graph = [], {}
        cm.state.search_result = results
        cm.state.graph_result = graph
        return await next()

    def search(self, cm: ChatManage) -> tuple[list[SearchResult], dict[str, Any]]:
        """The graph hits of the turn and the graph summary (blocking: store calls)."""
        scope = self.scope(cm)
        kb_ids = [kb_id for kb_id in dict.fromkeys(cm.state.entity_kb_ids) if kb_id in scope]
        if not kb_ids:
            return [], {}
        hits = self._store.search_nodes(kb_ids, cm.state.entity, self._max_nodes)
        documents = _Documents(self._knowledge, cm.request.tenant_id)
        hits = [
            hit
            for hit in hits
            if _in_scope(scope, hit.knowledge_base_id, hit.knowledge_id)
            and _usable(documents.get(hit.knowledge_id), hit.knowledge_base_id)
        ]
        results = self._results(cm, hits, scope, documents)
        logger.info(
            "entity search: %d nodes, %d passages",
            len(hits),
            len(results),
            extra={"stage": STAGE, "session_id": cm.request.session_id},
        )
        return results, graph_summary(hits) if hits else {}

    def scope(self, cm: ChatManage) -> Scope:
        """What chunk search may read, per knowledge base: whole, or narrowed to documents (and tags)."""
        scope: dict[str, set[str] | None] = {}
        for target in resolve_targets(cm, self._knowledge):
            kb_id = target.knowledge_base_id
            if not target.is_constrained:
                scope[kb_id] = None
                continue
            allowed = target_documents(self._knowledge, cm.request.tenant_id, target)
            current = scope.setdefault(kb_id, set())
            if current is not None:
                current.update(allowed)
        return {kb_id: None if docs is None else frozenset(docs) for kb_id, docs in scope.items()}

    def _results(self, cm: ChatManage, hits: list[GraphHit], scope: Scope, documents: _Documents) -> list[SearchResult]:
        entity_of: dict[str, str] = {}
        for chunk_id, hit in _candidate_chunk_ids(hits):
            entity_of.setdefault(chunk_id, hit.name)
            if len(entity_of) == self._max_hits * CANDIDATE_FACTOR:
                break
        # Loaded with the caller's tenant: another tenant's passage reads as absent.
        loaded = {c.id: c for c in self._knowledge.chunks(cm.request.tenant_id, list(entity_of))}
        results: list[SearchResult] = []
        for chunk in (loaded[i] for i in entity_of if i in loaded):
            if not (chunk.enabled and chunk.searchable):
                continue
            if not _in_scope(scope, chunk.knowledge_base_id, chunk.knowledge_id):
                continue
            document = documents.get(chunk.knowledge_id)
            if document is None or not _usable(document, chunk.knowledge_base_id):
                continue
            results.append(to_search_result(chunk, document, entity_of[chunk.id]))
            if len(results) == self._max_hits:
                break
        return results
