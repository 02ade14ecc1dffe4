"""Removing documents and knowledge bases everywhere they live.

The knowledge store, the search index, the entity graph and the table store. Both runtimes delete through this one
place.
"""

from __future__ import annotations

import logging
import re

from ragline.graph.store import GraphNamespace, GraphStore
from ragline.ingest.images import delete_images
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.models import Document
from ragline.store.originals import FileOriginalStore, OriginalStore
from ragline.tables.store import TableStore

logger = logging.getLogger(__name__)

# How a kept image's name ends (``<owner>-image-<n>``); a question's images belong to ``q<hex>`` owners.
_IMAGE_SUFFIX = re.compile(r"-image-\d+$")
_QUESTION_OWNER = re.compile(r"q[0-9a-f]{32}")


def sweep_orphaned_originals(originals: FileOriginalStore, knowledge: KnowledgeStore, min_age_s: float) -> int:
    """Removes the kept files no document owns, older than ``min_age_s``; how many went.

    An upload keeps its original (and its images) before it stores the document, in one transaction that a
    kill -9 can cut: the file stays with no document. Half-written files (``.tmp-``) go too; a question's images
    (kept for its message) are left alone.
    """
    removed = 0
    for tenant_id, name in originals.entries_older_than(min_age_s):
        if not name.startswith(".tmp-"):
            owner = _IMAGE_SUFFIX.sub("", name)
            if _QUESTION_OWNER.fullmatch(owner) or knowledge.document(tenant_id, owner) is not None:
                continue
        originals.remove_entry(tenant_id, name)
        removed += 1
    if removed:
        logger.info("removed %d kept files that no document owns", removed)
    return removed


class KnowledgeRemoval:
    """Deletes documents and knowledge bases from every store that holds them."""

    def __init__(
        self,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        graph: GraphStore | None = None,
        tables: TableStore | None = None,
        originals: OriginalStore | None = None,
    ) -> None:
        """A remover over the stores given; a store not given (None) holds nothing to remove."""
        self._knowledge = knowledge
        self._engine = engine
        self._graph = graph
        self._tables = tables
        self._originals = originals

    def delete_document(self, tenant_id: str, document_id: str) -> Document | None:
        """The document removed (None: not this tenant's).

        The index goes first: a document half deleted must never be found by a search whose chunks are gone.
        """
        document = self._knowledge.document(tenant_id, document_id)
        if document is None:
            return None
        self._engine.delete_document(document.id)
        if self._graph is not None:
            self._graph.delete_document(
                GraphNamespace(knowledge_base_id=document.knowledge_base_id, knowledge_id=document.id)
            )
        if self._tables is not None:
            self._tables.delete(document.id)
        if not self._knowledge.delete_document(tenant_id, document.id):
            return None
        if self._originals is not None:
            self._originals.delete(tenant_id, document.id)
            delete_images(self._originals, tenant_id, document.id)
        logger.info("document deleted", extra={"document_id": document.id})
        return document

    def forget_graph(self, document: Document) -> None:
        """The entities and relations extracted from a document (before it is parsed again)."""
        if self._graph is not None:
            self._graph.delete_document(
                GraphNamespace(knowledge_base_id=document.knowledge_base_id, knowledge_id=document.id)
            )

    def delete_chunk(self, tenant_id: str, chunk_id: str) -> bool:
        """One chunk, from the index first, then the store."""
        if not self._knowledge.chunks(tenant_id, [chunk_id]):
            return False
        self._engine.delete_chunks([chunk_id])
        return self._knowledge.delete_chunk(tenant_id, chunk_id)

    def clear_knowledge_base(self, tenant_id: str, kb_id: str) -> int:
        """Every document of the knowledge base removed, the knowledge base kept; how many went."""
        documents = self._knowledge.documents(tenant_id, kb_id, limit=1_000_000)
        return sum(1 for d in documents if self.delete_document(tenant_id, d.id) is not None)

    def delete_knowledge_base(self, tenant_id: str, kb_id: str) -> bool:
        """Remove a knowledge base and everything of it; False when it is not this tenant's."""
        if self._knowledge.knowledge_base(tenant_id, kb_id) is None:
            return False
        self.clear_knowledge_base(tenant_id, kb_id)
        return self._knowledge.delete_knowledge_base(tenant_id, kb_id)
