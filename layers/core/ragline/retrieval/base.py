"""The retrieval engine port: ranked vector hits and ranked keyword hits for one knowledge-base group."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ragline.store.models import Chunk, Document
from ragline.types import SearchResult


@dataclass
class RetrieveParams:
    query: str
    knowledge_base_ids: list[str]
    # The caller's tenant: engines return only its chunks, whatever knowledge base ids they are given.
    tenant_id: str = ""
    query_embedding: npt.NDArray[np.float32] | None = None
    embedding_model: str = ""
    knowledge_ids: list[str] = field(default_factory=list)
    tag_ids: list[str] = field(default_factory=list)
    match_count: int = 0
    vector_threshold: float = 0.0
    keyword_threshold: float = 0.0
    vector_enabled: bool = True
    keyword_enabled: bool = True


class RetrieveEngine(Protocol):
    """Returns hits best first. Vector scores are cosine similarities; keyword scores are raw engine scores
    (higher is better) that fusion normalises."""

    def vector_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]: ...

    def keyword_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]: ...

    def index_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None: ...

    def delete_document(self, knowledge_id: str) -> int:
        """Stops matching the document's chunks; returns how many index entries went (0 for an engine whose
        entries live with the chunks and go with them)."""
        ...

    def reindex_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """Chunks already indexed, indexed again as they are now (their text or enabled flag changed)."""
        ...

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """Stops matching these chunks (0 for an engine whose entries go with the chunks' rows)."""
        ...
