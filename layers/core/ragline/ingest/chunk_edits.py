"""Editing one chunk in place: the record, then its index entries, embedded again from the new text."""

from __future__ import annotations

from ragline.ingest.indexing import embed_passages, embedding_text
from ragline.models.registry import ModelRegistry
from ragline.reranking.passages import GENERATED_QUESTIONS_KEY
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.models import Chunk, FAQEntry
from ragline.types import ChunkType


def chunk_embedding_text(chunk: Chunk, document_title: str) -> str:
    """What a chunk's vector is made from, as ingestion makes it.

    An FAQ entry's questions, or the document title, the heading and the passage.
    """
    if chunk.chunk_type == ChunkType.FAQ:
        entry = FAQEntry.model_validate(chunk.metadata)
        return "\n".join([entry.standard_question, *entry.similar_questions])
    return embedding_text(document_title, chunk.header, chunk.content)


class ChunkEditor:
    """Edits of stored chunks that keep the search index in step (a changed text gets a new vector)."""

    def __init__(self, knowledge: KnowledgeStore, engine: RetrieveEngine, models: ModelRegistry) -> None:
        """An editor writing to ``knowledge`` and ``engine``, embedding with ``models``."""
        self._knowledge = knowledge
        self._engine = engine
        self._models = models

    def update(
        self,
        tenant_id: str,
        chunk_id: str,
        *,
        content: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, object] | None = None,
    ) -> Chunk | None:
        """The chunk as it is now (None: not this tenant's); a searchable one is searched as it is now.

        New text drops the questions generated for the old one (the engine drops their vectors).
        """
        if content is not None and metadata is None:
            for current in self._knowledge.chunks(tenant_id, [chunk_id]):
                if GENERATED_QUESTIONS_KEY in current.metadata:
                    metadata = {k: v for k, v in current.metadata.items() if k != GENERATED_QUESTIONS_KEY}
        chunk = self._knowledge.update_chunk(tenant_id, chunk_id, content=content, enabled=enabled, metadata=metadata)
        if chunk is None or not chunk.searchable:
            return chunk
        kb = self._knowledge.knowledge_base(tenant_id, chunk.knowledge_base_id)
        document = self._knowledge.document(tenant_id, chunk.knowledge_id)
        if kb is None or document is None:
            return chunk
        vectors = embed_passages(
            self._models.embedder(kb.embedding_model), [chunk_embedding_text(chunk, document.title)]
        )
        self._engine.reindex_chunks(kb.id, kb.embedding_model, [chunk], vectors, document=document)
        return chunk
