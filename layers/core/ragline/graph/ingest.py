"""Graph extraction at ingestion: a stored document's passages become nodes and edges of its namespace.

Called after :class:`ragline.ingest.service.IngestService` has stored a document of a knowledge base with
graph extraction on. Each passage is extracted on its own (a bounded number at a time, so a long document
does not flood the model endpoint), and every entity and relation keeps the ids of the passages it came
from: entity search later returns those passages. The document's graph is written in one upsert.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ragline.graph.extract import GraphExtractor
from ragline.graph.store import Entity, GraphNamespace, GraphStore, Relation, group_entities, group_relations
from ragline.store.models import Chunk

logger = logging.getLogger(__name__)

# Extraction calls in flight per document.
MAX_CONCURRENT_EXTRACTIONS = 4


@dataclass(frozen=True)
class GraphIndexResult:
    """What a document contributed to the graph."""

    chunks: int
    entities: int
    relations: int


class GraphIndexer:
    """Extracts a document's graph and stores it under the document's namespace."""

    def __init__(
        self, extractor: GraphExtractor, store: GraphStore, concurrency: int = MAX_CONCURRENT_EXTRACTIONS
    ) -> None:
        """An indexer extracting with ``extractor`` into ``store``, at most ``concurrency`` passages at a time."""
        self._extractor = extractor
        self._store = store
        self._concurrency = max(1, concurrency)

    async def index_document(self, namespace: GraphNamespace, chunks: Sequence[Chunk]) -> GraphIndexResult:
        """Extract every searchable, enabled passage and upsert the union.

        Parent chunks are skipped: they repeat their children's text, and a hit must name the passage search would
        return.
        """
        passages = [c for c in chunks if c.searchable and c.enabled and c.content.strip()]
        semaphore = asyncio.Semaphore(self._concurrency)

        async def extract(chunk: Chunk) -> tuple[list[Entity], list[Relation]]:
            async with semaphore:
                entities, relations = await self._extractor.extract_graph(chunk.content)
            tagged = [e.model_copy(update={"chunk_ids": [chunk.id]}) for e in entities]
            return tagged, [r.model_copy(update={"chunk_ids": [chunk.id]}) for r in relations]

        outcomes = await asyncio.gather(*(extract(c) for c in passages))
        entities = group_entities([e for found, _ in outcomes for e in found])
        relations = group_relations([r for _, found in outcomes for r in found])
        if entities:
            await asyncio.to_thread(self._store.upsert, namespace, entities, relations)
        logger.info(
            "graph of document %s: %d entities, %d relations from %d passages",
            namespace.knowledge_id,
            len(entities),
            len(relations),
            len(passages),
            extra={"stage": "graph_extraction", "knowledge_base_id": namespace.knowledge_base_id},
        )
        return GraphIndexResult(chunks=len(passages), entities=len(entities), relations=len(relations))
