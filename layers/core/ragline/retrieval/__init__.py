"""Retrieval engines and the seed's HybridSearch fusion."""

from ragline.retrieval.base import RetrieveEngine, RetrieveParams
from ragline.retrieval.hybrid import fuse, hybrid_search, pool_size

__all__ = ["RetrieveEngine", "RetrieveParams", "fuse", "hybrid_search", "pool_size"]
