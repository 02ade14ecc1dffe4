"""Step 2 of ingestion: the vectors of accepted documents, in batches across documents, resumable.

:class:`VectorIndexer` reads a file accepted unread first (through the accept side's reader), then computes the
vectors of the documents' searchable chunks in windows of ``ingestion.embed_window`` shared across documents, writes
each window's vectors with the documents' progress in one transaction where the store can, and marks a document
``indexed`` when its last vector is in — or ``failed`` with the reason. It starts at the progress already recorded,
so a retried or resumed call (the embedded background indexer, an asynchronous Lambda invocation) does no work twice.
What the accept side shares with it (what a chunk's vector is made from, cancellation) lives here too.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Concatenate, ParamSpec, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragline.config import IngestionConfig
from ragline.ingest.collector import full_collections_deferred
from ragline.models.base import Embedder
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.models import Chunk, Document, DocumentStatus, KnowledgeBase
from ragline.types import ChunkType

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

# Progress and cancellation are checked between batches of this many chunks.
KEYWORD_BATCH = 2000
# The content hash of a document accepted unread (extract_when_indexing): its file's bytes, since its text is not
# known when it is stored; with no chunks yet, it marks a document whose file the indexing worker reads first.
UNREAD_FILE_HASH = "file-sha256:"


class IngestCancelled(Exception):
    """The caller went away or the process is stopping.

    Nothing of the document was stored (accept), or it stays ``pending`` with its progress, to be resumed (index).
    """


class Cancel(Protocol):
    """What says a caller stopped waiting (a ``threading.Event``, a Lambda's deadline)."""

    def is_set(self) -> bool:
        """True once the work should stop."""
        ...


@runtime_checkable
class KeywordFirstEngine(Protocol):
    """An engine that indexes keywords when a document is accepted and vectors as they are computed."""

    def index_keywords(
        self, knowledge_base_id: str, chunks: Sequence[Chunk], *, document: Document | None = None
    ) -> None:
        """Makes ``chunks`` keyword-searchable before their vectors exist."""
        ...

    def add_vectors(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
    ) -> list[str] | None:
        """Returns the ids of chunks it did not find (None or empty: every vector was written)."""
        ...


def index_keywords_now(
    engine: RetrieveEngine,
    knowledge_base_id: str,
    chunks: Sequence[Chunk],
    document: Document,
    cancel: Cancel | None = None,
) -> None:
    """Make ``chunks`` keyword-searchable now, where the engine indexes keywords apart from vectors.

    In batches of ``KEYWORD_BATCH``, ``cancel`` checked before each; an engine that indexes both at once: nothing.
    """
    if not isinstance(engine, KeywordFirstEngine):
        return
    for start in range(0, len(chunks), KEYWORD_BATCH):
        raise_if_cancelled(cancel)
        engine.index_keywords(knowledge_base_id, chunks[start : start + KEYWORD_BATCH], document=document)


def embedding_text(title: str, header: str, content: str) -> str:
    """What the embedding model reads: the passage with the title and section it belongs to."""
    return "\n".join(part for part in (title, header, content) if part)


def embed_passages(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The vectors of ``texts`` in one call; an empty (0, dimensions) matrix when there are none."""
    if not texts:
        return np.zeros((0, embedder.dimensions), dtype=np.float32)
    return embedder.embed_documents(list(texts))


def vector_text(document: Document, chunk: Chunk) -> str:
    """What a chunk's vector is made from.

    The text its ingestion path first embedded: an FAQ entry's questions, a table chunk's own text, otherwise the passage with
    its title and section.
    """
    if chunk.chunk_type == ChunkType.FAQ:
        questions = [chunk.metadata.get("standard_question"), *(chunk.metadata.get("similar_questions") or [])]  # type: ignore[misc]
        return "\n".join(str(q) for q in questions if q)
    if chunk.chunk_type in (ChunkType.TABLE_SUMMARY, ChunkType.TABLE_COLUMN):
        return embedding_text("", chunk.header, chunk.content)
    return embedding_text(document.title, chunk.header, chunk.content)


def searchable_in_order(chunks: Sequence[Chunk]) -> list[Chunk]:
    """A document's chunks that get vectors, in the order progress counts them."""
    return sorted((c for c in chunks if c.searchable), key=lambda c: (c.chunk_index, c.chunk_type, c.id))


class _Configured(Protocol):
    _config: IngestionConfig


_S = TypeVar("_S", bound=_Configured)


def gc_deferred(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Runs an ingestion method with full garbage collections held off (see :mod:`ragline.ingest.collector`)."""

    @functools.wraps(method)
    def deferred(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with full_collections_deferred(self._config.defer_full_gc):
            return method(self, *args, **kwargs)

    return deferred


def raise_if_cancelled(cancel: Cancel | None) -> None:
    """Raises :class:`IngestCancelled` once ``cancel`` is set."""
    if cancel is not None and cancel.is_set():
        raise IngestCancelled()


class VectorIndexer:
    """Computes and writes the vectors of pending documents (step 2); see the module's docstring."""

    def __init__(
        self,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        models: ModelRegistry,
        config: IngestionConfig,
        read_unread: Callable[[Document, KnowledgeBase], Document],
    ) -> None:
        """Over the stores and models given; ``read_unread`` extracts and chunks a document accepted unread."""
        self._knowledge = knowledge
        self._engine = engine
        self._models = models
        self._config = config
        self._read_unread = read_unread

    def index_document(
        self,
        tenant_id: str,
        document_id: str,
        *,
        cancel: Cancel | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Document | None:
        """The vectors of one document (see :meth:`index_documents`); None when it no longer exists."""
        document = self._knowledge.document(tenant_id, document_id)
        if document is None:
            return None
        return self.index_documents([document], cancel=cancel, progress=progress)[0]

    @gc_deferred
    def index_documents(
        self,
        documents: Sequence[Document],
        *,
        cancel: Cancel | None = None,
        progress: Callable[[int, int], None] | None = None,
        max_chunks: int | None = None,
    ) -> list[Document]:
        """Compute and write the missing vectors of pending ``documents``, batching across them.

        Computes and writes the missing vectors of pending ``documents``, sharing batches across them (short documents
        fill a batch together), and records progress after every batch. Documents that are not pending are returned as
        they are. A failure marks the documents of the failed batch ``failed`` with the reason; a cancel leaves them
        ``pending`` (raises :class:`IngestCancelled`). With ``max_chunks``, at most that many chunks are embedded: the
        documents left unfinished come back ``pending`` with their progress, for a later call.
        """
        # The stored record, not the caller's copy: another worker may have moved it on meanwhile.
        out: dict[str, Document] = {
            d.id: self._knowledge.document(d.tenant_id, d.id) or d.model_copy(update={"status": DocumentStatus.FAILED})
            for d in documents
        }
        work: list[tuple[Document, KnowledgeBase, Chunk, str]] = []
        done: dict[str, int] = {}
        kbs: dict[tuple[str, str], KnowledgeBase | None] = {}
        for document in list(out.values()):
            if document.status != DocumentStatus.PENDING:
                continue
            key = (document.tenant_id, document.knowledge_base_id)
            if key not in kbs:
                kbs[key] = self._knowledge.knowledge_base(*key)
            kb = kbs[key]
            if kb is None:
                continue
            stored_chunks = self._knowledge.chunks_of_document(document.tenant_id, document.id)
            if not stored_chunks and document.content_hash.startswith(UNREAD_FILE_HASH):
                # Accepted unread (extract_when_indexing): its file is read here, off the request path.
                document = self._read_unread(document, kb)
                out[document.id] = document
                if document.status != DocumentStatus.PENDING:
                    continue
                stored_chunks = self._knowledge.chunks_of_document(document.tenant_id, document.id)
            chunks = searchable_in_order(stored_chunks)
            start = min(document.embedded_count, len(chunks))
            done[document.id] = start
            work.extend((document, kb, chunk, vector_text(document, chunk)) for chunk in chunks[start:])
            if not chunks[start:]:
                out[document.id] = self._finish(document, kb, start)
        per_document = Counter(w[0].id for w in work)
        remaining = {d: per_document[d] for d in done}
        if max_chunks is not None:
            work = work[: max(1, max_chunks)]
        total = len(work)
        window = max(1, self._config.embed_window)
        written = 0
        for begin in range(0, total, window):
            raise_if_cancelled(cancel)
            batch = [w for w in work[begin : begin + window] if remaining.get(w[0].id, 0) >= 0]
            if not batch:
                continue
            try:
                vectors = self._embed_batch(batch)
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"[:500]
                logger.exception("indexing failed", extra={"documents": sorted({w[0].id for w in batch})})
                for document_id in {w[0].id for w in batch}:
                    document = out[document_id]
                    failed = self._knowledge.set_document_status(
                        document.tenant_id, document.id, DocumentStatus.FAILED, reason=reason
                    )
                    out[document_id] = failed or document
                    remaining[document_id] = -1
                continue
            written += len(batch)
            # The batch's vectors and progress in one transaction where the store can (SQLite).
            with self._knowledge.atomic():
                self._write_batch(batch, vectors)
                self._record_progress(batch, out, done, remaining, kbs)
            if progress is not None:
                progress(written, total)
        return [out[d.id] for d in documents]

    def _record_progress(
        self,
        batch: Sequence[tuple[Document, KnowledgeBase, Chunk, str]],
        out: dict[str, Document],
        done: dict[str, int],
        remaining: dict[str, int],
        kbs: dict[tuple[str, str], KnowledgeBase | None],
    ) -> None:
        for document_id in dict.fromkeys(w[0].id for w in batch):
            if remaining.get(document_id, 0) < 0:
                continue
            count = sum(1 for w in batch if w[0].id == document_id)
            done[document_id] += count
            remaining[document_id] -= count
            document = out[document_id]
            if remaining[document_id] == 0:
                kb = kbs[(document.tenant_id, document.knowledge_base_id)]
                assert kb is not None
                out[document_id] = self._finish(document, kb, done[document_id])
            else:
                updated = self._knowledge.set_document_status(
                    document.tenant_id, document.id, DocumentStatus.PENDING, embedded_count=done[document_id]
                )
                out[document_id] = updated or document

    def _embed_batch(
        self, batch: Sequence[tuple[Document, KnowledgeBase, Chunk, str]]
    ) -> dict[str, tuple[list[int], npt.NDArray[np.float32]]]:
        """One embedding call per model for the batch (the embedder sorts by length and pads per sub-batch).

        Model → (rows of the batch, their vectors).
        """
        by_model: dict[str, list[int]] = {}
        for index, (_, kb, _, _) in enumerate(batch):
            by_model.setdefault(kb.embedding_model, []).append(index)
        return {
            model: (indexes, embed_passages(self._models.embedder(model), [batch[i][3] for i in indexes]))
            for model, indexes in by_model.items()
        }

    def _write_batch(
        self,
        batch: Sequence[tuple[Document, KnowledgeBase, Chunk, str]],
        embedded: dict[str, tuple[list[int], npt.NDArray[np.float32]]],
    ) -> None:
        """The vectors of each document of the batch in one statement."""
        for model, (indexes, vectors) in embedded.items():
            by_document: dict[str, list[int]] = {}
            for row, i in enumerate(indexes):
                by_document.setdefault(batch[i][0].id, []).append(row)
            for rows in by_document.values():
                document, kb = batch[indexes[rows[0]]][0], batch[indexes[rows[0]]][1]
                chunks = [batch[indexes[r]][2] for r in rows]
                if isinstance(self._engine, KeywordFirstEngine):
                    missing = self._engine.add_vectors(kb.id, model, chunks, vectors[rows])
                    if missing:
                        self._index_missing(kb, model, document, chunks, vectors[rows], set(missing))
                else:
                    self._engine.index_chunks(kb.id, model, chunks, vectors[rows], document=document)

    def _index_missing(
        self,
        kb: KnowledgeBase,
        model: str,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        missing: set[str],
    ) -> None:
        """Chunks the engine did not hold when their vectors came.

        The ones the store still has (accepted before their keywords were indexed) are indexed whole; the others were
        deleted meanwhile and stay so.
        """
        still = {c.id for c in self._knowledge.chunks(document.tenant_id, sorted(missing))}
        rows = [i for i, chunk in enumerate(chunks) if chunk.id in still]
        if rows:
            self._engine.index_chunks(kb.id, model, [chunks[i] for i in rows], vectors[rows], document=document)

    def _finish(self, document: Document, kb: KnowledgeBase, embedded: int) -> Document:
        finished = self._knowledge.set_document_status(
            document.tenant_id,
            document.id,
            DocumentStatus.INDEXED,
            embedded_count=embedded,
            embedding_model=kb.embedding_model,
        )
        return finished or document
