"""Neo4jGraphStore against a fake driver: the exact Cypher and parameters it sends, and what it makes of
the records it gets back. tests/integration/test_neo4j_live.py runs the same store on a real server."""

import pytest

from ragline.graph import neo4j as adapter
from ragline.graph.neo4j import Neo4jGraphStore
from ragline.graph.store import MAX_RELATED_PER_HIT, MIN_CONTAINED_CHARS, Entity, GraphNamespace, Relation
from tests.unit.ragline.graph.fakes import FakeDriver

NAMESPACE = GraphNamespace(knowledge_base_id="kb-a", knowledge_id="doc-a")

EXPECTED_INDEXES = [
    "CREATE INDEX entity_kb_name IF NOT EXISTS FOR (n:Entity) ON (n.kb, n.name_norm)",
    "CREATE INDEX entity_namespace IF NOT EXISTS FOR (n:Entity) ON (n.kb, n.knowledge, n.name_norm)",
]
EXPECTED_UPSERT_NODES = """UNWIND $entities AS entity
MERGE (n:Entity {kb: $kb, knowledge: $knowledge, name_norm: entity.name_norm})
ON CREATE SET n.name = entity.name, n.type = '', n.description = ''
SET n.type = CASE WHEN entity.type <> '' THEN entity.type ELSE n.type END,
    n.description = CASE WHEN entity.description <> '' THEN entity.description ELSE n.description END,
    n.chunk_ids = coalesce(n.chunk_ids, []) + [c IN entity.chunk_ids WHERE NOT c IN coalesce(n.chunk_ids, [])]"""
EXPECTED_UPSERT_EDGES = """UNWIND $relations AS rel
MATCH (s:Entity {kb: $kb, knowledge: $knowledge, name_norm: rel.source_norm})
MATCH (t:Entity {kb: $kb, knowledge: $knowledge, name_norm: rel.target_norm})
MERGE (s)-[r:RELATES {relation: rel.relation}]->(t)
SET r.chunk_ids = coalesce(r.chunk_ids, []) + [c IN rel.chunk_ids WHERE NOT c IN coalesce(r.chunk_ids, [])]"""
EXPECTED_SEARCH = """MATCH (n:Entity)
WHERE n.kb IN $kb_ids
  AND any(q IN $names WHERE n.name_norm = q
      OR (size(q) >= $min_chars AND n.name_norm CONTAINS q)
      OR (size(n.name_norm) >= $min_chars AND q CONTAINS n.name_norm))
WITH n, n.name_norm IN $names AS exact
ORDER BY exact DESC, n.name_norm, n.kb, n.knowledge
LIMIT $max_nodes
RETURN n.kb AS kb, n.knowledge AS knowledge, n.name_norm AS name_norm, n.name AS name, n.type AS type,
       n.description AS description, n.chunk_ids AS chunk_ids, exact,
       [(n)-[r:RELATES]-(m:Entity) | {relation: r.relation, name: m.name, name_norm: m.name_norm,
                                      outgoing: startNode(r) = n, chunk_ids: r.chunk_ids}] AS related
ORDER BY exact DESC, name_norm, kb, knowledge"""
EXPECTED_DELETE = "MATCH (n:Entity {kb: $kb, knowledge: $knowledge}) DETACH DELETE n"


@pytest.fixture
def driver():
    return FakeDriver()


@pytest.fixture
def store(driver):
    return Neo4jGraphStore("bolt://unused", "neo4j", "secret", database="graphs", driver=driver)


def test_the_module_constants_are_the_expected_cypher():
    assert list(adapter.CREATE_INDEXES) == EXPECTED_INDEXES
    assert adapter.UPSERT_NODES == EXPECTED_UPSERT_NODES
    assert adapter.UPSERT_EDGES == EXPECTED_UPSERT_EDGES
    assert adapter.SEARCH_NODES == EXPECTED_SEARCH
    assert adapter.DELETE_DOCUMENT == EXPECTED_DELETE


def test_upsert_sends_nodes_then_edges_in_one_write_transaction_after_the_indexes(driver, store):
    store.upsert(
        NAMESPACE,
        [
            Entity(name="Acme  Corp", type="organisation", description="Makes anvils.", chunk_ids=["c1"]),
            Entity(name="ACME CORP", chunk_ids=["c2", "c1"]),
            Entity(name="Wile E. Coyote", type="person", chunk_ids=["c1"]),
        ],
        [
            Relation(source="wile e. coyote", target="Acme Corp", relation=" buys  from ", chunk_ids=["c1"]),
            Relation(source="Acme Corp", target="Acme Corp", relation="is"),
        ],
    )
    assert driver.calls == [
        ("auto", EXPECTED_INDEXES[0], None),
        ("auto", EXPECTED_INDEXES[1], None),
        (
            "write",
            EXPECTED_UPSERT_NODES,
            {
                "kb": "kb-a",
                "knowledge": "doc-a",
                "entities": [
                    {
                        "name_norm": "acme corp",
                        "name": "Acme Corp",
                        "type": "organisation",
                        "description": "Makes anvils.",
                        "chunk_ids": ["c1", "c2"],
                    },
                    {
                        "name_norm": "wile e. coyote",
                        "name": "Wile E. Coyote",
                        "type": "person",
                        "description": "",
                        "chunk_ids": ["c1"],
                    },
                ],
            },
        ),
        (
            "write",
            EXPECTED_UPSERT_EDGES,
            {
                "kb": "kb-a",
                "knowledge": "doc-a",
                "relations": [
                    {
                        "source_norm": "wile e. coyote",
                        "target_norm": "acme corp",
                        "relation": "buys from",
                        "chunk_ids": ["c1"],
                    }
                ],
            },
        ),
    ]
    assert driver.transactions == ["write"]
    assert set(driver.databases) == {"graphs"}


def test_indexes_are_created_once_per_store(driver, store):
    store.upsert(NAMESPACE, [Entity(name="A")], [])
    store.search_nodes(["kb-a"], ["a"], 5)
    store.delete_document(NAMESPACE)
    assert driver.queries("auto") == EXPECTED_INDEXES


def test_nothing_to_write_or_search_sends_nothing(driver, store):
    store.upsert(NAMESPACE, [], [])
    store.upsert(NAMESPACE, [Entity(name="  ")], [Relation(source="x", target="x")])
    assert store.search_nodes([], ["a"], 5) == []
    assert store.search_nodes(["kb-a"], [" "], 5) == []
    assert store.search_nodes(["kb-a"], ["a"], 0) == []
    assert driver.calls == []


def test_search_sends_normalised_names_as_parameters_and_reads_the_records():
    rows = [
        {
            "kb": "kb-a",
            "knowledge": "doc-a",
            "name_norm": "acme corp",
            "name": "Acme Corp",
            "type": "organisation",
            "description": "Makes anvils.",
            "chunk_ids": ["c1", "c3"],
            "exact": True,
            "related": [
                {"relation": "sues", "name": "Wile E. Coyote", "name_norm": "wile e. coyote", "outgoing": False},
                {
                    "relation": "buys from",
                    "name": "Wile E. Coyote",
                    "name_norm": "wile e. coyote",
                    "outgoing": False,
                    "chunk_ids": ["c1"],
                },
            ],
        },
        {"kb": "kb-b", "knowledge": "doc-b", "name": "Acme Corporation", "exact": False, "related": None},
    ]
    driver = FakeDriver({EXPECTED_SEARCH: rows})
    store = Neo4jGraphStore("bolt://unused", "neo4j", "secret", driver=driver)
    hits = store.search_nodes(["kb-a", "kb-b", "kb-a"], ["ACME  Corp", "acme corp", "Road Runner"], 7)
    assert driver.calls[-1] == (
        "read",
        EXPECTED_SEARCH,
        {
            "kb_ids": ["kb-a", "kb-b"],
            "names": ["acme corp", "road runner"],
            "min_chars": MIN_CONTAINED_CHARS,
            "max_nodes": 7,
        },
    )
    assert driver.databases == [None, None]  # the server's default database
    first, second = hits
    assert (first.name, first.type, first.chunk_ids, first.exact) == (
        "Acme Corp",
        "organisation",
        ["c1", "c3"],
        True,
    )
    assert (first.knowledge_base_id, first.knowledge_id) == ("kb-a", "doc-a")
    assert [(r.relation, r.name, r.outgoing, r.chunk_ids) for r in first.related] == [
        ("buys from", "Wile E. Coyote", False, ["c1"]),
        ("sues", "Wile E. Coyote", False, []),
    ]
    assert (second.name, second.chunk_ids, second.related, second.exact) == ("Acme Corporation", [], [], False)


def test_related_nodes_are_ordered_and_capped():
    related = [
        {"relation": "links", "name": f"Spoke {i:03d}", "name_norm": f"spoke {i:03d}", "outgoing": True}
        for i in reversed(range(MAX_RELATED_PER_HIT + 5))
    ]
    driver = FakeDriver({EXPECTED_SEARCH: [{"kb": "kb-a", "knowledge": "d", "name": "Hub", "related": related}]})
    [hit] = Neo4jGraphStore("bolt://unused", "u", "p", driver=driver).search_nodes(["kb-a"], ["hub"], 1)
    assert len(hit.related) == MAX_RELATED_PER_HIT
    assert [r.name for r in hit.related[:2]] == ["Spoke 000", "Spoke 001"]


def test_delete_document_detaches_the_namespace(driver, store):
    store.delete_document(NAMESPACE)
    assert driver.calls[-1] == ("write", EXPECTED_DELETE, {"kb": "kb-a", "knowledge": "doc-a"})


def test_user_text_never_reaches_the_cypher_text(driver, store):
    hostile = "x'}) MATCH (m) DETACH DELETE m //"
    store.upsert(NAMESPACE, [Entity(name=hostile, description=hostile)], [])
    store.search_nodes([hostile], [hostile], 5)
    store.delete_document(GraphNamespace(knowledge_base_id=hostile, knowledge_id=hostile))
    assert driver.calls
    for _, query, _ in driver.calls:
        assert hostile not in query
        assert query in {*EXPECTED_INDEXES, EXPECTED_UPSERT_NODES, EXPECTED_SEARCH, EXPECTED_DELETE}


def test_the_store_closes_only_a_driver_it_created(monkeypatch, driver):
    Neo4jGraphStore("bolt://unused", "u", "p", driver=driver).close()
    assert driver.closed is False

    created = FakeDriver()
    seen = {}

    def fake_driver(uri, auth):
        seen["args"] = (uri, auth)
        return created

    monkeypatch.setattr(adapter.GraphDatabase, "driver", fake_driver)
    owned = Neo4jGraphStore("neo4j://graph:7687", "neo4j", "secret")
    assert seen["args"] == ("neo4j://graph:7687", ("neo4j", "secret"))
    assert created.calls == []  # nothing is sent before the first use
    owned.close()
    assert created.closed is True
