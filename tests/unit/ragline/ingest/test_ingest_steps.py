"""Ingestion in two steps on the embedded stores: accept (stored, keyword-searchable, ``pending``), then
index (vectors in batches, progress, ``indexed`` | ``failed``), resumable and cancellable; plus the
background worker, the chunk limit and the language-driven choice of model."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from ragline.config import Settings
from ragline.container import Container
from ragline.ingest.language import E5_MODEL, MINILM_MODEL
from ragline.ingest.service import DocumentInput, IngestCancelled, StillIndexing, TooManyChunks, UnsupportedFile
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveParams
from ragline.store.models import DocumentStatus, FAQEntry

DIMENSIONS = 16


class HashEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are close. Counts its calls."""

    def __init__(self, model_id: str, fail_on: str = "") -> None:
        self.model_id = model_id
        self.dimensions = DIMENSIONS
        self.calls: list[int] = []
        self.fail_on = fail_on

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for word in text.lower().split():
            vector[sum(map(ord, word)) % DIMENSIONS] += 1.0
        vector[0] += 1e-3
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        if self.fail_on and any(self.fail_on in t for t in texts):
            raise RuntimeError("the model ran out of memory")
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text):
        return self._vector(text)


@pytest.fixture
def env(tmp_path: Path):
    minilm, e5 = HashEmbedder(MINILM_MODEL, fail_on="POISON"), HashEmbedder(E5_MODEL)
    models = ModelRegistry()
    models.add_embedder(MINILM_MODEL, lambda: minilm, default=True)
    models.add_embedder(E5_MODEL, lambda: e5)
    container = Container.embedded(Settings(data_dir=tmp_path), models=models)
    tenant, _ = container.tenants.create("t")
    kb = container.knowledge.create_knowledge_base(tenant.id, "kb", MINILM_MODEL, embedding_model_auto=True)
    yield container, kb, minilm, e5
    container.close()


def paragraphs(n: int, word: str = "apple") -> str:
    return "\n\n".join(f"Paragraph {i} talks about {word} number {i}. " + "Filler text here. " * 40 for i in range(n))


def vector_hits(container, kb, query: str) -> list[str]:
    kb = container.knowledge.knowledge_base(kb.tenant_id, kb.id)
    embedder = container.models.embedder(kb.embedding_model)
    params = RetrieveParams(
        query=query,
        knowledge_base_ids=[kb.id],
        query_embedding=embedder.embed_query(query),
        embedding_model=kb.embedding_model,
    )
    return [h.knowledge_id for h in container.engine.vector_search(params, 10)]


def keyword_hits(container, kb, query: str) -> list[str]:
    return [
        h.knowledge_id
        for h in container.engine.keyword_search(RetrieveParams(query=query, knowledge_base_ids=[kb.id]), 10)
    ]


def test_accepted_document_is_pending_and_keyword_searchable_before_any_vector(env):
    container, kb, minilm, _ = env
    result = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(3, "zebra"), title="Zebras")])[0]
    document = container.knowledge.document(kb.tenant_id, result.document.id)
    assert document.status == DocumentStatus.PENDING
    assert (document.chunk_count, document.embedded_count) == (result.chunk_count, 0)
    assert document.size_bytes == len(paragraphs(3, "zebra").encode())
    assert minilm.calls == []
    assert keyword_hits(container, kb, "zebra") == [document.id] * min(10, document.chunk_count)
    assert vector_hits(container, kb, "zebra") == []


def test_indexing_writes_vectors_reports_progress_and_marks_indexed(env, monkeypatch):
    container, kb, minilm, _ = env
    monkeypatch.setattr(container.config.ingestion, "embed_window", 2)
    result = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(5), title="Apples")])[0]
    seen: list[tuple[int, int]] = []
    document = container.ingest.index_document(
        kb.tenant_id, result.document.id, progress=lambda d, t: seen.append((d, t))
    )
    total = result.chunk_count
    assert total >= 3
    assert document.status == DocumentStatus.INDEXED
    assert document.embedded_count == total
    assert document.embedding_model == MINILM_MODEL
    assert seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert set(vector_hits(container, kb, "apple")) == {document.id}
    # Idempotent: indexing an indexed document does nothing.
    calls = list(minilm.calls)
    assert container.ingest.index_document(kb.tenant_id, document.id).status == DocumentStatus.INDEXED
    assert minilm.calls == calls


def test_search_uses_the_vectors_already_present_and_a_cancel_resumes_where_it_stopped(env, monkeypatch):
    container, kb, minilm, _ = env
    monkeypatch.setattr(container.config.ingestion, "embed_window", 2)
    result = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(6), title="Apples")])[0]
    stop = threading.Event()

    def progress(done: int, total: int) -> None:
        if done >= 2:
            stop.set()  # as a shutdown would, after the first batch

    with pytest.raises(IngestCancelled):
        container.ingest.index_document(kb.tenant_id, result.document.id, cancel=stop, progress=progress)
    partial = container.knowledge.document(kb.tenant_id, result.document.id)
    assert (partial.status, partial.embedded_count) == (DocumentStatus.PENDING, 2)
    assert len(vector_hits(container, kb, "apple")) == 2  # the vectors written so far are searched
    minilm.calls.clear()
    finished = container.ingest.index_document(kb.tenant_id, result.document.id)
    assert finished.status == DocumentStatus.INDEXED
    assert sum(minilm.calls) == result.chunk_count - 2  # resumed, not restarted
    assert len(vector_hits(container, kb, "apple")) == min(10, result.chunk_count)


def test_a_failing_model_marks_the_document_failed_with_the_reason_and_others_still_index(env, monkeypatch):
    container, kb, _, _ = env
    monkeypatch.setattr(container.config.ingestion, "embed_window", 1)
    bad, good = container.ingest.accept_many(
        kb,
        [DocumentInput(content="POISON pill text.", title="Bad"), DocumentInput(content="A fine text.", title="Good")],
    )
    documents = container.ingest.index_documents([bad.document, good.document])
    assert documents[0].status == DocumentStatus.FAILED
    assert "out of memory" in documents[0].reason
    assert documents[1].status == DocumentStatus.INDEXED
    assert container.knowledge.document(kb.tenant_id, bad.document.id).reason == documents[0].reason


def test_short_documents_share_embedding_calls(env):
    container, kb, minilm, _ = env
    items = [DocumentInput(content=f"Short note {i} about pears.", title=f"n{i}") for i in range(20)]
    results = container.ingest.accept_many(kb, items)
    container.ingest.index_documents([r.document for r in results])
    assert minilm.calls == [20]


def test_a_cancel_while_accepting_stores_nothing(env):
    container, kb, _, _ = env
    stop = threading.Event()
    stop.set()
    with pytest.raises(IngestCancelled):
        container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(3), title="A")], cancel=stop)
    assert container.knowledge.documents(kb.tenant_id, kb.id) == []
    assert keyword_hits(container, kb, "apple") == []


def test_too_many_chunks_is_refused_before_anything_is_stored(env, monkeypatch):
    container, kb, _, _ = env
    monkeypatch.setattr(container.config.ingestion, "max_chunks_per_document", 3)
    with pytest.raises(TooManyChunks, match="limit is 3"):
        container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(10), title="Long")])
    assert container.knowledge.documents(kb.tenant_id, kb.id) == []


def test_a_long_repeated_line_is_chunked_whole_and_bounded(env):
    container, kb, _, _ = env
    line = "The same line of text, repeated again and again.\n"
    text = line * (2_000_000 // len(line))
    result = container.ingest.accept_many(kb, [DocumentInput(content=text, title="Repeated", file_type="text")])[0]
    chunks = [c for c in container.knowledge.chunks_of_document(kb.tenant_id, result.document.id) if c.searchable]
    size = container.config.ingestion.chunk_size
    assert all(len(c.content) <= size for c in chunks)
    assert sum(len(c.content) for c in chunks) >= len(text) * 0.95
    assert len(chunks) == result.chunk_count <= 2 * len(text) // size


def test_pages_and_page_numbers_come_from_page_starts(env):
    container, kb, _, _ = env
    pages = [f"Page {i} " + "text " * 300 for i in range(4)]
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + 2
    item = DocumentInput(content="\n\n".join(pages), title="Paged", file_type="text", page_starts=starts)
    result = container.ingest.accept_many(kb, [item])[0]
    assert container.knowledge.document(kb.tenant_id, result.document.id).pages == 4
    chunks = [c for c in container.knowledge.chunks_of_document(kb.tenant_id, result.document.id) if c.searchable]
    assert [c.metadata["page"] for c in chunks] == sorted(c.metadata["page"] for c in chunks)
    assert {c.metadata["page"] for c in chunks} == {1, 2, 3, 4}


def test_chinese_text_switches_an_automatic_knowledge_base_to_the_multilingual_model(env):
    container, kb, _minilm, _e5 = env
    english = container.ingest.ingest_many(kb, [DocumentInput(content=paragraphs(2), title="English")])[0]
    assert container.knowledge.knowledge_base(kb.tenant_id, kb.id).language == "en"
    assert container.knowledge.knowledge_base(kb.tenant_id, kb.id).embedding_model == MINILM_MODEL
    chinese = container.ingest.ingest_many(
        kb, [DocumentInput(content="范廷颂是越南罗马天主教枢机。" * 20, title="中文")]
    )[0]
    updated = container.knowledge.knowledge_base(kb.tenant_id, kb.id)
    assert (updated.language, updated.embedding_model) == ("mixed", E5_MODEL)
    assert chinese.document.embedding_model == E5_MODEL
    # The English document was re-embedded with the new model (synchronously: no scheduler here).
    again = container.knowledge.document(kb.tenant_id, english.document.id)
    assert (again.status, again.embedding_model) == (DocumentStatus.INDEXED, E5_MODEL)
    assert set(vector_hits(container, kb, "apple")) >= {english.document.id}


def test_a_chosen_model_is_kept_whatever_the_language(env):
    container, kb, _, _ = env
    fixed = container.knowledge.create_knowledge_base(kb.tenant_id, "fixed", MINILM_MODEL)
    container.ingest.ingest_many(fixed, [DocumentInput(content="中文内容。" * 50, title="中文")])
    stored = container.knowledge.knowledge_base(kb.tenant_id, fixed.id)
    assert (stored.embedding_model, stored.language) == (MINILM_MODEL, "zh")


def test_changing_the_model_reembeds_every_document(env):
    container, kb, _, e5 = env
    results = container.ingest.ingest_many(
        kb, [DocumentInput(content=paragraphs(2, w), title=w) for w in ("fig", "kiwi")]
    )
    container.ingest.change_embedding_model(kb, E5_MODEL)
    assert sum(e5.calls) == sum(r.chunk_count for r in results)
    stored = container.knowledge.knowledge_base(kb.tenant_id, kb.id)
    assert (stored.embedding_model, stored.embedding_model_auto) == (E5_MODEL, False)
    assert {d.embedding_model for d in container.knowledge.documents(kb.tenant_id, kb.id)} == {E5_MODEL}
    # Search reads the new model's vectors, and only those (the old ones are gone).
    hits = vector_hits(container, kb, "kiwi")
    assert set(hits) == {r.document.id for r in results}
    assert len(hits) == sum(r.chunk_count for r in results)


def test_the_background_worker_indexes_submitted_and_left_over_documents_and_stops(env):
    container, kb, _, _ = env
    left_over = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(2, "plum"), title="Left")])[0]
    container.start_indexing()
    try:
        assert container.indexer.wait_idle(timeout=30)
        assert container.knowledge.document(kb.tenant_id, left_over.document.id).status == DocumentStatus.INDEXED
        results = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(2, "lime"), title="New")])
        container.ingest.schedule(results)
        assert container.indexer.wait_idle(timeout=30)
        assert container.knowledge.document(kb.tenant_id, results[0].document.id).status == DocumentStatus.INDEXED
    finally:
        assert container.stop_indexing(timeout=10)


def test_a_document_is_parsed_again_from_its_original_under_the_same_id(env):
    container, kb, _, _ = env
    raw = b"# Bees\n\n## Hives\n\nA hive holds one queen.\n\n## Honey\n\nBees store honey in wax cells."
    accepted = container.ingest.accept_bytes(kb, "bees.md", raw)
    document = accepted.document
    assert container.reparser.original(document) == raw  # kept as received
    # While its vectors are computed it is not parsed again: the running indexing would record its progress
    # on the new chunks.
    with pytest.raises(StillIndexing):
        container.reparser.reparse(document)
    container.ingest.index_document(kb.tenant_id, document.id)
    old = {c.id for c in container.knowledge.chunks_of_document(kb.tenant_id, document.id)}
    container.knowledge.delete_chunk(kb.tenant_id, next(iter(old)))
    reparsed = container.reparser.reparse(container.knowledge.document(kb.tenant_id, document.id))
    assert (reparsed.id, reparsed.created_at, reparsed.filename) == (document.id, document.created_at, "bees.md")
    assert reparsed.status == DocumentStatus.INDEXED  # no scheduler here: indexed before returning
    chunks = container.knowledge.chunks_of_document(kb.tenant_id, document.id)
    assert {c.chunk_index for c in chunks if c.searchable} == set(range(reparsed.chunk_count))
    assert not {c.id for c in chunks} & old
    assert keyword_hits(container, kb, "wax") == [document.id]
    assert set(vector_hits(container, kb, "honey wax")) == {document.id}
    # A manual document's new text becomes its original.
    manual = container.ingest.ingest_text(kb, content="Wasps build paper nests.", title="Wasps").document
    edited = container.reparser.reparse(manual, content="Hornets are large wasps.", title="Hornets")
    assert (edited.id, edited.title) == (manual.id, "Hornets")
    assert container.reparser.original(edited) == b"Hornets are large wasps."
    assert keyword_hits(container, kb, "paper nests") == []
    assert keyword_hits(container, kb, "hornets") == [manual.id]
    faq = container.ingest.ingest_faq(kb, [FAQEntry(standard_question="Q?", answers=["A."])]).document
    with pytest.raises(UnsupportedFile):
        container.reparser.reparse(faq)
    container.removal.delete_document(kb.tenant_id, document.id)
    assert container.reparser.original(document) is None  # deleted with its document


def test_on_shutdown_the_indexer_is_told_to_stop_before_the_turns_drain(env, monkeypatch):
    """SIGTERM during indexing: the batch being embedded finishes while the running turns drain, not after
    them, so the process exits within the grace period; the document stays pending with that batch's
    progress, resumed at the next start."""
    import asyncio

    from ragline.server.embedded import shutdown_drain

    container, kb, minilm, _ = env
    monkeypatch.setattr(container.config.ingestion, "embed_window", 2)
    result = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(6), title="Apples")])[0]
    embedding, release = threading.Event(), threading.Event()
    embed = minilm.embed_documents

    def slow_embed(texts):
        embedding.set()
        assert release.wait(30)
        return embed(texts)

    monkeypatch.setattr(minilm, "embed_documents", slow_embed)
    container.start_indexing()
    assert embedding.wait(30)
    stopping_while_draining = []

    class Runner:
        async def drain(self, grace_s, hurry=None):
            stopping_while_draining.append(container.indexer.stopping)
            release.set()  # the batch under way ends while the turns drain

    asyncio.run(shutdown_drain(container, Runner(), 10.0)(lambda: False))
    assert stopping_while_draining == [True]
    assert container.stop_indexing(timeout=10)
    stopped = container.knowledge.document(kb.tenant_id, result.document.id)
    assert (stopped.status, stopped.embedded_count) == (DocumentStatus.PENDING, 2)


def test_the_indexer_stop_waits_no_longer_than_its_timeout_counted_from_the_first_request(env, monkeypatch):
    """SIGTERM asks the indexer to stop when the drain begins; the wait at the end of the shutdown only has
    what is left of the grace period. A batch still running then is left (its document stays pending at its
    last recorded progress), so the process exits within the grace period however slow the model is."""
    from ragline.ingest.background import BackgroundIndexer

    container, kb, minilm, _ = env
    monkeypatch.setattr(container.config.ingestion, "embed_window", 2)
    result = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(6), title="Apples")])[0]
    embedding, release = threading.Event(), threading.Event()
    embed = minilm.embed_documents

    def stuck_embed(texts):
        embedding.set()
        assert release.wait(30)
        return embed(texts)

    monkeypatch.setattr(minilm, "embed_documents", stuck_embed)
    now = [100.0]
    indexer = BackgroundIndexer(container.ingest, container.knowledge, clock=lambda: now[0])
    indexer.start()
    try:
        assert embedding.wait(30)
        indexer.request_stop()  # the drain begins (t = 100)
        now[0] = 110.0  # the turns took the whole grace period
        assert indexer.stop(timeout=10.0) is False  # nothing left to wait: returns at once, batch still running
    finally:
        release.set()
    assert indexer.wait_idle(timeout=30)
    stopped = container.knowledge.document(kb.tenant_id, result.document.id)
    assert stopped.status == DocumentStatus.PENDING


def test_a_file_accepted_unread_is_read_when_indexed_and_found_again_by_its_bytes(env):
    """extract_when_indexing (AWS: reading may outlast the API's 30 s): accepting keeps the file and stores the
    document pending with no chunks; indexing reads, chunks and embeds it; the same file again is a duplicate
    before and after it is read; a file that cannot be read ends failed with the reason."""
    from tests.support.documents import make_pdf

    container, kb, _, _ = env
    scheduled: list[str] = []
    container.ingest.set_scheduler(lambda documents: scheduled.extend(d.id for d in documents))
    container.ingest.extract_when_indexing()
    pdf = make_pdf(["Hives hold one queen.", "Bees store honey in wax cells."], title="Bees")
    accepted = container.ingest.accept_bytes(kb, "bees.pdf", pdf)
    container.ingest.schedule([accepted])
    document = accepted.document
    assert (document.status, document.file_type, document.title, accepted.chunk_count) == (
        DocumentStatus.PENDING,
        "pdf",
        "bees",
        0,
    )
    assert scheduled == [document.id]
    assert container.knowledge.chunks_of_document(kb.tenant_id, document.id) == []
    assert container.reparser.original(document) == pdf
    assert container.ingest.accept_bytes(kb, "again.pdf", pdf).duplicate
    # An unsupported type is still refused at once, before anything is stored.
    with pytest.raises(UnsupportedFile):
        container.ingest.accept_bytes(kb, "notes.odt", b"PK")

    read = container.ingest.index_document(kb.tenant_id, document.id)
    assert read is not None
    assert (read.status, read.pages, read.title, read.created_at) == (
        DocumentStatus.INDEXED,
        2,
        "Bees",
        document.created_at,
    )
    assert read.embedded_count == read.chunk_count >= 1
    assert keyword_hits(container, kb, "wax") == [document.id]
    assert container.ingest.accept_bytes(kb, "third.pdf", pdf).duplicate
    # Indexing it again (a duplicate delivery) reads nothing again.
    assert container.ingest.index_document(kb.tenant_id, document.id).status == DocumentStatus.INDEXED

    damaged = container.ingest.accept_bytes(kb, "damaged.pdf", b"%PDF-1.4 broken", title="Broken").document
    failed = container.ingest.index_document(kb.tenant_id, damaged.id)
    assert failed is not None
    assert failed.status == DocumentStatus.FAILED
    assert "could not be read" in failed.reason
    assert failed.title == "Broken"


def _watch_parts(container, monkeypatch, between):
    """Runs ``between(n)`` before the document's n-th write transaction after its first, outside any transaction.

    Returns how many chunks each part added after the first.
    """
    service, store = container.ingest, container.knowledge
    writes, add_chunks = service._writes, store.add_chunks
    calls, parts = [], []

    def watched_writes(call):
        calls.append(call)
        if len(calls) > 1:
            between(len(calls) - 1)
        return writes(call)

    def counted(document, chunks):
        parts.append(len(chunks))
        return add_chunks(document, chunks)

    monkeypatch.setattr(service, "_writes", watched_writes)
    monkeypatch.setattr(store, "add_chunks", counted)
    return parts


def test_a_large_document_is_stored_in_parts_and_other_writers_go_between_them(env, monkeypatch):
    container, kb, _, _ = env
    monkeypatch.setattr(container.config.ingestion, "store_part_chunks", 3)
    seen = []

    def between(part):
        # Another thread's write completes while the document is half stored: the lock is not held across parts.
        writer = threading.Thread(target=container.tenants.create, args=(f"between {part}",))
        writer.start()
        writer.join(timeout=30)
        document = container.knowledge.documents(kb.tenant_id, kb.id)[0]
        pending = [d.id for d in container.knowledge.pending_documents()]
        seen.append((writer.is_alive(), document.status, document.chunk_count, document.id in pending))

    parts = _watch_parts(container, monkeypatch, between)
    result = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(10, "zebra"), title="Zebras")])[0]
    assert result.chunk_count == 10
    stored = container.knowledge.chunks_of_document(kb.tenant_id, result.document.id)  # parents too
    assert len(parts) >= 2  # after a first part of 3
    assert set(parts[:-1]) == {3}
    assert 3 + sum(parts) == len(stored)
    # Between parts (and before the last write, the mark's removal): the other write went through, and the
    # document, counted whole, is not handed to indexing yet.
    assert seen == [(False, DocumentStatus.PENDING, 10, False)] * (len(parts) + 1)
    assert [d.id for d in container.knowledge.pending_documents()] == [result.document.id]
    assert keyword_hits(container, kb, "zebra") == [result.document.id] * 10


def test_a_document_stored_in_parts_and_cancelled_half_way_leaves_nothing(env, monkeypatch):
    container, kb, _, _ = env
    monkeypatch.setattr(container.config.ingestion, "store_part_chunks", 3)
    stop = threading.Event()
    parts = _watch_parts(container, monkeypatch, lambda n: stop.set() if n == 2 else None)
    with pytest.raises(IngestCancelled):
        container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(10), title="A")], cancel=stop)
    assert parts == [3, 3]  # the part under way when the cancel came is stored, then everything goes
    assert container.knowledge.documents(kb.tenant_id, kb.id) == []
    assert keyword_hits(container, kb, "apple") == []
    assert container.db.query_one("SELECT COUNT(*) AS n FROM chunks")["n"] == 0
    assert container.db.query_one("SELECT COUNT(*) AS n FROM documents_storing")["n"] == 0


def test_a_document_deleted_while_it_is_stored_in_parts_stops_its_store(env, monkeypatch):
    container, kb, _, _ = env
    monkeypatch.setattr(container.config.ingestion, "store_part_chunks", 3)

    def delete(n):
        if n == 1:
            (document,) = container.knowledge.documents(kb.tenant_id, kb.id)
            assert container.knowledge.delete_document(kb.tenant_id, document.id)

    parts = _watch_parts(container, monkeypatch, delete)
    with pytest.raises(IngestCancelled):
        container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(10), title="A")])
    assert parts == [3]  # found the document gone
    assert container.knowledge.documents(kb.tenant_id, kb.id) == []
    assert container.db.query_one("SELECT COUNT(*) AS n FROM chunks")["n"] == 0


def test_a_store_in_parts_cut_by_a_crash_is_swept_whole_once_untouched(env, monkeypatch):
    container, kb, _, _ = env
    monkeypatch.setattr(container.config.ingestion, "store_part_chunks", 3)

    class Crash(BaseException):
        """What a kill -9 leaves: the parts stored so far, and nobody to remove them."""

    def crash(n):
        raise Crash()

    _watch_parts(container, monkeypatch, crash)
    monkeypatch.setattr(container.ingest, "_forget", lambda document: None)  # the process is gone: no clean-up
    monkeypatch.setattr(container.originals, "delete", lambda tenant_id, document_id: None)
    with pytest.raises(Crash):
        container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(10), title="A")])
    monkeypatch.undo()
    (document,) = container.knowledge.documents(kb.tenant_id, kb.id)
    assert container.knowledge.pending_documents() == []  # never indexed half stored
    assert container.originals.size(kb.tenant_id, document.id) is not None
    assert container.knowledge.sweep_unfinished(3600) == []  # touched just now: its store may be alive
    monkeypatch.setattr(container.config.recovery, "orphaned_original_age_s", 0)
    container.sweep_orphaned_originals()
    assert container.knowledge.documents(kb.tenant_id, kb.id) == []
    assert container.db.query_one("SELECT COUNT(*) AS n FROM chunks")["n"] == 0
    assert keyword_hits(container, kb, "apple") == []
    assert container.originals.size(kb.tenant_id, document.id) is None


def test_a_stop_asked_for_between_the_loops_look_and_its_wait_is_not_lost(env, monkeypatch):
    """A stop that came after the indexing loop looked at its flag, before it slept: the loop must not sleep through
    its idle scan (it did, and a shutdown waited out its whole grace)."""
    from ragline.ingest.background import BackgroundIndexer

    container, _, _, _ = env
    indexer = BackgroundIndexer(container.ingest, container.knowledge, idle_scan_s=3600)
    next_batch, looks = indexer._next_batch, []

    def stop_first(*args):
        looks.append(1)
        if len(looks) == 2:  # the first pass found nothing; the loop's next look: stopped just now
            indexer.request_stop()
        return next_batch(*args)

    monkeypatch.setattr(indexer, "_next_batch", stop_first)
    indexer.start()
    thread = indexer._thread
    try:
        # Nobody notifies again: the thread must end on the stop it was asked for.
        thread.join(timeout=60)
        assert not thread.is_alive()
        assert len(looks) == 2
    finally:
        indexer.stop()


def test_a_started_indexer_is_not_idle_before_its_first_look_for_left_over_documents(env, monkeypatch):
    """``wait_idle`` right after ``start`` returned before the thread had looked for what a stopped process left."""
    from ragline.ingest.background import BackgroundIndexer

    container, kb, _, _ = env
    left_over = container.ingest.accept_many(kb, [DocumentInput(content=paragraphs(2, "plum"), title="Left")])[0]
    indexer = BackgroundIndexer(container.ingest, container.knowledge)
    next_batch, go = indexer._next_batch, threading.Event()

    def held(*args):
        assert go.wait(60)
        return next_batch(*args)

    monkeypatch.setattr(indexer, "_next_batch", held)
    indexer.start()
    try:
        assert not indexer.idle  # the thread has not looked yet
        go.set()
        assert indexer.wait_idle(timeout=60)
        assert container.knowledge.document(kb.tenant_id, left_over.document.id).status == DocumentStatus.INDEXED
    finally:
        go.set()
        assert indexer.stop()
