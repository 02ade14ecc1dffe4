"""Ingestion service: a document's text becomes chunks, vectors and index entries in one transaction."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragline.config import IngestionConfig
from ragline.ingest.chunker import plan_chunks
from ragline.ingest.extract import SUPPORTED_SUFFIXES as TEXT_SUPPORTED_SUFFIXES
from ragline.ingest.extract import Extracted, UnsupportedFile, extract
from ragline.models.base import Embedder
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.ids import new_id
from ragline.store.models import Chunk, Document, FAQEntry, KnowledgeBase
from ragline.tables.parse import TABLE_SUFFIXES, is_table_file
from ragline.types import ChunkType

if TYPE_CHECKING:  # the table ingestor builds on this module
    from ragline.tables.ingest import TableIngestor

SUPPORTED_SUFFIXES = TEXT_SUPPORTED_SUFFIXES | TABLE_SUFFIXES

__all__ = ["SUPPORTED_SUFFIXES", "DocumentInput", "IngestResult", "IngestService", "UnsupportedFile"]


@dataclass
class DocumentInput:
    content: str
    title: str = ""
    filename: str = ""
    file_type: str = "markdown"
    source: str = ""
    description: str = ""
    page_starts: list[int] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    # "wiki_page" for pre-synthesised wiki pages, which rerank prefers over raw chunks.
    chunk_type: str = ChunkType.TEXT


@dataclass
class _Prepared:
    document: Document
    parents: list[Chunk]
    children: list[Chunk]
    position: int


@dataclass
class IngestResult:
    document: Document
    chunk_count: int
    duplicate: bool = False


def _page_metadata(item: DocumentInput, offset: int) -> dict[str, object]:
    page = Extracted("", "text", page_starts=item.page_starts).page_of(offset)
    return {"page": page} if page is not None else {}


def embedding_text(title: str, header: str, content: str) -> str:
    """What the embedding model reads: the passage with the title and section it belongs to."""
    return "\n".join(part for part in (title, header, content) if part)


def embed_passages(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts`` in one call; an empty (0, dimensions) matrix when there are none."""
    if not texts:
        return np.zeros((0, embedder.dimensions), dtype=np.float32)
    return embedder.embed_documents(list(texts))


def store_document(
    knowledge: KnowledgeStore,
    engine: RetrieveEngine,
    kb: KnowledgeBase,
    document: Document,
    chunks: Sequence[Chunk],
    indexed: Sequence[Chunk],
    vectors: np.ndarray,
) -> IngestResult:
    """Writes a document with its ``chunks`` and indexes ``indexed`` (with their ``vectors``) in one scope:
    where the backend can, neither is stored without the other."""
    with knowledge.atomic():
        knowledge.insert_document(document, chunks)
        engine.index_chunks(kb.id, kb.embedding_model, indexed, vectors, document=document)
    document.chunk_count = len(indexed)
    return IngestResult(document, len(indexed))


class IngestService:
    def __init__(
        self,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        models: ModelRegistry,
        config: IngestionConfig,
        tables: TableIngestor | None = None,
    ) -> None:
        self._tables = tables
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
        item = DocumentInput(
            content=content, title=title, filename=filename, file_type=file_type, source=source, description=description
        )
        return self.ingest_many(kb, [item], progress=progress)[0]

    def ingest_many(
        self,
        kb: KnowledgeBase,
        items: Sequence[DocumentInput],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[IngestResult]:
        """Several documents with one embedding pass over all their chunks: batches sorted by length fill
        better across documents than within one, which is what makes bulk loads fast."""
        results: list[IngestResult | None] = []
        prepared: list[_Prepared] = []
        seen_hashes: dict[str, int] = {}
        for item in items:
            content_hash = hashlib.sha256(item.content.encode("utf-8")).hexdigest()
            existing = self._knowledge.documents_by_hash(kb.tenant_id, kb.id, content_hash)
            if existing is not None:
                results.append(IngestResult(existing, existing.chunk_count, duplicate=True))
            elif content_hash in seen_hashes:
                results.append(None)  # a duplicate within this batch: resolved once the first is stored
            else:
                seen_hashes[content_hash] = len(results)
                results.append(None)
                prepared.append(self._prepare(kb, item, content_hash, position=len(results) - 1))
        embedder = self._models.embedder(kb.embedding_model)
        texts = [embedding_text(p.document.title, c.header, c.content) for p in prepared for c in p.children]
        batch = max(1, self._config.embed_batch_size) * 8
        vectors = []
        for start in range(0, len(texts), batch):
            vectors.append(embedder.embed_documents(texts[start : start + batch]))
            if progress is not None:
                progress(min(start + batch, len(texts)), len(texts))
        matrix = np.vstack(vectors) if vectors else np.zeros((0, embedder.dimensions), dtype=np.float32)
        offset = 0
        for item_prepared in prepared:
            count = len(item_prepared.children)
            results[item_prepared.position] = store_document(
                self._knowledge,
                self._engine,
                kb,
                item_prepared.document,
                [*item_prepared.parents, *item_prepared.children],
                item_prepared.children,
                matrix[offset : offset + count],
            )
            offset += count
        for index, item in enumerate(items):
            if results[index] is None:
                first = results[seen_hashes[hashlib.sha256(item.content.encode("utf-8")).hexdigest()]]
                assert first is not None
                results[index] = IngestResult(first.document, first.chunk_count, duplicate=True)
        return [r for r in results if r is not None]

    def _prepare(self, kb: KnowledgeBase, item: DocumentInput, content_hash: str, position: int) -> _Prepared:
        content = item.content
        fallback_title = item.title or (Path(item.filename).stem if item.filename else "") or "Untitled"
        plan = plan_chunks(
            content,
            markdown=item.file_type == "markdown",
            chunk_size=self._config.chunk_size,
            min_size=self._config.chunk_min_size,
            parent_size=self._config.parent_chunk_size,
            fallback_title=fallback_title,
        )
        document = Document(
            id=new_id(),
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=item.title or plan.title,
            filename=item.filename,
            file_type=item.file_type,
            description=item.description,
            source=item.source,
            content_hash=content_hash,
            tags=list(dict.fromkeys(t.strip() for t in item.tags if t.strip())),
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
                chunk_type=item.chunk_type,
                content=content[span.start : span.end],
                header=span.header,
                parent_chunk_id=parents[span.parent].id if span.parent is not None else "",
                start_at=span.start,
                end_at=span.end,
                metadata=_page_metadata(item, span.start),
            )
            for i, span in enumerate(plan.children)
        ]
        for previous, following in itertools.pairwise(children):
            previous.next_chunk_id = following.id
            following.pre_chunk_id = previous.id
        return _Prepared(document, parents, children, position)

    def ingest_file(
        self, kb: KnowledgeBase, path: Path, progress: Callable[[int, int], None] | None = None
    ) -> IngestResult:
        return self.ingest_bytes(kb, path.name, path.read_bytes(), source=str(path), progress=progress)

    def ingest_bytes(
        self,
        kb: KnowledgeBase,
        filename: str,
        raw: bytes,
        *,
        title: str = "",
        source: str = "",
        tags: Sequence[str] = (),
        chunk_type: str = ChunkType.TEXT,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """An uploaded file: text extracted by its type (PDF pages are remembered per chunk); tables
        (CSV, TSV, Excel) become table documents (the first sheet's result is returned)."""
        if self._tables is not None and is_table_file(filename):
            return self._tables.ingest_table(kb, filename, raw, title=title, source=source, tags=tags)[0]
        extracted = extract(filename, raw)
        if not extracted.text.strip():
            raise UnsupportedFile("the file has no text")
        item = DocumentInput(
            content=extracted.text,
            title=title or extracted.title,
            filename=filename,
            file_type=extracted.file_type,
            source=source,
            page_starts=extracted.page_starts,
            tags=list(tags),
            chunk_type=chunk_type,
        )
        return self.ingest_many(kb, [item], progress=progress)[0]

    def ingest_faq(
        self,
        kb: KnowledgeBase,
        entries: Sequence[FAQEntry],
        *,
        title: str = "FAQ",
        source: str = "",
        tags: Sequence[str] = (),
    ) -> IngestResult:
        """FAQ entries as one document, one ``faq`` chunk per entry.

        The vector of an entry is its questions only (standard and similar): a user's question is compared
        with questions, not with answers. Keyword search reads questions and answers. Negative questions
        are kept with the entry; search drops the entry when the query matches one exactly.
        """
        payload = json.dumps([e.model_dump() for e in entries], ensure_ascii=False, sort_keys=True)
        content_hash = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        existing = self._knowledge.documents_by_hash(kb.tenant_id, kb.id, content_hash)
        if existing is not None:
            return IngestResult(existing, existing.chunk_count, duplicate=True)
        document = Document(
            id=new_id(),
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=title,
            file_type="faq",
            source=source,
            content_hash=content_hash,
            tags=list(tags),
        )
        chunks = [
            Chunk(
                id=new_id(),
                tenant_id=kb.tenant_id,
                knowledge_base_id=kb.id,
                knowledge_id=document.id,
                chunk_index=i,
                chunk_type=ChunkType.FAQ,
                content="\n".join([entry.standard_question, *entry.similar_questions, *entry.answers]),
                metadata=entry.model_dump(),
            )
            for i, entry in enumerate(entries)
        ]
        embedder = self._models.embedder(kb.embedding_model)
        matrix = embed_passages(embedder, ["\n".join([e.standard_question, *e.similar_questions]) for e in entries])
        return store_document(self._knowledge, self._engine, kb, document, chunks, chunks, matrix)
