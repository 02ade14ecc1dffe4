import contextlib

import pytest

from ragline.store.knowledge import SqliteKnowledgeStore as KnowledgeStore
from ragline.store.models import Chunk, Document, DuplicateName
from ragline.store.tenants import SqliteTenantStore as TenantStore


@pytest.fixture
def tenants(db):
    store = TenantStore(db)
    a, _ = store.create("a")
    b, _ = store.create("b")
    return a.id, b.id


def add_document(store: KnowledgeStore, tenant: str, kb_id: str, title: str = "Doc", n_chunks: int = 2):
    document = Document(id=f"{title}-{tenant}", tenant_id=tenant, knowledge_base_id=kb_id, title=title)
    chunks = [
        Chunk(
            id=f"{document.id}-c{i}",
            tenant_id=tenant,
            knowledge_base_id=kb_id,
            knowledge_id=document.id,
            chunk_index=i,
            content=f"chunk {i} of {title}",
            metadata={"i": i},
        )
        for i in range(n_chunks)
    ]
    store.insert_document(document, chunks)
    return document, chunks


def test_create_and_read_knowledge_base(db, tenants):
    a, _ = tenants
    store = KnowledgeStore(db)
    kb = store.create_knowledge_base(a, "handbook", "minilm", description="desc")
    assert store.knowledge_base(a, kb.id) == kb
    assert store.knowledge_base_by_name(a, "handbook") == kb
    assert store.list_knowledge_bases(a) == [kb]


def test_duplicate_name_per_tenant(db, tenants):
    a, b = tenants
    store = KnowledgeStore(db)
    store.create_knowledge_base(a, "handbook", "minilm")
    with pytest.raises(DuplicateName):
        store.create_knowledge_base(a, "handbook", "minilm")
    store.create_knowledge_base(b, "handbook", "minilm")  # another tenant may use the name


def test_another_tenants_ids_read_as_absent(db, tenants):
    a, b = tenants
    store = KnowledgeStore(db)
    kb = store.create_knowledge_base(a, "handbook", "minilm")
    document, chunks = add_document(store, a, kb.id)
    assert store.knowledge_base(b, kb.id) is None
    assert store.knowledge_bases(b, [kb.id]) == []
    assert store.knowledge_base_by_name(b, "handbook") is None
    assert store.list_knowledge_bases(b) == []
    assert store.document(b, document.id) is None
    assert store.documents(b, kb.id) == []
    assert store.chunks_of_document(b, document.id) == []
    assert store.chunks(b, [c.id for c in chunks]) == []
    assert store.documents_by_hash(b, kb.id, document.content_hash) is None
    assert store.delete_document(b, document.id) is False
    # still there for its owner
    assert store.document(a, document.id) is not None


def test_documents_and_chunks_round_trip(db, tenants):
    a, _ = tenants
    store = KnowledgeStore(db)
    kb = store.create_knowledge_base(a, "kb", "minilm")
    document, chunks = add_document(store, a, kb.id, n_chunks=3)
    stored = store.document(a, document.id)
    assert stored is not None
    assert stored.chunk_count == 3
    assert stored.title == "Doc"
    assert store.chunks_of_document(a, document.id) == chunks
    # order of the requested ids is kept; unknown ids are skipped
    wanted = [chunks[2].id, "missing", chunks[0].id]
    assert [c.id for c in store.chunks(a, wanted)] == [chunks[2].id, chunks[0].id]
    assert store.document_counts([kb.id]) == {kb.id: 1}


def test_knowledge_bases_keeps_requested_order_and_dedups(db, tenants):
    a, _ = tenants
    store = KnowledgeStore(db)
    one = store.create_knowledge_base(a, "one", "m")
    two = store.create_knowledge_base(a, "two", "m")
    assert [kb.id for kb in store.knowledge_bases(a, [two.id, one.id, two.id, "nope"])] == [two.id, one.id]
    assert store.knowledge_bases(a, []) == []


def test_delete_document_removes_chunks(db, tenants):
    a, _ = tenants
    store = KnowledgeStore(db)
    kb = store.create_knowledge_base(a, "kb", "m")
    document, _ = add_document(store, a, kb.id)
    assert store.delete_document(a, document.id) is True
    assert store.document(a, document.id) is None
    assert store.chunks_of_document(a, document.id) == []
    assert store.delete_document(a, document.id) is False


def test_insert_document_is_atomic(db, tenants):
    a, _ = tenants
    store = KnowledgeStore(db)
    kb = store.create_knowledge_base(a, "kb", "m")
    document = Document(id="doc", tenant_id=a, knowledge_base_id=kb.id, title="t")
    duplicate_chunks = [
        Chunk(id="same", tenant_id=a, knowledge_base_id=kb.id, knowledge_id="doc", chunk_index=i, content="x")
        for i in range(2)
    ]
    with pytest.raises(Exception, match="UNIQUE"):
        store.insert_document(document, duplicate_chunks)
    assert store.document(a, "doc") is None


def test_a_chunk_deleted_right_after_its_update_commits_reads_as_gone_not_an_index_error(db, tenants, monkeypatch):
    # Enrichment stores a chunk's questions while the document is parsed again: the chunk was deleted between the
    # update's commit and its read back, an IndexError.
    a, _ = tenants
    store = KnowledgeStore(db)
    kb = store.create_knowledge_base(a, "handbook", "minilm")
    _, chunks = add_document(store, a, kb.id)
    transaction = type(db).transaction

    def then_deleted(self):
        outer = not self._depth

        @contextlib.contextmanager
        def scope():
            with transaction(self) as conn:
                yield conn
            if outer:
                monkeypatch.setattr(type(db), "transaction", transaction)
                store.delete_chunk(a, chunks[0].id)

        return scope()

    monkeypatch.setattr(type(db), "transaction", then_deleted)
    updated = store.update_chunk(a, chunks[0].id, content="edited")
    assert updated is not None
    assert updated.content == "edited"  # as it was when the update committed
    assert store.chunks(a, [chunks[0].id]) == []
