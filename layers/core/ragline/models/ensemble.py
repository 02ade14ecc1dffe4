"""Two embedders read as one vector space: each text's vector is both models' vectors side by side.

Each part is scaled by the square root of its weight, so the dot product of two such vectors is the weighted sum
of the two models' cosines, and the vector stays L2-normalised (the weights sum to 1). Every store and engine
sees one model of ``dimensions`` = the sum of the parts', with no second vector per chunk; the exact vector search,
the knowledge base's background (its centroid) and the fusion work on it unchanged.

The parts are the registry's own instances (one MiniLM in the process, whatever reads through it). A query's parts
run at once (bench/query_embedding.py: MiniLM + bge-small-en p50 9.4 ms, MiniLM alone 9.3, one after the other
15.9); a document batch's run in turn, each part on its own threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ragline.models.base import Embedder
from ragline.models.pools import PoolsByPriority


class EnsembleEmbedder:
    """The weighted concatenation of its parts' vectors (weights sum to 1)."""

    def __init__(self, model_id: str, parts: Sequence[tuple[Callable[[], Embedder], float]]) -> None:
        """``parts``: (the part's factory, its weight); built now, so ``dimensions`` is known."""
        total = sum(weight for _, weight in parts)
        if len(parts) < 2 or total <= 0 or any(weight <= 0 for _, weight in parts):
            raise ValueError("an ensemble needs two or more parts of positive weight")
        self.model_id = model_id
        self._parts = [(factory(), math.sqrt(weight / total)) for factory, weight in parts]
        self.dimensions = sum(part.dimensions for part, _ in self._parts)
        # A query's other parts run on threads at the asker's priority (a search's, or a lowered background job's).
        self._pools = PoolsByPriority(len(self._parts) - 1, "ensemble-query")

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Each part embeds every text in turn (each part runs its own batches on its threads)."""
        blocks = [scale * part.embed_documents(texts) for part, scale in self._parts]
        return np.hstack(blocks).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Each part's query vector (with its own instruction and cache), side by side; the parts run at once."""
        first, *others = self._parts
        pool = self._pools.get()
        pending = [pool.submit(part.embed_query, text) for part, _ in others]
        vectors = [first[0].embed_query(text), *(future.result() for future in pending)]
        return np.concatenate([scale * vector for (_, scale), vector in zip(self._parts, vectors, strict=True)]).astype(
            np.float32, copy=False
        )
