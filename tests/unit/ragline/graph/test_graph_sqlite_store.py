"""SqliteGraphStore's storage: its tables and rows. What it finds is the graph contract in
tests/integration/test_graph_contract.py, run on SQLite and on a real Neo4j."""

import pytest

from ragline.graph.sqlite import SqliteGraphStore
from ragline.graph.store import (
    DEFAULT_RELATION,
    Entity,
    Relation,
)
from tests.support.graph import DOC_A, DOC_A2, acme_graph


@pytest.fixture
def store(db):
    return SqliteGraphStore(db)


def table_count(db, table):
    return db.query_one(f"SELECT count(*) AS n FROM {table}")["n"]


def test_tables_and_indexes_are_created_once_and_survive_a_second_store(db, store):
    acme_graph(store)
    again = SqliteGraphStore(db)  # CREATE ... IF NOT EXISTS: nothing is dropped or duplicated
    names = {row["name"] for row in db.query("SELECT name FROM sqlite_master")}
    assert {"graph_nodes", "graph_edges", "graph_nodes_by_name", "graph_edges_by_target"} <= names
    assert [h.name for h in again.search_nodes(["kb-a"], ["acme corp"], 10)] == ["Acme Corp"]


def test_upsert_is_idempotent(db, store):
    acme_graph(store)
    acme_graph(store)
    assert table_count(db, "graph_nodes") == 3
    assert table_count(db, "graph_edges") == 2
    [hit] = store.search_nodes(["kb-a"], ["acme corp"], 10)
    assert hit.chunk_ids == ["c1"]
    assert [r.chunk_ids for r in hit.related] == [["c1"]]


def test_duplicates_within_one_upsert_are_merged(db, store):
    store.upsert(
        DOC_A,
        [Entity(name="Acme", chunk_ids=["c1"]), Entity(name="acme", type="org", chunk_ids=["c2"]), Entity(name=" ")],
        [],
    )
    assert table_count(db, "graph_nodes") == 1
    [hit] = store.search_nodes(["kb-a"], ["acme"], 10)
    assert (hit.name, hit.type, hit.chunk_ids) == ("Acme", "org", ["c1", "c2"])


def test_a_relation_needs_both_ends_and_an_empty_label_becomes_the_default(db, store):
    store.upsert(
        DOC_A,
        [Entity(name="Alpha"), Entity(name="Beta")],
        [
            Relation(source="Alpha", target="Gamma", relation="knows"),  # Gamma is no node: dropped
            Relation(source="Alpha", target="Alpha", relation="is"),  # a self-loop: dropped
            Relation(source="alpha", target="BETA", relation="  "),
        ],
    )
    rows = db.query("SELECT source_norm, target_norm, relation FROM graph_edges")
    assert [tuple(row) for row in rows] == [("alpha", "beta", DEFAULT_RELATION)]


def test_delete_document_removes_one_namespace_only(db, store):
    acme_graph(store, DOC_A)
    acme_graph(store, DOC_A2)
    store.delete_document(DOC_A)
    assert [h.knowledge_id for h in store.search_nodes(["kb-a"], ["acme corp", "road runner"], 10)] == [
        "doc-a2",
        "doc-a2",
    ]
    assert db.query_one("SELECT count(*) AS n FROM graph_edges WHERE knowledge = 'doc-a'")["n"] == 0
    assert table_count(db, "graph_edges") == 2
