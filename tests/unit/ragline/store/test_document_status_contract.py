"""Document statuses, progress and knowledge-base models: one contract for SQLite and DynamoDB (moto).

A document is stored ``pending`` (keyword-searchable, vectors to come), moves to ``indexed`` or ``failed``
with a reason; progress counts the chunks that have their vectors; the indexing worker finds the pending
ones of every tenant, and those nobody has reported progress on.
"""

from __future__ import annotations

from ragline.store.models import DocumentStatus
from tests.unit.ragline.store.test_store_contract import make_document, stores, two_tenants

__all__ = ["stores", "two_tenants"]  # fixtures shared with the store contract


def pending_document(stores, tenant: str, kb_id: str, title: str = "Doc", n_chunks: int = 3):
    document, chunks = make_document(tenant, kb_id, title=title, n_chunks=n_chunks, n_parents=1)
    document = document.model_copy(
        update={"status": DocumentStatus.PENDING, "size_bytes": 1234, "pages": 2, "embedding_model": "m1"}
    )
    stores.knowledge.insert_document(document, chunks)
    return document


def test_a_pending_document_reads_back_with_its_size_pages_and_progress(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m1")
    document = pending_document(stores, a, kb.id)
    stored = stores.knowledge.document(a, document.id)
    assert stored.status == DocumentStatus.PENDING
    assert (stored.chunk_count, stored.embedded_count, stored.size_bytes, stored.pages) == (3, 0, 1234, 2)
    assert stored.embedding_model == "m1"
    assert stored.updated_at == stored.created_at
    assert [d.status for d in stores.knowledge.documents(a, kb.id)] == [DocumentStatus.PENDING]


def test_progress_then_indexed(stores, two_tenants, clock):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m1")
    document = pending_document(stores, a, kb.id)
    progressed = stores.knowledge.set_document_status(a, document.id, DocumentStatus.PENDING, embedded_count=2)
    assert progressed.embedded_count == 2
    assert progressed.updated_at > document.updated_at
    assert stores.knowledge.document(a, document.id) == progressed
    done = stores.knowledge.set_document_status(a, document.id, DocumentStatus.INDEXED, embedded_count=3)
    assert stores.knowledge.document(a, document.id) == done
    assert (done.status, done.embedded_count, done.reason) == (DocumentStatus.INDEXED, 3, "")
    # The list route reads the same record.
    assert stores.knowledge.documents(a, kb.id) == [done]


def test_failed_keeps_its_reason_and_progress(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m1")
    document = pending_document(stores, a, kb.id)
    stores.knowledge.set_document_status(a, document.id, DocumentStatus.PENDING, embedded_count=1)
    failed = stores.knowledge.set_document_status(a, document.id, DocumentStatus.FAILED, reason="model unavailable")
    stored = stores.knowledge.document(a, document.id)
    assert stored == failed
    assert (stored.status, stored.reason, stored.embedded_count) == (DocumentStatus.FAILED, "model unavailable", 1)


def test_another_tenant_cannot_change_a_status(stores, two_tenants):
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m1")
    document = pending_document(stores, a, kb.id)
    assert stores.knowledge.set_document_status(b, document.id, DocumentStatus.INDEXED) is None
    assert stores.knowledge.set_document_status(a, "missing", DocumentStatus.INDEXED) is None
    assert stores.knowledge.document(a, document.id).status == DocumentStatus.PENDING


def test_pending_documents_span_tenants_and_leave_with_their_status(stores, two_tenants, clock):
    a, b = two_tenants
    kb_a = stores.knowledge.create_knowledge_base(a, "kb", "m1")
    kb_b = stores.knowledge.create_knowledge_base(b, "kb", "m1")
    first = pending_document(stores, a, kb_a.id, title="First")
    second = pending_document(stores, b, kb_b.id, title="Second")
    indexed, chunks = make_document(a, kb_a.id, title="Indexed")
    stores.knowledge.insert_document(indexed, chunks)
    assert {d.id for d in stores.knowledge.pending_documents()} == {first.id, second.id}
    assert len(stores.knowledge.pending_documents(limit=1)) == 1
    moment = clock()
    stores.knowledge.set_document_status(b, second.id, DocumentStatus.PENDING, embedded_count=1)
    # Progress reported after ``moment``: not abandoned.
    assert [d.id for d in stores.knowledge.pending_documents(updated_before=moment)] == [first.id]
    stores.knowledge.set_document_status(a, first.id, DocumentStatus.INDEXED, embedded_count=3)
    stores.knowledge.set_document_status(b, second.id, DocumentStatus.FAILED, reason="x")
    assert stores.knowledge.pending_documents() == []
    # Back to pending (re-embedding): listed again.
    stores.knowledge.set_document_status(a, first.id, DocumentStatus.PENDING, embedded_count=0)
    assert [d.id for d in stores.knowledge.pending_documents()] == [first.id]


def test_documents_stored_without_a_status_are_indexed(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m1")
    document, chunks = make_document(a, kb.id)
    stores.knowledge.insert_document(document, chunks)
    assert stores.knowledge.document(a, document.id).status == DocumentStatus.INDEXED
    assert stores.knowledge.pending_documents() == []


def test_knowledge_base_model_language_and_auto_flag(stores, two_tenants):
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m1", embedding_model_auto=True)
    assert (kb.embedding_model, kb.embedding_model_auto, kb.language) == ("m1", True, "")
    assert stores.knowledge.knowledge_base(a, kb.id) == kb
    changed = stores.knowledge.set_embedding_model(a, kb.id, "m2", language="zh")
    assert (changed.embedding_model, changed.language, changed.embedding_model_auto) == ("m2", "zh", True)
    assert stores.knowledge.knowledge_base(a, kb.id) == changed
    fixed = stores.knowledge.set_embedding_model(a, kb.id, "m3", auto=False)
    assert (fixed.embedding_model, fixed.language, fixed.embedding_model_auto) == ("m3", "zh", False)
    assert stores.knowledge.list_knowledge_bases(a) == [fixed]
    assert stores.knowledge.set_embedding_model(b, kb.id, "m9") is None
    assert stores.knowledge.knowledge_base(a, kb.id).embedding_model == "m3"
