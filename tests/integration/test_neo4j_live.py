"""Neo4jGraphStore against the real Neo4j 5 server (Bolt, authentication on) that the test run starts.

The server comes from tests/support/engines.py. Each run writes under knowledge base ids of its own and
deletes them afterwards; the indexes it creates (IF NOT EXISTS) stay.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ragline.graph.store import Entity, GraphNamespace, Relation
from tests.support.engines import LiveNeo4j

RUN = uuid.uuid4().hex[:8]
DOC_A = GraphNamespace(knowledge_base_id=f"kb-a-{RUN}", knowledge_id="doc-a")
DOC_A2 = GraphNamespace(knowledge_base_id=f"kb-a-{RUN}", knowledge_id="doc-a2")
DOC_B = GraphNamespace(knowledge_base_id=f"kb-b-{RUN}", knowledge_id="doc-b")


@pytest.fixture(scope="module")
def store(neo4j_server: LiveNeo4j) -> Iterator[object]:
    from ragline.graph.neo4j import Neo4jGraphStore

    graph = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
    yield graph
    for namespace in (DOC_A, DOC_A2, DOC_B):
        graph.delete_document(namespace)
    graph.close()


def write(store, namespace: GraphNamespace, chunk: str) -> None:
    store.upsert(
        namespace,
        [
            Entity(name="Acme Corp", type="organisation", description="Makes anvils.", chunk_ids=[chunk]),
            Entity(name="Wile E. Coyote", type="person", chunk_ids=[chunk]),
            Entity(name="Apache Kafka", chunk_ids=[chunk]),
        ],
        [
            Relation(source="Wile E. Coyote", target="Acme Corp", relation="buys from", chunk_ids=[chunk]),
            Relation(source="Acme Corp", target="Nobody", relation="ignored"),
        ],
    )


def test_upsert_search_and_delete_on_a_live_server(store):
    write(store, DOC_A, "a1")
    write(store, DOC_A, "a1")  # idempotent
    write(store, DOC_A2, "a2")
    write(store, DOC_B, "b1")

    hits = store.search_nodes([DOC_A.knowledge_base_id], ["ACME  corp"], 10)
    assert [(h.name, h.knowledge_id, h.chunk_ids, h.exact) for h in hits] == [
        ("Acme Corp", "doc-a", ["a1"], True),
        ("Acme Corp", "doc-a2", ["a2"], True),
    ]
    assert [(r.relation, r.name, r.outgoing) for r in hits[0].related] == [("buys from", "Wile E. Coyote", False)]

    [coyote] = store.search_nodes([DOC_B.knowledge_base_id], ["wile e. coyote"], 10)
    assert [(r.relation, r.name, r.outgoing, r.chunk_ids) for r in coyote.related] == [
        ("buys from", "Acme Corp", True, ["b1"])
    ]

    assert [h.name for h in store.search_nodes([DOC_B.knowledge_base_id], ["kafka"], 10)] == ["Apache Kafka"]
    assert store.search_nodes([DOC_B.knowledge_base_id], ["ap"], 10) == []  # too short to be contained

    store.upsert(DOC_A, [Entity(name="acme corp", chunk_ids=["a3"])], [])
    [acme] = store.search_nodes([DOC_A.knowledge_base_id], ["acme corp"], 1)
    assert (acme.name, acme.description, acme.chunk_ids) == ("Acme Corp", "Makes anvils.", ["a1", "a3"])

    store.delete_document(DOC_A)
    assert [h.knowledge_id for h in store.search_nodes([DOC_A.knowledge_base_id], ["acme corp"], 10)] == ["doc-a2"]
