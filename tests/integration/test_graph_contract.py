"""The graph store's contract, run against both adapters: SQLite (the embedded default) and Neo4j (the real
Neo4j 5 server the test run starts, over Bolt with authentication; tests/support/engines.py).

One body of assertions proves they match names, merge upserts, keep namespaces apart and delete alike.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragline.graph.store import (
    DEFAULT_RELATION,
    MAX_RELATED_PER_HIT,
    Entity,
    Relation,
    names_match,
    normalise_name,
)
from tests.support.graph import DOC_A, DOC_A2, DOC_B, acme_graph

BACKENDS = ["sqlite", "neo4j"]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if request.param == "neo4j":
        from ragline.graph.neo4j import Neo4jGraphStore

        live = request.getfixturevalue("neo4j_server")
        graph = Neo4jGraphStore(live.uri, live.user, live.password)
        yield graph
        graph.close()
        return
    from ragline.graph.sqlite import SqliteGraphStore
    from ragline.store.db import Database

    path: Path = tmp_path_factory.mktemp("graph") / "ragline.db"
    db = Database(path)
    yield SqliteGraphStore(db)
    db.close()


@pytest.fixture
def store(backend: Any) -> Any:
    """The module's store, emptied of the namespaces these tests write (the Neo4j server is the session's)."""
    for namespace in (DOC_A, DOC_A2, DOC_B):
        backend.delete_document(namespace)
    return backend


def test_search_is_case_insensitive_and_exact_and_returns_the_stored_node(store):
    acme_graph(store)
    [hit] = store.search_nodes(["kb-a"], ["  ACME   corp "], 10)
    assert hit.name == "Acme Corp"
    assert hit.type == "organisation"
    assert hit.description == "Makes anvils."
    assert hit.chunk_ids == ["c1"]
    assert (hit.knowledge_base_id, hit.knowledge_id) == ("kb-a", "doc-a")
    assert hit.exact is True


def test_upsert_is_idempotent(store):
    acme_graph(store)
    acme_graph(store)
    assert len(store.search_nodes(["kb-a"], ["acme corp", "wile e. coyote", "road runner"], 10)) == 3
    [hit] = store.search_nodes(["kb-a"], ["acme corp"], 10)
    assert hit.chunk_ids == ["c1"]
    assert [r.chunk_ids for r in hit.related] == [["c1"]]


def test_a_later_upsert_adds_chunks_fills_blanks_and_never_blanks_or_renames(store):
    acme_graph(store)
    store.upsert(
        DOC_A,
        [
            Entity(name="ACME CORP", type="", description="", chunk_ids=["c3", "c1"]),
            Entity(name="wile e. coyote", description="A hungry coyote.", chunk_ids=["c3"]),
        ],
        [Relation(source="Wile E. Coyote", target="Acme Corp", relation="buys from", chunk_ids=["c3"])],
    )
    acme, coyote = (store.search_nodes(["kb-a"], [name], 10)[0] for name in ("acme corp", "wile e. coyote"))
    assert (acme.name, acme.type, acme.description, acme.chunk_ids) == (
        "Acme Corp",
        "organisation",
        "Makes anvils.",
        ["c1", "c3"],
    )
    assert (coyote.name, coyote.description, coyote.type) == ("Wile E. Coyote", "A hungry coyote.", "person")
    buys = next(r for r in coyote.related if r.relation == "buys from")
    assert buys.chunk_ids == ["c1", "c3"]


def test_duplicates_within_one_upsert_are_merged(store):
    store.upsert(
        DOC_A,
        [Entity(name="Acme", chunk_ids=["c1"]), Entity(name="acme", type="org", chunk_ids=["c2"]), Entity(name=" ")],
        [],
    )
    [hit] = store.search_nodes(["kb-a"], ["acme"], 10)
    assert (hit.name, hit.type, hit.chunk_ids) == ("Acme", "org", ["c1", "c2"])


def test_relations_come_back_in_both_directions(store):
    acme_graph(store)
    [coyote] = store.search_nodes(["kb-a"], ["Wile E. Coyote"], 10)
    assert [(r.relation, r.name, r.outgoing, r.chunk_ids) for r in coyote.related] == [
        ("buys from", "Acme Corp", True, ["c1"]),
        ("chases", "Road Runner", True, ["c2"]),
    ]
    [acme] = store.search_nodes(["kb-a"], ["Acme Corp"], 10)
    assert [(r.relation, r.name, r.outgoing) for r in acme.related] == [("buys from", "Wile E. Coyote", False)]


def test_a_relation_needs_both_ends_and_an_empty_label_becomes_the_default(store):
    store.upsert(
        DOC_A,
        [Entity(name="Alpha"), Entity(name="Beta")],
        [
            Relation(source="Alpha", target="Gamma", relation="knows"),  # Gamma is no node: dropped
            Relation(source="Alpha", target="Alpha", relation="is"),  # a self-loop: dropped
            Relation(source="alpha", target="BETA", relation="  "),
        ],
    )
    [alpha] = store.search_nodes(["kb-a"], ["alpha"], 10)
    assert [(r.relation, r.name, r.outgoing) for r in alpha.related] == [(DEFAULT_RELATION, "Beta", True)]


def test_an_edge_may_reach_a_node_stored_by_an_earlier_upsert(store):
    store.upsert(DOC_A, [Entity(name="Alpha")], [])
    store.upsert(DOC_A, [Entity(name="Beta")], [Relation(source="Beta", target="Alpha", relation="follows")])
    [alpha] = store.search_nodes(["kb-a"], ["alpha"], 10)
    assert [(r.relation, r.name, r.outgoing) for r in alpha.related] == [("follows", "Beta", False)]


def test_contains_matches_in_both_directions_but_not_for_short_names(store):
    store.upsert(
        DOC_A,
        [Entity(name="Apache Kafka"), Entity(name="Kafka"), Entity(name="Email"), Entity(name="AI")],
        [],
    )
    assert [h.name for h in store.search_nodes(["kb-a"], ["kafka"], 10)] == ["Kafka", "Apache Kafka"]
    assert [h.name for h in store.search_nodes(["kb-a"], ["apache kafka cluster"], 10)] == ["Apache Kafka", "Kafka"]
    assert [h.name for h in store.search_nodes(["kb-a"], ["ai"], 10)] == ["AI"]  # not "Email"
    assert [h.exact for h in store.search_nodes(["kb-a"], ["kafka"], 10)] == [True, False]


@pytest.mark.parametrize(
    ("query", "node"),
    [("kafka", "apache kafka"), ("apache kafka cluster", "kafka"), ("ai", "email"), ("email", "ai"), ("x", "x")],
)
def test_matching_is_the_documented_rule(store, query, node):
    store.upsert(DOC_A, [Entity(name=node)], [])
    found = bool(store.search_nodes(["kb-a"], [query], 10))
    assert found is names_match(normalise_name(query), normalise_name(node))


def test_exact_matches_come_first_then_by_name_and_the_limit_holds(store):
    store.upsert(DOC_A, [Entity(name=f"Acme Division {i}") for i in range(5)] + [Entity(name="Acme")], [])
    hits = store.search_nodes(["kb-a"], ["acme"], 3)
    assert [h.name for h in hits] == ["Acme", "Acme Division 0", "Acme Division 1"]


def test_namespaces_isolate_knowledge_bases_and_documents(store):
    acme_graph(store, DOC_A, chunk="a1")
    acme_graph(store, DOC_A2, chunk="a2")
    acme_graph(store, DOC_B, chunk="b1")
    hits = store.search_nodes(["kb-a"], ["acme corp"], 10)
    assert [(h.knowledge_id, h.chunk_ids) for h in hits] == [("doc-a", ["a1"]), ("doc-a2", ["a2"])]
    assert [h.knowledge_base_id for h in store.search_nodes(["kb-b"], ["acme corp"], 10)] == ["kb-b"]
    assert store.search_nodes(["kb-c"], ["acme corp"], 10) == []
    # A relation never crosses namespaces: each document's Acme knows only its own coyote.
    for hit in hits:
        assert [r.chunk_ids for r in hit.related] == [[hit.chunk_ids[0]]]


def test_delete_document_removes_one_namespace_only(store):
    acme_graph(store, DOC_A)
    acme_graph(store, DOC_A2)
    store.delete_document(DOC_A)
    assert [h.knowledge_id for h in store.search_nodes(["kb-a"], ["acme corp", "road runner"], 10)] == [
        "doc-a2",
        "doc-a2",
    ]
    [coyote] = store.search_nodes(["kb-a"], ["wile e. coyote"], 10)
    assert [(r.relation, r.name) for r in coyote.related] == [("buys from", "Acme Corp"), ("chases", "Road Runner")]
    store.delete_document(DOC_A)  # again: nothing left to delete


def test_nothing_to_search_reads_nothing(store):
    acme_graph(store)
    assert store.search_nodes([], ["acme corp"], 10) == []
    assert store.search_nodes(["kb-a"], ["", "  "], 10) == []
    assert store.search_nodes(["kb-a"], ["acme corp"], 0) == []


def test_related_nodes_are_capped(store):
    hub = Entity(name="Hub")
    spokes = [Entity(name=f"Spoke {i:03d}") for i in range(MAX_RELATED_PER_HIT + 5)]
    store.upsert(DOC_A, [hub, *spokes], [Relation(source="Hub", target=s.name, relation="links") for s in spokes])
    [hit] = store.search_nodes(["kb-a"], ["hub"], 1)
    assert len(hit.related) == MAX_RELATED_PER_HIT
    assert hit.related[0].name == "Spoke 000"


def test_names_with_sql_and_cypher_syntax_are_data(store):
    name = "Robert'); DROP TABLE graph_nodes;--\"}) DETACH DELETE n //"
    store.upsert(DOC_A, [Entity(name=name)], [])
    assert [h.name for h in store.search_nodes(["kb-a"], [name], 10)] == [name]
