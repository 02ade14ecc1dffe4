"""The knowledge graph: entities and relations extracted from documents, searched by name beside chunks.

The port and its types live in :mod:`ragline.graph.store`; the adapters in :mod:`ragline.graph.sqlite`
(embedded, the default) and :mod:`ragline.graph.neo4j` are imported by the wiring only.
"""

from ragline.graph.extract import GraphExtractor, heuristic_entities, parse_entity_names, parse_graph
from ragline.graph.ingest import GraphIndexer, GraphIndexResult
from ragline.graph.store import (
    DEFAULT_RELATION,
    MAX_RELATED_PER_HIT,
    MIN_CONTAINED_CHARS,
    Entity,
    GraphHit,
    GraphNamespace,
    GraphStore,
    RelatedNode,
    Relation,
    names_match,
    normalise_name,
)

__all__ = [
    "DEFAULT_RELATION",
    "MAX_RELATED_PER_HIT",
    "MIN_CONTAINED_CHARS",
    "Entity",
    "GraphExtractor",
    "GraphHit",
    "GraphIndexResult",
    "GraphIndexer",
    "GraphNamespace",
    "GraphStore",
    "RelatedNode",
    "Relation",
    "heuristic_entities",
    "names_match",
    "normalise_name",
    "parse_entity_names",
    "parse_graph",
]
