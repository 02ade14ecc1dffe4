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
    """What one search asks an engine: the query, where to look, and the thresholds fusion will apply."""

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


def keyword_divisor(best: float) -> float:
    """What a keyword list's scores are divided by so its best hit scores 1.

    The best score, unless it is not positive or already 1 (see
    :func:`ragline.retrieval.hybrid.normalize_keyword_scores`).
    """
    return best if best > 0 and best != 1 else 1.0


class RetrieveEngine(Protocol):
    """Returns hits best first.

    Vector scores are cosine similarities; keyword scores are raw engine scores (higher is better) that fusion
    normalises.

    An engine may leave out hits that hybrid search drops anyway, before building them: vector hits scoring
    below ``params.vector_threshold``, and keyword hits whose score divided by :func:`keyword_divisor` of the
    best returned hit's is below ``params.keyword_threshold``.
    """

    def vector_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The ``top_k`` chunks nearest ``params.query_embedding`` (cosine), best first."""
        ...

    def keyword_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The ``top_k`` best keyword matches of ``params.query``, best first (raw engine scores)."""
        ...

    def index_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """Make searchable chunks findable: keyword entries and one vector per row of ``vectors``."""
        ...

    def index_questions(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunk: Chunk,
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """Extra vectors of one indexed chunk, one per question generated for it (replacing any it had).

        A vector search close to one of them finds the chunk, scored by its best vector. Keyword search does
        not read them.
        """
        ...

    def delete_document(self, knowledge_id: str) -> int:
        """Stops matching the document's chunks.

        Returns how many index entries went (0 for an engine whose entries live with the chunks and go with them).
        """
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
