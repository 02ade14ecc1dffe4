"""Ingestion service: a document's text becomes chunks, vectors and index entries in one transaction."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragline.config import IngestionConfig
from ragline.ingest.chunker import plan_chunks
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.ids import new_id
from ragline.store.models import Chunk, Document, KnowledgeBase
from ragline.types import ChunkType

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
TEXT_SUFFIXES = {".txt", ".text", ".rst", ".log", ".csv", ".tsv", ".json", ".yaml", ".yml"}
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES


class UnsupportedFile(ValueError):
    pass


@dataclass
class IngestResult:
    document: Document
    chunk_count: int
    duplicate: bool = False


def file_type_for(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in TEXT_SUFFIXES or not suffix:
        return "text"
    raise UnsupportedFile(f"unsupported file type {suffix!r}; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}")


def decode_text(raw: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            text = raw.decode(encoding)
            if "\x00" not in text:
                return text
        except UnicodeDecodeError:
            continue
    raise UnsupportedFile("file is not UTF-8 or UTF-16 text")


def embedding_text(title: str, header: str, content: str) -> str:
    """What the embedding model reads: the passage with the title and section it belongs to."""
    return "\n".join(part for part in (title, header, content) if part)


class IngestService:
    def __init__(
        self,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        models: ModelRegistry,
        config: IngestionConfig,
    ) -> None:
        self._knowledge = knowledge
        self._engine = engine
        self._models = models
        self._config = config

    def ingest_text(
        self,
        kb: KnowledgeBase,
        *,
        content: str,
        title: str = "",
        filename: str = "",
        file_type: str = "markdown",
        source: str = "",
        description: str = "",
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """Chunk, embed and index one document; the same content twice in a knowledge base is stored once."""
        content_hash = hashlib.sha256(content.encode("utf-8")).hexdigest()
        existing = self._knowledge.documents_by_hash(kb.tenant_id, kb.id, content_hash)
        if existing is not None:
            return IngestResult(existing, existing.chunk_count, duplicate=True)
        fallback_title = title or (Path(filename).stem if filename else "") or "Untitled"
        plan = plan_chunks(
            content,
            markdown=file_type == "markdown",
            chunk_size=self._config.chunk_size,
            min_size=self._config.chunk_min_size,
            parent_size=self._config.parent_chunk_size,
            fallback_title=fallback_title,
        )
        document = Document(
            id=new_id(),
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=title or plan.title,
            filename=filename,
            file_type=file_type,
            description=description,
            source=source,
            content_hash=content_hash,
        )
        parents = [
            Chunk(
                id=new_id(),
                tenant_id=kb.tenant_id,
                knowledge_base_id=kb.id,
                knowledge_id=document.id,
                chunk_index=i,
                chunk_type=ChunkType.PARENT_TEXT,
                content=content[span.start : span.end],
                header=span.header,
                start_at=span.start,
                end_at=span.end,
                searchable=False,
            )
            for i, span in enumerate(plan.parents)
        ]
        children = [
            Chunk(
                id=new_id(),
                tenant_id=kb.tenant_id,
                knowledge_base_id=kb.id,
                knowledge_id=document.id,
                chunk_index=i,
                chunk_type=ChunkType.TEXT,
                content=content[span.start : span.end],
                header=span.header,
                parent_chunk_id=parents[span.parent].id if span.parent is not None else "",
                start_at=span.start,
                end_at=span.end,
            )
            for i, span in enumerate(plan.children)
        ]
        for previous, following in itertools.pairwise(children):
            previous.next_chunk_id = following.id
            following.pre_chunk_id = previous.id

        embedder = self._models.embedder(kb.embedding_model)
        texts = [embedding_text(document.title, c.header, c.content) for c in children]
        batch = max(1, self._config.embed_batch_size) * 8
        vectors = []
        for start in range(0, len(texts), batch):
            vectors.append(embedder.embed_documents(texts[start : start + batch]))
            if progress is not None:
                progress(min(start + batch, len(texts)), len(texts))
        import numpy as np

        matrix = np.vstack(vectors) if vectors else np.zeros((0, embedder.dimensions), dtype=np.float32)
        with self._knowledge.atomic():
            self._knowledge.insert_document(document, [*parents, *children])
            self._engine.index_chunks(kb.id, kb.embedding_model, children, matrix, document=document)
        document.chunk_count = len(children)
        return IngestResult(document, len(children))

    def ingest_file(
        self, kb: KnowledgeBase, path: Path, progress: Callable[[int, int], None] | None = None
    ) -> IngestResult:
        file_type = file_type_for(path.name)
        return self.ingest_text(
            kb,
            content=decode_text(path.read_bytes()),
            filename=path.name,
            file_type=file_type,
            source=str(path),
            progress=progress,
        )
