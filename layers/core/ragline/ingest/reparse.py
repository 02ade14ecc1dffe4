"""Stored documents made again: parsed again, or re-indexed after a retitle.

A document is parsed again from its original (or a manual document's new text); a retitled one has its keyword
entries and vectors written again. The third part of ingestion beside accepting (:mod:`ragline.ingest.service`) and indexing
(:mod:`ragline.ingest.indexing`): it prepares the new chunks as an upload's are (:meth:`IngestService.prepare`),
replaces the old ones under the same document id, and hands the document to the same scheduler for its vectors.
"""

from __future__ import annotations

from ragline.files.reading import UnsupportedFile
from ragline.ingest.images import DocumentImage, save_images
from ragline.ingest.indexing import index_keywords_now, searchable_in_order
from ragline.ingest.service import DocumentInput, IngestResult, IngestService, NoOriginal, StillIndexing
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.models import Document, DocumentStatus
from ragline.store.originals import OriginalStore
from ragline.tables.parse import is_table_file
from ragline.types import ChunkType

__all__ = ["Reparser"]


class Reparser:
    """Parses stored documents again and re-indexes retitled ones, through the accepting service's steps."""

    def __init__(
        self,
        accept: IngestService,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        originals: OriginalStore | None = None,
    ) -> None:
        """``accept`` prepares chunks and schedules vectors as for an upload; ``originals`` holds what was received."""
        self._accept = accept
        self._knowledge = knowledge
        self._engine = engine
        self._originals = originals

    def reindex(self, document: Document) -> Document:
        """Write a retitled document's keyword entries again and queue its vectors; the document as stored.

        A stored document whose title or description changed: its keyword entries written again at once (the title is
        searched with every chunk, and shown with every hit), then its vectors computed again by the scheduler (the
        title is embedded with every passage): ``pending`` until they are all in. Returns the document as stored.
        """
        chunks = searchable_in_order(self._knowledge.chunks_of_document(document.tenant_id, document.id))
        if not chunks:
            return document
        index_keywords_now(self._engine, document.knowledge_base_id, chunks, document)
        updated = self._knowledge.set_document_status(
            document.tenant_id, document.id, DocumentStatus.PENDING, embedded_count=0
        )
        if updated is None:
            return document
        self._accept.schedule([IngestResult(updated, updated.chunk_count)])
        return self._knowledge.document(document.tenant_id, document.id) or updated

    def reparse(self, document: Document, *, content: str | None = None, title: str | None = None) -> Document:
        """Parse a stored document again from its original (or new text), replacing its chunks under the same id.

        Parses a stored document again from its original — or from ``content``, a manual document's new text, which
        becomes its original — with today's extraction and chunking: its chunks are replaced under the same id (its
        creation time, tags and enabled state kept), keyword-searchable again on return and ``pending`` until the
        scheduler has computed the new vectors. Raises :class:`NoOriginal` when nothing was kept to parse,
        :class:`UnsupportedFile` for FAQ and table documents (imported again, not parsed).
        """
        if document.file_type == "faq" or (document.filename and is_table_file(document.filename)):
            raise UnsupportedFile("FAQ and table documents are imported again, not parsed again")
        stored = self._knowledge.document(document.tenant_id, document.id)
        if stored is None:
            raise LookupError(document.id)
        if stored.status == DocumentStatus.PENDING:
            raise StillIndexing(f"document {document.id} is being indexed: parse it again once it is indexed")
        kb = self._knowledge.knowledge_base(document.tenant_id, document.knowledge_base_id)
        if kb is None:
            raise LookupError(document.knowledge_base_id)
        raw = content.encode("utf-8") if content is not None else self.original(document)
        if raw is None:
            raise NoOriginal(f"no original is kept for document {document.id}")
        text, file_type, page_starts = raw.decode("utf-8", errors="replace"), document.file_type, []
        images: list[DocumentImage] = []
        if content is None and document.filename:
            extracted, images = self._accept.extract_with_images(document.filename, raw)
            text, file_type, page_starts = extracted.text, extracted.file_type, extracted.page_starts
        if not text.strip() and not images:
            raise UnsupportedFile("the document has no text")
        current = self._knowledge.chunks_of_document(document.tenant_id, document.id)
        chunk_type = next(
            (c.chunk_type for c in current if c.searchable and c.chunk_type != ChunkType.IMAGE_OCR), ChunkType.TEXT
        )
        item = DocumentInput(
            content=text,
            title=title or document.title,
            filename=document.filename,
            file_type=file_type,
            source=document.source,
            description=document.description,
            page_starts=page_starts,
            tags=document.tags,
            chunk_type=chunk_type,
            size_bytes=len(raw),
            original=raw,
            images=images,
        )
        prepared = self._accept.prepare(kb, item, item.content_hash, 0, keep=document)
        kb = self._accept.settle_model(kb, [prepared])
        new = prepared.document
        new.embedding_model = kb.embedding_model
        if content is not None:
            self._accept.keep_original(new, item)
        elif images and self._originals is not None:
            save_images(self._originals, new.tenant_id, new.id, images)
        # The old index entries go first: no search finds chunks the store no longer has.
        self._engine.delete_document(document.id)
        self._accept.replace_stored(kb, prepared)
        new.chunk_count = len(prepared.children)
        self._accept.schedule([IngestResult(new, new.chunk_count)])
        return self._knowledge.document(document.tenant_id, document.id) or new

    def original(self, document: Document) -> bytes | None:
        """The bytes the document was made from, as received; None when none are kept."""
        if self._originals is None:
            return None
        return self._originals.load(document.tenant_id, document.id)
