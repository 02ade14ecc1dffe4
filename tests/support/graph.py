"""A small entity graph the graph-store tests write: a company, a coyote that buys from it, a road runner."""

from typing import Any

from ragline.graph.store import Entity, GraphNamespace, Relation

DOC_A = GraphNamespace(knowledge_base_id="kb-a", knowledge_id="doc-a")
DOC_A2 = GraphNamespace(knowledge_base_id="kb-a", knowledge_id="doc-a2")
DOC_B = GraphNamespace(knowledge_base_id="kb-b", knowledge_id="doc-b")


def acme_graph(store: Any, namespace: GraphNamespace = DOC_A, chunk: str = "c1") -> None:
    store.upsert(
        namespace,
        [
            Entity(name="Acme Corp", type="organisation", description="Makes anvils.", chunk_ids=[chunk]),
            Entity(name="Wile E. Coyote", type="person", chunk_ids=[chunk]),
            Entity(name="Road Runner", type="animal", chunk_ids=["c2"]),
        ],
        [
            Relation(source="Wile E. Coyote", target="Acme Corp", relation="buys from", chunk_ids=[chunk]),
            Relation(source="Wile E. Coyote", target="road runner", relation="chases", chunk_ids=["c2"]),
        ],
    )
