"""What only the DynamoDB store adapters have to get right: item layout, transactions, paging.

The behaviour they share with the SQLite adapters is checked for both in ``test_store_contract.py``.
"""

from __future__ import annotations

import json

import pytest

from ragline.store.dynamodb import DynamoKnowledgeStore, DynamoTenantStore
from ragline.store.models import Chunk, Document, DuplicateName, hash_key
from tests.unit.ragline.store.adapters import dynamo_stores

# Over DynamoDB's 1 MB page of a Query: a few documents this large make a knowledge base span pages.
LARGE_DESCRIPTION = "d" * 100_000
LARGE_DOCUMENTS = 14


@pytest.fixture
def stores(aws, clock):
    return dynamo_stores(aws)


def _scan(table) -> list[dict]:
    items, kwargs = [], {}
    while True:
        page = table.scan(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _document(tenant: str, kb_id: str, i: int, description: str = "") -> Document:
    return Document(
        id=f"doc-{i:03d}",
        tenant_id=tenant,
        knowledge_base_id=kb_id,
        title=f"Doc {i}",
        description=description,
        content_hash=f"sha-{i}",
        created_at=f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}.000+00:00",
    )


def _chunks(document: Document, n: int, chunk_type: str = "text") -> list[Chunk]:
    return [
        Chunk(
            id=f"{document.id}-{chunk_type}-{i}",
            tenant_id=document.tenant_id,
            knowledge_base_id=document.knowledge_base_id,
            knowledge_id=document.id,
            chunk_index=i,
            chunk_type=chunk_type,
            content=f"{chunk_type} {i}",
            searchable=chunk_type == "text",
        )
        for i in range(n)
    ]


class Spy:
    """Wraps one client or table method and records the keyword arguments of every call."""

    def __init__(self, method, rewrite=None) -> None:
        self.method = method
        self.rewrite = rewrite
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        reply = self.method(**kwargs)
        return self.rewrite(len(self.calls), kwargs, reply) if self.rewrite else reply


# Tenants -----------------------------------------------------------------------------------------------------
def test_api_keys_are_stored_only_as_hashes(aws, stores):
    tenant, key = stores.tenants.create("acme")
    stores.tenants.add_key(tenant.id, "second-key")
    items = _scan(aws.table("TenantsTable"))
    keys = sorted(item["pk"] for item in items if item["pk"].startswith("key#"))
    assert keys == sorted([f"key#{hash_key(key)}", f"key#{hash_key('second-key')}"])
    dumped = json.dumps(items, default=str)
    assert key not in dumped
    assert "second-key" not in dumped


def test_create_writes_tenant_key_and_name_in_one_transaction(aws, stores):
    stores.tenants.create("owner", api_key="shared-key")
    before = _scan(aws.table("TenantsTable"))
    with pytest.raises(Exception, match="TransactionCanceled"):
        stores.tenants.create("intruder", api_key="shared-key")
    # The key was taken: neither the tenant item nor its name item may have been written.
    assert _scan(aws.table("TenantsTable")) == before


def test_tenant_lookups_from_a_second_store_instance(aws, stores):
    tenant, key = stores.tenants.create("acme")
    other = DynamoTenantStore(aws.table("TenantsTable"))
    assert other.for_key(key) == tenant
    assert other.by_name("acme") == tenant


# Knowledge bases ---------------------------------------------------------------------------------------------
def test_duplicate_name_from_two_writers_leaves_one_knowledge_base(aws, stores):
    first = stores.knowledge.create_knowledge_base("t1", "handbook", "minilm")
    racing = DynamoKnowledgeStore(aws.table("KnowledgeTable"))
    with pytest.raises(DuplicateName):
        racing.create_knowledge_base("t1", "handbook", "minilm")
    # The name claim and the knowledge base are one transaction: the loser left no knowledge base behind.
    kb_items = [i for i in _scan(aws.table("KnowledgeTable")) if i["sk"].startswith("kb#")]
    assert [i["id"] for i in kb_items] == [first.id]
    assert racing.list_knowledge_bases("t1") == [first]


# Documents ---------------------------------------------------------------------------------------------------
def test_documents_page_through_more_than_one_megabyte(aws, monkeypatch, stores):
    table = aws.table("KnowledgeTable")
    knowledge = DynamoKnowledgeStore(table)
    kb = knowledge.create_knowledge_base("t1", "big", "m")
    documents = [_document("t1", kb.id, i, LARGE_DESCRIPTION) for i in range(LARGE_DOCUMENTS)]
    for document in reversed(documents):
        knowledge.insert_document(document, [])
    spy = Spy(table.query)
    monkeypatch.setattr(table, "query", spy)
    listed = knowledge.documents("t1", kb.id)
    assert len(spy.calls) >= 2, "the listing fit one page: the test no longer exercises paging"
    assert [d.id for d in listed] == [d.id for d in documents]
    assert listed[0].description == LARGE_DESCRIPTION
    assert [d.id for d in knowledge.documents("t1", kb.id, limit=3, offset=LARGE_DOCUMENTS - 2)] == [
        d.id for d in documents[-2:]
    ]


def test_document_counts_count_past_one_megabyte(stores):
    kb = stores.knowledge.create_knowledge_base("t1", "big", "m")
    for i in range(LARGE_DOCUMENTS):
        stores.knowledge.insert_document(_document("t1", kb.id, i, LARGE_DESCRIPTION), [])
    assert stores.knowledge.document_counts([kb.id]) == {kb.id: LARGE_DOCUMENTS}


def test_chunks_of_document_lists_searchable_chunks_before_parents(stores):
    # DynamoDB's layout: text chunks first, then the other types, each in index order (the SQLite adapter
    # orders by chunk_index alone).
    kb = stores.knowledge.create_knowledge_base("t1", "kb", "m")
    document = _document("t1", kb.id, 1)
    text, parents = _chunks(document, 11), _chunks(document, 3, "parent_text")
    stores.knowledge.insert_document(document, [*parents, *reversed(text)])
    assert stores.knowledge.chunks_of_document("t1", document.id) == [*text, *parents]
    assert stores.knowledge.document("t1", document.id).chunk_count == 11


def test_chunks_are_fetched_in_batches_of_at_most_one_hundred(aws, monkeypatch, stores):
    kb = stores.knowledge.create_knowledge_base("t1", "kb", "m")
    document = _document("t1", kb.id, 1)
    chunks = _chunks(document, 130)
    stores.knowledge.insert_document(document, chunks)
    client = aws.table("KnowledgeTable").meta.client
    spy = Spy(client.batch_get_item)
    monkeypatch.setattr(client, "batch_get_item", spy)
    wanted = [c.id for c in chunks] + [chunks[0].id, "missing"]  # a repeat and an unknown id
    found = stores.knowledge.chunks("t1", wanted)
    sizes = [len(call["RequestItems"][aws.tables["KnowledgeTable"]]["Keys"]) for call in spy.calls]
    assert sizes == [100, 31]
    assert found == [*chunks, chunks[0]]


def test_unprocessed_keys_are_requested_again(aws, monkeypatch, stores):
    kb = stores.knowledge.create_knowledge_base("t1", "kb", "m")
    document = _document("t1", kb.id, 1)
    chunks = _chunks(document, 40)
    stores.knowledge.insert_document(document, chunks)
    table_name = aws.tables["KnowledgeTable"]

    def throttle_first_reply(call: int, request: dict, reply: dict) -> dict:
        # As DynamoDB does under load: part of the batch comes back unprocessed.
        if call > 1:
            return reply
        keys = request["RequestItems"][table_name]["Keys"]
        kept = {json.dumps(k, sort_keys=True) for k in keys[:15]}
        items = [i for i in reply["Responses"][table_name] if json.dumps({"pk": i["pk"], "sk": i["sk"]}) in kept]
        return {**reply, "Responses": {table_name: items}, "UnprocessedKeys": {table_name: {"Keys": keys[15:]}}}

    client = aws.table("KnowledgeTable").meta.client
    spy = Spy(client.batch_get_item, throttle_first_reply)
    monkeypatch.setattr(client, "batch_get_item", spy)
    found = stores.knowledge.chunks("t1", [c.id for c in chunks])
    assert len(spy.calls) == 2
    assert len(spy.calls[1]["RequestItems"][table_name]["Keys"]) == 25
    assert found == chunks
