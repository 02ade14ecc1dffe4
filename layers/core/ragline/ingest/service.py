"""Ingestion service, in two steps.

1. **Accept** (on the request path, fast): the text is chunked and the document is stored ``pending`` with
   its chunks and, where the engine indexes keywords apart from vectors (the embedded engine), its keyword
   rows: the document is keyword-searchable at once. Where the request path has a deadline of its own (AWS:
   API Gateway gives up after 30 s), a file is not even read there: its original is kept and the document
   stored ``pending`` without chunks (:meth:`IngestService.extract_when_indexing`), and step 2 extracts it.
2. **Index** (off the request path): :meth:`IngestService.index_document` reads a file not read yet, then
   computes the vectors of one
   document's chunks in length-sorted batches, writes them as they come (search uses the vectors already
   present) and reports progress, then marks the document ``indexed`` — or ``failed`` with the reason. It
   is idempotent and resumable (it starts at the progress already recorded), so it can run from the
   embedded background thread (:mod:`ragline.ingest.background`) or from an asynchronous Lambda
   invocation, retried or not.

The synchronous helpers (``ingest_text``, ``ingest_many``, ``ingest_bytes``, ``ingest_file``) do both
steps in the caller's thread.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, Protocol, TypeVar

import numpy as np

from ragline.config import IngestionConfig
from ragline.files.reading import NoText, UnsupportedFile, UnsupportedFileType
from ragline.ingest.chunker import plan_chunks
from ragline.ingest.extract import NOT_READ_DIRECTLY, Extracted, extract, reads_as_markdown, require_reader
from ragline.ingest.extract import SUPPORTED_SUFFIXES as TEXT_SUPPORTED_SUFFIXES
from ragline.ingest.images import (
    IMAGE_SUFFIXES,
    DocumentImage,
    ImageReader,
    ImagesNotRead,
    image_chunks,
    images_digest,
    pdf_page_count,
    save_images,
    sniff,
)
from ragline.ingest.indexing import (
    UNREAD_FILE_HASH,
    Cancel,
    IngestCancelled,
    VectorIndexer,
    embed_passages,
    gc_deferred,
    index_keywords_now,
    raise_if_cancelled,
)
from ragline.ingest.language import (
    choose_embedding_model,
    detect_language,
    merge_language,
    preferred_embedding_model,
)
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore, PartStore
from ragline.store.ids import new_id
from ragline.store.models import Chunk, Document, DocumentStatus, FAQEntry, KnowledgeBase
from ragline.store.originals import OriginalStore
from ragline.tables.parse import TABLE_SUFFIXES, is_table_file
from ragline.types import ChunkType

SUPPORTED_SUFFIXES = TEXT_SUPPORTED_SUFFIXES | TABLE_SUFFIXES
# Every type an upload may have: documents, tables and images (the chat page's drop zone offers these).
UPLOAD_SUFFIXES = frozenset(SUPPORTED_SUFFIXES | IMAGE_SUFFIXES)

__all__ = [
    "SUPPORTED_SUFFIXES",
    "UPLOAD_SUFFIXES",
    "DocumentInput",
    "IngestCancelled",
    "IngestResult",
    "IngestService",
    "NoOriginal",
    "StillIndexing",
    "TooManyChunks",
    "UnsupportedFile",
]

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")


class NoOriginal(LookupError):
    """The document's original is not kept (documents stored before originals were, FAQ documents).

    It cannot be downloaded or parsed again.
    """


class StillIndexing(RuntimeError):
    """The document's vectors are being computed.

    Parsing it again now would race the running indexing (its progress and its end would be recorded on the new chunks).
    Parse it again once it is indexed or failed.
    """


class TooManyChunks(ValueError):
    """A document would be cut into more chunks than ``ingestion.max_chunks_per_document``."""

    def __init__(self, count: int, limit: int) -> None:
        """Refuse a document of ``count`` chunks over ``limit``."""
        super().__init__(f"the document would have {count} chunks; the limit is {limit} per document")
        self.count = count
        self.limit = limit


@dataclass
class DocumentInput:
    """A document to ingest: its text and what is known about it."""

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
    # Bytes received (the file, or the text as UTF-8); 0 means the text's UTF-8 length.
    size_bytes: int = 0
    # The file as received, kept as the document's original (None: the text itself, as UTF-8).
    original: bytes | None = None
    # Its pictures (an image upload: the image itself), each an image_ocr chunk after the text's chunks.
    images: list[DocumentImage] = field(default_factory=list)

    @property
    def content_hash(self) -> str:
        """What finds the same document twice: its text, and its images' bytes where it has some."""
        basis = self.content + (images_digest(self.images) if self.images else "")
        return hashlib.sha256(basis.encode("utf-8")).hexdigest()


@dataclass
class Prepared:
    """A document and its chunks, made from its text and not stored yet (:meth:`IngestService.prepare`)."""

    document: Document
    parents: list[Chunk]
    children: list[Chunk]
    position: int
    language_counts: tuple[int, int] = (0, 0)


@dataclass
class IngestResult:
    """What ingesting one document did: the document as stored, its chunk count, and whether it was a duplicate."""

    document: Document
    chunk_count: int
    duplicate: bool = False


def _page_of(page_starts: Sequence[int], offset: int) -> int | None:
    """The 1-based page an offset falls on (a binary search: chunks × pages would be quadratic)."""
    if not page_starts:
        return None
    return max(1, bisect.bisect_right(page_starts, offset))


def store_document(
    knowledge: KnowledgeStore,
    engine: RetrieveEngine,
    kb: KnowledgeBase,
    document: Document,
    chunks: Sequence[Chunk],
    indexed: Sequence[Chunk],
    vectors: np.ndarray,
) -> IngestResult:
    """Write a document with its chunks and index the indexed ones, in one scope.

    Writes a document with its ``chunks`` and indexes ``indexed`` (with their ``vectors``) in one scope: where the
    backend can, neither is stored without the other. The document is complete: ``indexed``.
    """
    document.status = DocumentStatus.INDEXED
    document.embedded_count = len(indexed)
    document.embedding_model = document.embedding_model or kb.embedding_model
    with knowledge.atomic():
        knowledge.insert_document(document, chunks)
        engine.index_chunks(kb.id, kb.embedding_model, indexed, vectors, document=document)
    document.chunk_count = len(indexed)
    return IngestResult(document, len(indexed))


class TableFiles(Protocol):
    """What accepts table files (CSV, TSV, Excel) for this service.

    :class:`ragline.ingest.tables.TableIngestor`, which builds on this module (hence a port here, not an import).
    """

    def ingest_table(
        self,
        kb: KnowledgeBase,
        filename: str,
        raw: bytes,
        *,
        title: str = "",
        source: str = "",
        tags: Sequence[str] = (),
    ) -> list[IngestResult]: ...


def _in_this_thread(call: Callable[[], None]) -> None:
    call()


class IngestService:
    """Chunks, stores and indexes documents: the one ingestion path of both runtimes."""

    def __init__(
        self,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        models: ModelRegistry,
        config: IngestionConfig,
        tables: TableFiles | None = None,
        originals: OriginalStore | None = None,
        images: ImageReader | None = None,
    ) -> None:
        """A service over the stores and models given.

        ``tables`` takes table files, ``originals`` keeps uploads, ``images`` reads images (OCR) where installed.
        """
        self._images = images
        self._tables = tables
        self._originals = originals
        self._knowledge = knowledge
        self._engine = engine
        self._models = models
        self._config = config
        # Where accepted documents go for their vectors; None: indexed at once, in the caller's thread.
        self._scheduler: Callable[[Sequence[Document]], None] | None = None
        # Files are read by the scheduler's worker, not on the request path (see extract_when_indexing).
        self._extract_later = False
        self._kb_lock = threading.Lock()
        # Runs a document's write transaction (see set_writes): in the caller's thread unless set.
        self._writes: Callable[[Callable[[], None]], None] = _in_this_thread
        self._indexer = VectorIndexer(knowledge, engine, models, config, self._read_unread)

    # Scheduling -----------------------------------------------------------------------------------------
    def set_scheduler(self, scheduler: Callable[[Sequence[Document]], None] | None) -> None:
        """Hand accepted documents to ``scheduler`` from now on.

        Accepted documents are handed to ``scheduler`` (a background thread, an asynchronous function invocation), which
        must eventually call :meth:`index_document` for each.
        """
        self._scheduler = scheduler

    def set_writes(self, writes: Callable[[Callable[[], None]], None] | None) -> None:
        """Run the transaction that stores an accepted or re-read document through ``writes`` from now on.

        The embedded server accepts and indexes documents on threads below the API's priority
        (:mod:`ragline.ingest.priority`); their longest write, a large document's chunks and keyword entries, runs on a
        :class:`~ragline.ingest.priority.ForegroundWriter` instead, so the API's writers never wait on a thread the
        busy cores leave for last. None: in the calling thread again.
        """
        self._writes = writes or _in_this_thread

    def extract_when_indexing(self, later: bool = True) -> None:
        """Read uploaded files in :meth:`index_documents` rather than in :meth:`accept_bytes`.

        For a runtime whose request path has a deadline extraction can pass (AWS: API Gateway's 30 s; a large PDF
        takes longer): the file is kept as the document's original and the document stored ``pending`` with no
        chunks, and the scheduler's worker extracts, chunks and indexes it. Needs a scheduler and an originals
        store; tables, images and wiki pages are still read at once (their readers are bounded or answer at once).
        """
        self._extract_later = later

    @property
    def reads_images(self) -> bool:
        """Image files (and the pictures in documents) are read with OCR by this deployment."""
        return self._images is not None

    @property
    def scheduler(self) -> Callable[[Sequence[Document]], None] | None:
        """Where accepted documents go for their vectors; None: they are indexed in the caller's thread."""
        return self._scheduler

    def schedule(self, results: Sequence[IngestResult]) -> None:
        """Hands the pending documents among ``results`` to the scheduler (indexes them now without one)."""
        pending = [r.document for r in results if r.document.status == DocumentStatus.PENDING and not r.duplicate]
        if not pending:
            return
        if self._scheduler is not None:
            self._scheduler(pending)
            return
        self.index_documents(pending)
        for result in results:
            refreshed = self._knowledge.document(result.document.tenant_id, result.document.id)
            if refreshed is not None and not result.duplicate:
                result.document = refreshed

    # Step 1: accept -------------------------------------------------------------------------------------
    @gc_deferred
    def accept_many(
        self, kb: KnowledgeBase, items: Sequence[DocumentInput], cancel: Cancel | None = None
    ) -> list[IngestResult]:
        """Chunk and store each document ``pending`` (keyword-searchable at once where the engine allows).

        The same content twice in a knowledge base is stored once (a ``duplicate`` result).
        """
        results: list[IngestResult | None] = []
        prepared: list[Prepared] = []
        seen_hashes: dict[str, int] = {}
        hashes: list[str] = []
        for item in items:
            content_hash = item.content_hash
            hashes.append(content_hash)
            existing = self._knowledge.documents_by_hash(kb.tenant_id, kb.id, content_hash)
            if existing is not None:
                results.append(IngestResult(existing, existing.chunk_count, duplicate=True))
            elif content_hash in seen_hashes:
                results.append(None)  # a duplicate within this batch: resolved once the first is stored
            else:
                seen_hashes[content_hash] = len(results)
                results.append(None)
                prepared.append(self.prepare(kb, item, content_hash, position=len(results) - 1))
            raise_if_cancelled(cancel)
        if prepared:
            kb = self.settle_model(kb, prepared)
        for item_prepared in prepared:
            raise_if_cancelled(cancel)
            document = item_prepared.document
            document.embedding_model = kb.embedding_model
            chunks = [*item_prepared.parents, *item_prepared.children]
            self.keep_original(document, items[item_prepared.position])
            searchable = [c for c in item_prepared.children if c.searchable]

            def store(
                document: Document = document, chunks: list[Chunk] = chunks, searchable: list[Chunk] = searchable
            ) -> None:
                with self._knowledge.atomic():
                    self._knowledge.insert_document(document, chunks)
                    # A cancel raised here rolls the document back: nothing half-stored.
                    index_keywords_now(self._engine, kb.id, searchable, document, cancel)

            try:
                parts = self._config.store_part_chunks
                if len(chunks) > parts and isinstance(self._knowledge, PartStore):
                    self._store_in_parts(self._knowledge, kb, document, chunks, parts, cancel)
                else:
                    self._writes(store)
            except BaseException:
                if self._originals is not None:
                    self._originals.delete(document.tenant_id, document.id)
                raise
            document.chunk_count = len(item_prepared.children)
            results[item_prepared.position] = IngestResult(document, document.chunk_count)
        for index in range(len(items)):
            if results[index] is None:
                first = results[seen_hashes[hashes[index]]]
                assert first is not None
                results[index] = IngestResult(first.document, first.chunk_count, duplicate=True)
        return [r for r in results if r is not None]

    def _store_in_parts(
        self,
        store: PartStore,
        kb: KnowledgeBase,
        document: Document,
        chunks: Sequence[Chunk],
        size: int,
        cancel: Cancel | None,
    ) -> None:
        """``chunks`` stored ``size`` at a time with their keyword rows, one transaction each.

        Another writer waits for one part, not the whole document. If a part fails or the caller goes away, what was
        stored goes too.
        """
        parts = [chunks[start : start + size] for start in range(0, len(chunks), size)]
        total = sum(1 for c in chunks if c.searchable)

        def first() -> None:
            with self._knowledge.atomic():
                store.begin_document(document, parts[0], searchable_total=total)
                index_keywords_now(self._engine, kb.id, [c for c in parts[0] if c.searchable], document, cancel)

        def more(part: Sequence[Chunk]) -> None:
            with self._knowledge.atomic():
                if not store.add_chunks(document, part):
                    raise IngestCancelled()  # deleted while it was being stored
                index_keywords_now(self._engine, kb.id, [c for c in part if c.searchable], document, cancel)

        self._writes(first)
        try:
            for part in parts[1:]:
                raise_if_cancelled(cancel)
                self._writes(functools.partial(more, part))
            self._writes(lambda: store.finish_document(document.id))
        except BaseException:
            self._writes(lambda: self._forget(document))
            raise

    def _forget(self, document: Document) -> None:
        """A document stored part-way, removed (gone already when it was deleted meanwhile)."""
        try:
            self._knowledge.delete_document(document.tenant_id, document.id)
        except Exception:
            # Left marked as being stored: the start-up sweep removes it (sweep_unfinished).
            logger.warning("removing a document stored part-way failed", exc_info=True)

    @gc_deferred
    def accept_bytes(
        self,
        kb: KnowledgeBase,
        filename: str,
        raw: bytes,
        *,
        title: str = "",
        source: str = "",
        tags: Sequence[str] = (),
        chunk_type: str = ChunkType.TEXT,
        cancel: Cancel | None = None,
    ) -> IngestResult:
        """An uploaded file.

        Text extracted by its type (PDF pages are remembered per chunk) and accepted; tables (CSV, TSV, Excel) become
        table documents, indexed at once (the first sheet's result).
        """
        if self._tables is not None and is_table_file(filename):
            results = self._tables.ingest_table(kb, filename, raw, title=title, source=source, tags=tags)
            if self._originals is not None:
                for table in results:
                    if not table.duplicate:
                        self._originals.save(table.document.tenant_id, table.document.id, raw)
            return results[0]
        if self._reads_later(filename, raw, chunk_type):
            return self._accept_unread(kb, filename, raw, title=title, source=source, tags=tags)
        extracted, images = self.extract_with_images(filename, raw, cancel)
        raise_if_cancelled(cancel)
        item = DocumentInput(
            content=extracted.text,
            title=title or extracted.title,
            filename=filename,
            file_type=extracted.file_type,
            source=source,
            page_starts=extracted.page_starts,
            tags=list(tags),
            chunk_type=chunk_type,
            size_bytes=len(raw),
            original=raw,
            images=images,
        )
        return self.accept_many(kb, [item], cancel=cancel)[0]

    def _reads_later(self, filename: str, raw: bytes, chunk_type: str) -> bool:
        """Whether this file is kept unread and extracted by the scheduler's worker (extract_when_indexing)."""
        if not self._extract_later or self._scheduler is None or self._originals is None:
            return False
        if chunk_type != ChunkType.TEXT:
            return False  # a document holds no chunk type of its own until its chunks exist: wiki pages read now
        return sniff(raw) is None and Path(filename).suffix.lower() not in IMAGE_SUFFIXES

    def _accept_unread(
        self, kb: KnowledgeBase, filename: str, raw: bytes, *, title: str, source: str, tags: Sequence[str]
    ) -> IngestResult:
        """The file kept as its document's original, the document stored ``pending`` with no chunks.

        Its type is checked now (an unsupported file is refused before anything is stored). The same file again is
        found by its bytes' hash, which the document keeps (its text is not known yet); until it is read, its title
        is the one given or the file's name.
        """
        file_type = require_reader(filename)
        content_hash = UNREAD_FILE_HASH + hashlib.sha256(raw).hexdigest()
        existing = self._knowledge.documents_by_hash(kb.tenant_id, kb.id, content_hash)
        if existing is not None:
            return IngestResult(existing, existing.chunk_count, duplicate=True)
        document = Document(
            id=new_id(),
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=title or Path(filename).stem or "Untitled",
            filename=filename,
            file_type=file_type,
            source=source,
            content_hash=content_hash,
            tags=list(dict.fromkeys(t.strip() for t in tags if t.strip())),
            status=DocumentStatus.PENDING,
            size_bytes=len(raw),
            embedding_model=kb.embedding_model,
        )
        assert self._originals is not None
        self._originals.save(document.tenant_id, document.id, raw)
        try:
            self._knowledge.insert_document(document, [])
        except BaseException:
            self._originals.delete(document.tenant_id, document.id)
            raise
        return IngestResult(document, 0)

    def _read_unread(self, document: Document, kb: KnowledgeBase) -> Document:
        """A document accepted unread (:meth:`_accept_unread`): its original extracted, chunked and stored.

        Keyword-searchable on return, ``pending`` until its vectors are in; ``failed`` with the reason when the file
        cannot be read (damaged, no text, too many chunks).
        """
        raw = self._originals.load(document.tenant_id, document.id) if self._originals is not None else None
        if raw is None:
            return self._failed(document, "the uploaded file is no longer kept: upload it again")
        try:
            extracted, images = self.extract_with_images(document.filename, raw)
            given_title = document.title != (Path(document.filename).stem or "Untitled")
            item = DocumentInput(
                content=extracted.text,
                title=document.title if given_title else extracted.title,
                filename=document.filename,
                file_type=extracted.file_type,
                source=document.source,
                page_starts=extracted.page_starts,
                tags=document.tags,
                size_bytes=len(raw),
                original=raw,
                images=images,
            )
            prepared = self.prepare(kb, item, document.content_hash, 0, keep=document)
        except (UnsupportedFile, TooManyChunks) as exc:
            return self._failed(document, str(exc))
        kb = self.settle_model(kb, [prepared])
        new = prepared.document
        new.embedding_model = kb.embedding_model
        if images and self._originals is not None:
            save_images(self._originals, new.tenant_id, new.id, images)
        self.replace_stored(kb, prepared)
        logger.info(
            "document read",
            extra={
                "document_id": new.id,
                "file_type": new.file_type,
                "pages": new.pages,
                "chunks": len(prepared.children),
            },
        )
        return self._knowledge.document(new.tenant_id, new.id) or new

    def _failed(self, document: Document, reason: str) -> Document:
        logger.warning("document failed", extra={"document_id": document.id, "reason": reason[:200]})
        failed = self._knowledge.set_document_status(
            document.tenant_id, document.id, DocumentStatus.FAILED, reason=reason[:500]
        )
        return failed or document.model_copy(update={"status": DocumentStatus.FAILED, "reason": reason[:500]})

    def extract_with_images(
        self, filename: str, raw: bytes, cancel: Cancel | None = None
    ) -> tuple[Extracted, list[DocumentImage]]:
        """The file's text and its images read (:mod:`ragline.ingest.images`).

        An image upload, known by its bytes (or by its name, to refuse a broken one), is one image; a file with
        neither text nor readable images is refused.
        """
        if sniff(raw) is not None or Path(filename).suffix.lower() in IMAGE_SUFFIXES:
            if self._images is None:
                raise ImagesNotRead(
                    "image files are not read by this deployment: OCR (rapidocr-onnxruntime) is not installed "
                    "here or ingestion.ocr is off"
                )
            return Extracted("", "image"), [self._images.read_upload(raw)]
        suffix = Path(filename).suffix.lower()
        if suffix and suffix not in UPLOAD_SUFFIXES and suffix not in NOT_READ_DIRECTLY:
            # Named here, not by the text extractor: its list lacks the tables and images an upload may be.
            listed = ", ".join(sorted(UPLOAD_SUFFIXES))
            raise UnsupportedFileType(f"unsupported file type {suffix!r}; supported: {listed}")
        no_text: NoText | None = None
        try:
            extracted = extract(filename, raw)
        except NoText as exc:
            # A scan: no text, but its pages still count (every one starts at offset 0 of the empty text).
            file_type = Path(filename).suffix.lower().lstrip(".")
            pages = pdf_page_count(raw) if file_type == "pdf" else 0
            no_text, extracted = exc, Extracted("", file_type, page_starts=[0] * pages)
        images: list[DocumentImage] = []
        if self._images is not None and extracted.file_type in ("pdf", "docx", "pptx"):
            images = self._images.read_document(extracted.file_type, raw, cancel).images
            raise_if_cancelled(cancel)
        if not extracted.text.strip() and not any(image.content.strip() for image in images):
            raise no_text or UnsupportedFile("the file has no text")
        return extracted, images

    def keep_original(self, document: Document, item: DocumentInput) -> None:
        """The received bytes, kept before the document is stored, and its images beside them.

        A stored document always has its original (a failure here stores nothing).
        """
        if self._originals is not None:
            original = item.original if item.original is not None else item.content.encode("utf-8")
            self._originals.save(document.tenant_id, document.id, original)
            save_images(self._originals, document.tenant_id, document.id, item.images)

    def prepare(
        self, kb: KnowledgeBase, item: DocumentInput, content_hash: str, position: int, keep: Document | None = None
    ) -> Prepared:
        """The document and its chunks, not stored yet.

        ``keep``: a stored document parsed again, whose id, creation time and state (enabled) the new record keeps.
        """
        content = item.content
        fallback_title = item.title or (Path(item.filename).stem if item.filename else "") or "Untitled"
        # The knowledge base's own chunk size when its creator chose one (WeKnora's chunking_config).
        chunk_size = kb.settings.chunk_size or self._config.chunk_size
        plan = plan_chunks(
            content,
            markdown=reads_as_markdown(item.file_type),
            chunk_size=chunk_size,
            # A chunk smaller than the minimum is merged into its neighbour: never more than half a chosen size.
            min_size=min(self._config.chunk_min_size, chunk_size // 2),
            parent_size=max(self._config.parent_chunk_size, chunk_size),
            fallback_title=fallback_title,
            chunk_overlap=kb.settings.chunk_overlap,
        )
        if len(plan.children) > self._config.max_chunks_per_document:
            raise TooManyChunks(len(plan.children), self._config.max_chunks_per_document)
        document = Document(
            id=keep.id if keep is not None else new_id(),
            **({"created_at": keep.created_at, "enabled": keep.enabled} if keep is not None else {}),
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=item.title or plan.title,
            filename=item.filename,
            file_type=item.file_type,
            description=item.description,
            source=item.source,
            content_hash=content_hash,
            tags=list(dict.fromkeys(t.strip() for t in item.tags if t.strip())),
            status=DocumentStatus.PENDING,
            size_bytes=item.size_bytes or len(content.encode("utf-8")),
            pages=len(item.page_starts),
            embedding_model=kb.embedding_model,
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
        children = []
        for i, span in enumerate(plan.children):
            page = _page_of(item.page_starts, span.start)
            children.append(
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
                    metadata={"page": page} if page is not None else {},
                )
            )
        for previous, following in itertools.pairwise(children):
            previous.next_chunk_id = following.id
            following.pre_chunk_id = previous.id
        children.extend(image_chunks(document.id, kb.tenant_id, kb.id, item.images, first_index=len(children)))
        language_text = "\n".join([content, *(image.content for image in item.images)])
        return Prepared(document, parents, children, position, detect_language(language_text))

    def replace_stored(self, kb: KnowledgeBase, prepared: Prepared) -> None:
        """``prepared`` in place of the stored document of its id, chunks and keyword entries in one transaction."""
        new = prepared.document

        def store() -> None:
            with self._knowledge.atomic():
                if not self._knowledge.replace_document(new, [*prepared.parents, *prepared.children]):
                    raise LookupError(new.id)
                index_keywords_now(self._engine, kb.id, [c for c in prepared.children if c.searchable], new)

        self._writes(store)

    def settle_model(self, kb: KnowledgeBase, prepared: Sequence[Prepared]) -> KnowledgeBase:
        """A knowledge base whose model nobody chose takes the one its language needs.

        When new documents change the language mix (English, then Chinese), its documents are re-embedded.
        """
        han = sum(p.language_counts[0] for p in prepared)
        latin = sum(p.language_counts[1] for p in prepared)
        with self._kb_lock:
            current = self._knowledge.knowledge_base(kb.tenant_id, kb.id) or kb
            language = merge_language(current.language, han, latin)
            if not current.embedding_model_auto:
                if language != current.language:
                    current = (
                        self._knowledge.set_embedding_model(
                            kb.tenant_id, kb.id, current.embedding_model, language=language
                        )
                        or current
                    )
                return current
            model = choose_embedding_model(language, self._models, current.embedding_model, current.language)
            if model == current.embedding_model and language == current.language:
                return current
            previous = current.embedding_model
            updated = self._knowledge.set_embedding_model(kb.tenant_id, kb.id, model, language=language) or current
        if model != previous:
            logger.info(
                "knowledge base embedding model changed by language detection",
                extra={"knowledge_base_id": kb.id, "model": model, "language": language},
            )
            self.reembed(updated)
        return updated

    # Changing the model ---------------------------------------------------------------------------------
    def change_embedding_model(self, kb: KnowledgeBase, model: str) -> KnowledgeBase:
        """Choose a knowledge base's model and re-embed its documents in the background.

        Sets a knowledge base's model by choice (detection no longer changes it) and re-embeds its documents in the
        background; keyword search answers meanwhile, vector search as vectors arrive.
        """
        self._models.embedder(model)  # unknown models fail here, before anything changes
        updated = self._knowledge.set_embedding_model(kb.tenant_id, kb.id, model, auto=False)
        if updated is None:
            raise LookupError(kb.id)
        if model != kb.embedding_model:
            self.reembed(updated)
        return updated

    def adopt_preferred_model(self, kb: KnowledgeBase) -> KnowledgeBase | None:
        """``ragline index --reembed``: a knowledge base whose model detection chose takes today's for its language.

        Its documents are re-embedded in the background; the updated knowledge base, or None when it already has
        today's model, its model was chosen (an explicit choice stays), or its language is not known yet.
        """
        if not kb.embedding_model_auto:
            return None
        model = preferred_embedding_model(kb.language, self._models)
        if not model or model == kb.embedding_model:
            return None
        updated = self._knowledge.set_embedding_model(kb.tenant_id, kb.id, model, language=kb.language)
        if updated is None:
            return None
        self.reembed(updated)
        return updated

    def reembed(self, kb: KnowledgeBase) -> None:
        """Every document of the knowledge base back to ``pending`` with no progress, then scheduled."""
        drop = getattr(self._engine, "delete_vectors", None)
        if drop is not None:
            drop(kb.id, kb.embedding_model)
        documents: list[Document] = []
        offset = 0
        while True:
            page = self._knowledge.documents(kb.tenant_id, kb.id, limit=1000, offset=offset)
            if not page:
                break
            offset += len(page)
            for document in page:
                if document.chunk_count == 0:
                    continue
                updated = self._knowledge.set_document_status(
                    kb.tenant_id,
                    document.id,
                    DocumentStatus.PENDING,
                    embedded_count=0,
                    embedding_model=kb.embedding_model,
                )
                if updated is not None:
                    documents.append(updated)
        if documents:
            self.schedule([IngestResult(d, d.chunk_count) for d in documents])

    # Step 2: index (ragline.ingest.indexing) ----------------------------------------------------------------
    def index_document(
        self,
        tenant_id: str,
        document_id: str,
        *,
        cancel: Cancel | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Document | None:
        """The vectors of one document (see :meth:`VectorIndexer.index_documents`); None when it no longer exists."""
        return self._indexer.index_document(tenant_id, document_id, cancel=cancel, progress=progress)

    def index_documents(
        self,
        documents: Sequence[Document],
        *,
        cancel: Cancel | None = None,
        progress: Callable[[int, int], None] | None = None,
        max_chunks: int | None = None,
    ) -> list[Document]:
        """The missing vectors of pending ``documents`` (see :meth:`VectorIndexer.index_documents`)."""
        return self._indexer.index_documents(documents, cancel=cancel, progress=progress, max_chunks=max_chunks)

    # Synchronous ingestion (accept + index in the caller's thread) ---------------------------------------
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
        cancel: Cancel | None = None,
    ) -> list[IngestResult]:
        """Accept several documents, then embed them in shared batches before returning.

        Several documents accepted, then embedded in shared batches (batches sorted by length fill better across
        documents than within one), before returning.
        """
        results = self.accept_many(kb, items, cancel=cancel)
        self._index_now(results, progress, cancel)
        return results

    def _index_now(
        self,
        results: Sequence[IngestResult],
        progress: Callable[[int, int], None] | None,
        cancel: Cancel | None,
    ) -> None:
        fresh = [r for r in results if not r.duplicate and r.document.status == DocumentStatus.PENDING]
        indexed = {d.id: d for d in self.index_documents([r.document for r in fresh], cancel=cancel, progress=progress)}
        for result in results:
            if not result.duplicate and result.document.id in indexed:
                result.document = indexed[result.document.id]

    def ingest_file(
        self, kb: KnowledgeBase, path: Path, progress: Callable[[int, int], None] | None = None
    ) -> IngestResult:
        """A file from disk, ingested as an upload named after it (the CLI's path)."""
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
        """:meth:`accept_bytes`, then the vectors, before returning."""
        result = self.accept_bytes(kb, filename, raw, title=title, source=source, tags=tags, chunk_type=chunk_type)
        self._index_now([result], progress, None)
        return result

    def ingest_faq(
        self,
        kb: KnowledgeBase,
        entries: Sequence[FAQEntry],
        *,
        title: str = "FAQ",
        source: str = "",
        tags: Sequence[str] = (),
    ) -> IngestResult:
        """FAQ entries as one document, one ``faq`` chunk per entry, indexed before returning.

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
            size_bytes=len(payload.encode("utf-8")),
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
