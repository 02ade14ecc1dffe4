"""The graph in the embedded runtime's SQLite database, in two tables this adapter creates for itself.

``graph_nodes`` and ``graph_edges`` (prefixed: the database is shared with every other store) are keyed by
namespace and normalised name, so an upsert is an ``INSERT OR REPLACE`` after merging with what is stored.
Name matching is done in SQL with ``instr`` on the normalised names (the rule of :mod:`ragline.graph.store`);
the ``(kb, name_norm)`` index narrows a search to the knowledge bases it may read.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

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
    merge_chunk_ids,
    normalise_name,
)
from ragline.store.db import Database

# No foreign keys to documents: the graph is derived data, removed with the document by the caller.
_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS graph_nodes (
        kb TEXT NOT NULL,
        knowledge TEXT NOT NULL,
        name_norm TEXT NOT NULL,
        name TEXT NOT NULL,
        type TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        chunk_ids TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (kb, knowledge, name_norm)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX IF NOT EXISTS graph_nodes_by_name ON graph_nodes(kb, name_norm)",
    """
    CREATE TABLE IF NOT EXISTS graph_edges (
        kb TEXT NOT NULL,
        knowledge TEXT NOT NULL,
        source_norm TEXT NOT NULL,
        target_norm TEXT NOT NULL,
        relation TEXT NOT NULL,
        chunk_ids TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (kb, knowledge, source_norm, target_norm, relation)
    ) WITHOUT ROWID
    """,
    # The primary key serves lookups by source; this one serves the other direction.
    "CREATE INDEX IF NOT EXISTS graph_edges_by_target ON graph_edges(kb, knowledge, target_norm)",
)

_RELATED_SQL = """
    SELECT e.source_norm, e.target_norm, e.relation, e.chunk_ids,
           coalesce(s.name, e.source_norm) AS source_name, coalesce(t.name, e.target_norm) AS target_name
    FROM graph_edges e
    LEFT JOIN graph_nodes s ON s.kb = e.kb AND s.knowledge = e.knowledge AND s.name_norm = e.source_norm
    LEFT JOIN graph_nodes t ON t.kb = e.kb AND t.knowledge = e.knowledge AND t.name_norm = e.target_norm
    WHERE e.kb = ? AND e.knowledge = ? AND (e.source_norm = ? OR e.target_norm = ?)
"""


def _marks(count: int) -> str:
    return ",".join("?" * count)


def _ids(raw: str) -> list[str]:
    loaded = json.loads(raw or "[]")
    return [str(i) for i in loaded] if isinstance(loaded, list) else []


class SqliteGraphStore(GraphStore):
    """The graph tables of the shared :class:`Database`; created on construction, idempotently."""

    def __init__(self, db: Database) -> None:
        """A graph kept in ``db``, its tables created if missing."""
        self._db = db
        for statement in _SCHEMA:
            db.execute(statement)

    def upsert(self, namespace: GraphNamespace, entities: Sequence[Entity], relations: Sequence[Relation]) -> None:
        """Merge the entities and relations into the namespace's nodes and edges, in one transaction."""
        kb, knowledge = namespace.knowledge_base_id, namespace.knowledge_id
        # One transaction: a concurrent upsert of the same document waits and then merges with this one.
        with self._db.transaction() as conn:
            for entity in group_entities(entities):
                self._put_node(conn, kb, knowledge, entity)
            known = {
                row["name_norm"]
                for row in conn.execute(
                    "SELECT name_norm FROM graph_nodes WHERE kb = ? AND knowledge = ?", (kb, knowledge)
                )
            }
            for relation in group_relations(relations):
                source, target = normalise_name(relation.source), normalise_name(relation.target)
                if source in known and target in known:
                    self._put_edge(conn, kb, knowledge, source, target, relation)

    @staticmethod
    def _put_node(conn: sqlite3.Connection, kb: str, knowledge: str, entity: Entity) -> None:
        key = normalise_name(entity.name)
        stored = conn.execute(
            "SELECT name, type, description, chunk_ids FROM graph_nodes WHERE kb = ? AND knowledge = ? AND name_norm = ?",
            (kb, knowledge, key),
        ).fetchone()
        name, node_type, description, chunk_ids = entity.name, entity.type, entity.description, entity.chunk_ids
        if stored is not None:
            name = stored["name"]
            node_type = node_type or stored["type"]
            description = description or stored["description"]
            chunk_ids = merge_chunk_ids(_ids(stored["chunk_ids"]), chunk_ids)
        conn.execute(
            "INSERT OR REPLACE INTO graph_nodes (kb, knowledge, name_norm, name, type, description, chunk_ids)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (kb, knowledge, key, name, node_type, description, json.dumps(chunk_ids, ensure_ascii=False)),
        )

    @staticmethod
    def _put_edge(
        conn: sqlite3.Connection, kb: str, knowledge: str, source: str, target: str, relation: Relation
    ) -> None:
        key = (kb, knowledge, source, target, relation.relation)
        stored = conn.execute(
            "SELECT chunk_ids FROM graph_edges"
            " WHERE kb = ? AND knowledge = ? AND source_norm = ? AND target_norm = ? AND relation = ?",
            key,
        ).fetchone()
        chunk_ids = merge_chunk_ids(_ids(stored["chunk_ids"]) if stored else [], relation.chunk_ids)
        conn.execute(
            "INSERT OR REPLACE INTO graph_edges (kb, knowledge, source_norm, target_norm, relation, chunk_ids)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (*key, json.dumps(chunk_ids, ensure_ascii=False)),
        )

    def search_nodes(self, knowledge_base_ids: Sequence[str], names: Sequence[str], limit: int) -> list[GraphHit]:
        """Nodes of these knowledge bases matching any of ``names``, exact matches first, with their relations."""
        kb_ids = list(dict.fromkeys(knowledge_base_ids))
        wanted = clean_names(names)
        if not kb_ids or not wanted or limit <= 0:
            return []
        # The node name contains a query name long enough to be contained, or the other way round.
        contains: list[str] = []
        contains_params: list[Any] = []
        for name in wanted:
            if len(name) >= MIN_CONTAINED_CHARS:
                contains.append("instr(name_norm, ?) > 0")
                contains_params.append(name)
            contains.append("(length(name_norm) >= ? AND instr(?, name_norm) > 0)")
            contains_params.extend([MIN_CONTAINED_CHARS, name])
        exact_marks = _marks(len(wanted))
        rows = self._db.query(
            "SELECT kb, knowledge, name_norm, name, type, description, chunk_ids,"
            f" name_norm IN ({exact_marks}) AS exact"
            f" FROM graph_nodes WHERE kb IN ({_marks(len(kb_ids))})"
            f" AND (name_norm IN ({exact_marks}) OR {' OR '.join(contains)})"
            " ORDER BY exact DESC, name_norm, kb, knowledge LIMIT ?",
            [*wanted, *kb_ids, *wanted, *contains_params, limit],
        )
        return [self._hit(row) for row in rows]

    def _hit(self, row: sqlite3.Row) -> GraphHit:
        node = row["name_norm"]
        edges = self._db.query(
            f"{_RELATED_SQL} ORDER BY e.relation, CASE WHEN e.source_norm = ? THEN e.target_norm"
            " ELSE e.source_norm END LIMIT ?",
            (row["kb"], row["knowledge"], node, node, node, MAX_RELATED_PER_HIT),
        )
        related = [
            RelatedNode(
                relation=edge["relation"],
                name=edge["target_name"] if edge["source_norm"] == node else edge["source_name"],
                outgoing=edge["source_norm"] == node,
                chunk_ids=_ids(edge["chunk_ids"]),
            )
            for edge in edges
        ]
        return GraphHit(
            name=row["name"],
            type=row["type"],
            description=row["description"],
            chunk_ids=_ids(row["chunk_ids"]),
            knowledge_base_id=row["kb"],
            knowledge_id=row["knowledge"],
            exact=bool(row["exact"]),
            related=related,
        )

    def delete_document(self, namespace: GraphNamespace) -> None:
        """Remove every node and edge of the namespace (a deleted or re-indexed document)."""
        key = (namespace.knowledge_base_id, namespace.knowledge_id)
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM graph_edges WHERE kb = ? AND knowledge = ?", key)
            conn.execute("DELETE FROM graph_nodes WHERE kb = ? AND knowledge = ?", key)
