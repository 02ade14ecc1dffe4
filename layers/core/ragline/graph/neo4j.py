"""The graph in Neo4j, through the official ``neo4j`` driver.

Nodes are ``:Entity`` with ``{kb, knowledge, name, name_norm, type, description, chunk_ids}``; edges are
``:RELATES {relation, chunk_ids}`` between nodes of the same namespace. Every statement is a constant with
``$parameters``: names come from users and models, and nothing they write is ever spliced into Cypher.

Normalised names are computed here, in Python, for both writes and searches, so matching is exactly the
rule of :mod:`ragline.graph.store` whatever Neo4j's own case folding would do. Relations of a hit come
from a pattern comprehension (the same syntax on Neo4j 4.4 and 5) and are ordered and capped here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, LiteralString

from neo4j import Driver, GraphDatabase, ManagedTransaction

from ragline.graph.store import (
    MAX_RELATED_PER_HIT,
    MIN_CONTAINED_CHARS,
    Entity,
    GraphHit,
    GraphNamespace,
    GraphStore,
    RelatedNode,
    Relation,
    clean_names,
    group_entities,
    group_relations,
    normalise_name,
)

# Created once per store, before its first statement. The first serves searches (knowledge bases, then a
# name); the second serves MERGE and DETACH DELETE, which look nodes up by namespace.
CREATE_INDEXES: tuple[LiteralString, ...] = (
    "CREATE INDEX entity_kb_name IF NOT EXISTS FOR (n:Entity) ON (n.kb, n.name_norm)",
    "CREATE INDEX entity_namespace IF NOT EXISTS FOR (n:Entity) ON (n.kb, n.knowledge, n.name_norm)",
)

# A later upsert fills an empty type or description, never blanks one, and adds only new chunk ids.
UPSERT_NODES: LiteralString = """
UNWIND $entities AS entity
MERGE (n:Entity {kb: $kb, knowledge: $knowledge, name_norm: entity.name_norm})
ON CREATE SET n.name = entity.name, n.type = '', n.description = ''
SET n.type = CASE WHEN entity.type <> '' THEN entity.type ELSE n.type END,
    n.description = CASE WHEN entity.description <> '' THEN entity.description ELSE n.description END,
    n.chunk_ids = coalesce(n.chunk_ids, []) + [c IN entity.chunk_ids WHERE NOT c IN coalesce(n.chunk_ids, [])]
""".strip()

# MATCH, not MERGE, on the ends: a relation to a node that does not exist is dropped, as the port says.
UPSERT_EDGES: LiteralString = """
UNWIND $relations AS rel
MATCH (s:Entity {kb: $kb, knowledge: $knowledge, name_norm: rel.source_norm})
MATCH (t:Entity {kb: $kb, knowledge: $knowledge, name_norm: rel.target_norm})
MERGE (s)-[r:RELATES {relation: rel.relation}]->(t)
SET r.chunk_ids = coalesce(r.chunk_ids, []) + [c IN rel.chunk_ids WHERE NOT c IN coalesce(r.chunk_ids, [])]
""".strip()

SEARCH_NODES: LiteralString = """
MATCH (n:Entity)
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
ORDER BY exact DESC, name_norm, kb, knowledge
""".strip()

DELETE_DOCUMENT: LiteralString = "MATCH (n:Entity {kb: $kb, knowledge: $knowledge}) DETACH DELETE n"

Statement = tuple[LiteralString, dict[str, Any]]


def _run_statements(tx: ManagedTransaction, statements: Sequence[Statement]) -> None:
    for query, parameters in statements:
        tx.run(query, parameters).consume()


def _fetch(tx: ManagedTransaction, query: LiteralString, parameters: dict[str, Any]) -> list[dict[str, Any]]:
    # Records must be read inside the transaction function: the result is gone once it returns.
    return tx.run(query, parameters).data()


def _str_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _related(raw: object) -> list[RelatedNode]:
    """Relations as the port returns them: by relation, then by the other node's name, capped."""
    items = [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
    items.sort(key=lambda item: (str(item.get("relation") or ""), str(item.get("name_norm") or "")))
    return [
        RelatedNode(
            relation=str(item.get("relation") or ""),
            name=str(item.get("name") or ""),
            outgoing=bool(item.get("outgoing")),
            chunk_ids=_str_list(item.get("chunk_ids")),
        )
        for item in items[:MAX_RELATED_PER_HIT]
    ]


class Neo4jGraphStore(GraphStore):
    """A :class:`GraphStore` on a Neo4j database (``database=None``: the server's default database).

    ``driver`` is for tests and for sharing one driver between stores; the store closes only a driver it
    created itself.
    """

    def __init__(
        self,
        uri: str,
        user: str,
        password: str,
        database: str | None = None,
        *,
        driver: Driver | None = None,
    ) -> None:
        """A store on the Neo4j server at ``uri`` (or on ``driver``, which the caller then owns and closes)."""
        self._owns_driver = driver is None
        self._driver = driver if driver is not None else GraphDatabase.driver(uri, auth=(user, password))
        self._database = database
        self._schema_lock = threading.Lock()
        self._schema_ready = False

    def _ensure_schema(self) -> None:
        """Indexes before the first statement, once per store.

        Not in the constructor, so building the container never waits on the network.
        """
        if self._schema_ready:
            return
        with self._schema_lock:
            if self._schema_ready:
                return
            with self._driver.session(database=self._database) as session:
                for statement in CREATE_INDEXES:
                    # Schema statements run in their own auto-commit transactions: Neo4j refuses to mix
                    # them with data writes.
                    session.run(statement).consume()
            self._schema_ready = True

    def upsert(self, namespace: GraphNamespace, entities: Sequence[Entity], relations: Sequence[Relation]) -> None:
        """Merge the entities and relations into the namespace's nodes and edges, in one write transaction."""
        grouped = group_entities(entities)
        edges = group_relations(relations)
        if not grouped and not edges:
            return
        self._ensure_schema()
        where = {"kb": namespace.knowledge_base_id, "knowledge": namespace.knowledge_id}
        statements: list[Statement] = []
        if grouped:
            rows = [
                {
                    "name_norm": normalise_name(entity.name),
                    "name": entity.name,
                    "type": entity.type,
                    "description": entity.description,
                    "chunk_ids": entity.chunk_ids,
                }
                for entity in grouped
            ]
            statements.append((UPSERT_NODES, {**where, "entities": rows}))
        if edges:
            rows = [
                {
                    "source_norm": normalise_name(edge.source),
                    "target_norm": normalise_name(edge.target),
                    "relation": edge.relation,
                    "chunk_ids": edge.chunk_ids,
                }
                for edge in edges
            ]
            statements.append((UPSERT_EDGES, {**where, "relations": rows}))
        # Nodes and edges in one transaction: an edge is never written without the upsert of its ends.
        with self._driver.session(database=self._database) as session:
            session.execute_write(_run_statements, statements)

    def search_nodes(self, knowledge_base_ids: Sequence[str], names: Sequence[str], limit: int) -> list[GraphHit]:
        """Nodes of these knowledge bases matching any of ``names``, exact matches first, with their relations."""
        kb_ids = list(dict.fromkeys(knowledge_base_ids))
        wanted = clean_names(names)
        if not kb_ids or not wanted or limit <= 0:
            return []
        self._ensure_schema()
        parameters = {"kb_ids": kb_ids, "names": wanted, "min_chars": MIN_CONTAINED_CHARS, "max_nodes": limit}
        with self._driver.session(database=self._database) as session:
            records = session.execute_read(_fetch, SEARCH_NODES, parameters)
        return [
            GraphHit(
                name=str(record.get("name") or ""),
                type=str(record.get("type") or ""),
                description=str(record.get("description") or ""),
                chunk_ids=_str_list(record.get("chunk_ids")),
                knowledge_base_id=str(record.get("kb") or ""),
                knowledge_id=str(record.get("knowledge") or ""),
                exact=bool(record.get("exact")),
                related=_related(record.get("related")),
            )
            for record in records
        ]

    def delete_document(self, namespace: GraphNamespace) -> None:
        """Remove every node and edge of the namespace (a deleted or re-indexed document)."""
        self._ensure_schema()
        parameters = {"kb": namespace.knowledge_base_id, "knowledge": namespace.knowledge_id}
        with self._driver.session(database=self._database) as session:
            session.execute_write(_run_statements, [(DELETE_DOCUMENT, parameters)])

    def close(self) -> None:
        """Close the driver when this store opened it."""
        if self._owns_driver:
            self._driver.close()
