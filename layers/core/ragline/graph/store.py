"""The graph store port: entities and relations extracted from documents, found again by name.

Everything lives in a namespace, a (knowledge base, document) pair, as in the reference design's
``NameSpace{KnowledgeBase, Knowledge}``: the same name in two documents is two nodes, so deleting or
re-indexing a document touches nothing else, and a search names the knowledge bases it may read.

Name matching (every adapter matches alike, on :func:`normalise_name` of both sides):
- exact: the normalised names are equal;
- contains: one normalised name contains the other, provided the contained one has at least
  :data:`MIN_CONTAINED_CHARS` characters, so "kafka" finds "apache kafka" and "apache kafka cluster" finds
  "apache kafka", while a stray "ai" does not find "email".
Exact hits come first. Each hit carries its relations in both directions.

Adapters: :class:`ragline.graph.sqlite.SqliteGraphStore` (embedded, the default) and
:class:`ragline.graph.neo4j.Neo4jGraphStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

# Below this length a name is matched exactly only: short names are substrings of too many others.
MIN_CONTAINED_CHARS = 3
# What a relation without a label is stored as: the passage links the two, it did not say how.
DEFAULT_RELATION = "related_to"
# Relations returned per hit: a hub node can have thousands, and a hit only needs its neighbourhood.
MAX_RELATED_PER_HIT = 50


def normalise_name(name: str) -> str:
    """The matching key of a name: whitespace collapsed, case folded ("Apache  Kafka" → "apache kafka")."""
    return " ".join(name.split()).casefold()


def names_match(query_norm: str, node_norm: str) -> bool:
    """The matching rule of the module docstring, on normalised names; adapters that filter in Python use it."""
    if not query_norm or not node_norm:
        return False
    if query_norm == node_norm:
        return True
    if len(query_norm) >= MIN_CONTAINED_CHARS and query_norm in node_norm:
        return True
    return len(node_norm) >= MIN_CONTAINED_CHARS and node_norm in query_norm


class GraphNamespace(BaseModel):
    """Where a document's graph lives: its knowledge base and the document (``knowledge``) itself."""

    model_config = ConfigDict(frozen=True)

    knowledge_base_id: str
    knowledge_id: str


class Entity(BaseModel):
    """A node to store; ``chunk_ids`` are the passages that mention it."""

    name: str
    type: str = ""
    description: str = ""
    chunk_ids: list[str] = Field(default_factory=list)


class Relation(BaseModel):
    """A directed edge between two entities of the same namespace, by name."""

    source: str
    target: str
    relation: str = DEFAULT_RELATION
    chunk_ids: list[str] = Field(default_factory=list)


class RelatedNode(BaseModel):
    """One relation of a hit, seen from the hit: ``outgoing`` when the hit is the relation's source."""

    relation: str
    name: str
    outgoing: bool = True
    chunk_ids: list[str] = Field(default_factory=list)


class GraphHit(BaseModel):
    """A node whose name matched, with where it lives and what it is related to."""

    name: str
    type: str = ""
    description: str = ""
    chunk_ids: list[str] = Field(default_factory=list)
    knowledge_base_id: str
    knowledge_id: str
    exact: bool = True
    related: list[RelatedNode] = Field(default_factory=list)


class GraphStore(Protocol):
    """Entities and relations per :class:`GraphNamespace`. Calls block; async callers use a thread."""

    def upsert(self, namespace: GraphNamespace, entities: Sequence[Entity], relations: Sequence[Relation]) -> None:
        """Add or update nodes and edges of one namespace; idempotent.

        A node is keyed by its normalised name: a later upsert replaces a non-empty type or description,
        keeps the first display name and adds its chunk ids to those already stored. An edge is keyed by
        (source, target, relation) and gathers chunk ids the same way. A relation whose source or target is
        not a node of the namespace (after this upsert's entities) is dropped: an edge needs both ends.
        """
        ...

    def search_nodes(self, knowledge_base_ids: Sequence[str], names: Sequence[str], limit: int) -> list[GraphHit]:
        """Nodes of these knowledge bases matching any of ``names``, exact matches first.

        Nodes of these knowledge bases matching any of ``names`` (see the module docstring), exact matches first, then
        by normalised name and namespace; at most ``limit``, each with at most :data:`MAX_RELATED_PER_HIT` relations
        (ordered by relation, then by the other node's name).
        """
        ...

    def delete_document(self, namespace: GraphNamespace) -> None:
        """Every node and edge of the namespace (a deleted or re-indexed document)."""
        ...


def clean_relation(relation: str) -> str:
    """A relation label as stored: whitespace collapsed, :data:`DEFAULT_RELATION` when empty."""
    return " ".join(relation.split()) or DEFAULT_RELATION


def clean_names(names: Sequence[str]) -> list[str]:
    """Normalised, non-empty, each once, in the given order: what a search compares."""
    return list(dict.fromkeys(n for n in (normalise_name(name) for name in names) if n))


def merge_chunk_ids(stored: Sequence[str], added: Sequence[str]) -> list[str]:
    """``stored`` then the new ids of ``added``, each once: re-upserting the same chunk changes nothing."""
    return list(dict.fromkeys([*stored, *added]))


def group_entities(entities: Sequence[Entity]) -> list[Entity]:
    """One entity per normalised name, as an upsert applies them.

    The first display name, the first non-empty type and description, the union of chunk ids. Nameless entities are
    dropped.
    """
    grouped: dict[str, Entity] = {}
    for entity in entities:
        key = normalise_name(entity.name)
        if not key:
            continue
        seen = grouped.get(key)
        if seen is None:
            grouped[key] = Entity(
                name=" ".join(entity.name.split()),
                type=entity.type.strip(),
                description=entity.description.strip(),
                chunk_ids=merge_chunk_ids([], entity.chunk_ids),
            )
            continue
        seen.type = seen.type or entity.type.strip()
        seen.description = seen.description or entity.description.strip()
        seen.chunk_ids = merge_chunk_ids(seen.chunk_ids, entity.chunk_ids)
    return list(grouped.values())


def group_relations(relations: Sequence[Relation]) -> list[Relation]:
    """One relation per (source, target, label), chunk ids united; self-loops and nameless ends dropped."""
    grouped: dict[tuple[str, str, str], Relation] = {}
    for relation in relations:
        source, target = normalise_name(relation.source), normalise_name(relation.target)
        if not source or not target or source == target:
            continue
        label = clean_relation(relation.relation)
        key = (source, target, label)
        seen = grouped.get(key)
        if seen is None:
            grouped[key] = Relation(
                source=relation.source,
                target=relation.target,
                relation=label,
                chunk_ids=merge_chunk_ids([], relation.chunk_ids),
            )
        else:
            seen.chunk_ids = merge_chunk_ids(seen.chunk_ids, relation.chunk_ids)
    return list(grouped.values())
