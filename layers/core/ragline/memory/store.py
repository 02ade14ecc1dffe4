"""The memory store port: one user's memories, deduplicated on write and ranked for a question.

Adapters: :class:`~ragline.memory.sqlite.SqliteMemoryStore` (embedded runtime) and
:class:`~ragline.memory.dynamodb.DynamoMemoryStore` (AWS). Both keep every user's memories few enough
(:data:`MAX_MEMORIES_PER_USER`) to load them all and rank them in numpy: a vector index would cost more
than it saves at that size, and the same ranking code then runs on both backends.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np
import numpy.typing as npt

from ragline.memory.models import Memory
from ragline.memory.text import keyword_overlap, keywords, normalise_memory
from ragline.store.ids import utc_now

# Each user keeps at most this many memories; adding one more evicts the least recently confirmed.
# It bounds what a question loads (200 memories of 384 floats is ~300 KB) and what it ranks.
MAX_MEMORIES_PER_USER = 200
# A read loads up to this many: concurrent writers may overshoot the cap until the next add evicts.
LOAD_LIMIT = 2 * MAX_MEMORIES_PER_USER
# Cosine at or above which a new memory restates an existing one ("works at Acme" / "works for Acme").
DUPLICATE_SIMILARITY = 0.95

Memories = list[Memory]
ScoredMemories = list[tuple[Memory, float]]
VectorLike = Sequence[float] | npt.NDArray[np.float32]


def as_vector(vector: VectorLike | None) -> list[float] | None:
    """A vector as a plain list of floats (as stored), or None."""
    if vector is None:
        return None
    return [float(x) for x in np.asarray(vector, dtype=np.float32).ravel()]


def vector_bytes(vector: Sequence[float]) -> bytes:
    """float32, native order: 384 dimensions are 1.5 KB instead of ~8 KB of JSON."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def vector_from_bytes(raw: bytes | None) -> list[float] | None:
    """A vector read back from :func:`vector_bytes`; None for no bytes."""
    if not raw:
        return None
    return [float(x) for x in np.frombuffer(raw, dtype=np.float32)]


def _comparable(memory: Memory, dimensions: int, embedding_model: str) -> bool:
    """A vector from another model (or of another size) would give a meaningless cosine."""
    if memory.vector is None or len(memory.vector) != dimensions:
        return False
    return not embedding_model or not memory.embedding_model or memory.embedding_model == embedding_model


def cosine_scores(memories: Sequence[Memory], query_vector: VectorLike | None, embedding_model: str) -> list[float]:
    """Cosine of each memory's vector with the query; 0 where the memory has no comparable vector."""
    scores = [0.0] * len(memories)
    if query_vector is None:
        return scores
    query = np.asarray(query_vector, dtype=np.float32).ravel()
    query_norm = float(np.linalg.norm(query))
    if query_norm == 0.0:
        return scores
    rows = [i for i, memory in enumerate(memories) if _comparable(memory, query.size, embedding_model)]
    if not rows:
        return scores
    matrix = np.asarray([memories[i].vector for i in rows], dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0.0] = 1.0
    # Embedders return unit vectors, but stored vectors round-trip through float32: divide anyway.
    cosines = (matrix @ query) / (norms * query_norm)
    for i, cosine in zip(rows, cosines.tolist(), strict=True):
        scores[i] = float(cosine)
    return scores


# At most this many other models' embeddings of one question: each is a model call.
MAX_OTHER_MODELS = 2


def _score_other_models(
    memories: Sequence[Memory],
    cosines: list[float],
    embedding_model: str,
    query_vector_of: Callable[[str], VectorLike | None],
) -> None:
    """Fill in ``cosines`` for the memories of models other than ``embedding_model``, most common model first."""
    counts: dict[str, int] = {}
    for memory in memories:
        if memory.vector is not None and memory.embedding_model and memory.embedding_model != embedding_model:
            counts[memory.embedding_model] = counts.get(memory.embedding_model, 0) + 1
    for model in sorted(counts, key=lambda m: (-counts[m], m))[:MAX_OTHER_MODELS]:
        vector = query_vector_of(model)
        if vector is None:
            continue
        rows = [i for i, memory in enumerate(memories) if memory.embedding_model == model]
        for i, cosine in zip(rows, cosine_scores([memories[i] for i in rows], vector, model), strict=True):
            cosines[i] = cosine


def find_duplicate(existing: Sequence[Memory], candidate: Memory) -> Memory | None:
    """The stored memory that ``candidate`` restates.

    Same normalised text, else the most similar vector at or above :data:`DUPLICATE_SIMILARITY`.
    """
    key = normalise_memory(candidate.content)
    for memory in existing:
        if normalise_memory(memory.content) == key:
            return memory
    if candidate.vector is None:
        return None
    scores = cosine_scores(existing, candidate.vector, candidate.embedding_model)
    best = max(range(len(existing)), key=lambda i: scores[i], default=None)
    if best is None or scores[best] < DUPLICATE_SIMILARITY:
        return None
    return existing[best]


def _newest_first(memories: Sequence[Memory]) -> Memories:
    return sorted(memories, key=lambda m: (m.updated_at, m.id), reverse=True)


class MemoryStore(ABC):
    """Per-user memories. Every call takes the tenant and the user: another user's memory reads as absent.

    Adapters provide the storage primitives; deduplication, eviction and ranking are shared here so both
    backends behave the same.
    """

    def add(self, memory: Memory, vector: VectorLike | None = None) -> Memory:
        """Store ``memory`` (with ``vector`` when given), or update the memory it restates.

        A restatement keeps the stored id and creation time and takes the new wording, sources and vector.
        Whitespace in the content is collapsed. Returns what is stored.
        """
        content = " ".join(memory.content.split())
        if not content:
            raise ValueError("a memory needs content")
        candidate = memory.model_copy(
            update={"content": content, "vector": as_vector(vector) if vector is not None else memory.vector}
        )
        with self._writing():
            existing = self._load(memory.tenant_id, memory.user_id)
            duplicate = find_duplicate(existing, candidate)
            if duplicate is not None:
                updated = duplicate.model_copy(
                    update={
                        "content": candidate.content,
                        "source_session_id": candidate.source_session_id or duplicate.source_session_id,
                        "source_message_id": candidate.source_message_id or duplicate.source_message_id,
                        "updated_at": utc_now(),
                        "vector": candidate.vector if candidate.vector is not None else duplicate.vector,
                        "embedding_model": candidate.embedding_model
                        if candidate.vector is not None
                        else duplicate.embedding_model,
                    }
                )
                self._put(updated)
                return updated
            self._put(candidate)
            overflow = _newest_first([*existing, candidate])[MAX_MEMORIES_PER_USER:]
            if overflow:
                self._remove(memory.tenant_id, memory.user_id, [m.id for m in overflow])
        return candidate

    def list(self, tenant_id: str, user_id: str) -> Memories:
        """The user's memories, most recently confirmed first."""
        return _newest_first(self._load(tenant_id, user_id))

    def search(
        self,
        tenant_id: str,
        user_id: str,
        query_vector: VectorLike | None,
        query_text: str,
        top_k: int,
        embedding_model: str = "",
        query_vector_of: Callable[[str], VectorLike | None] | None = None,
    ) -> ScoredMemories:
        """The user's memories best matching a question, best first, with scores in 0..1.

        A memory's score is the larger of its vector cosine and its keyword overlap with the question:
        either is evidence on its own, and a memory stored without a vector (no embedder, another model)
        still ranks by its words on the same scale. Memories scoring 0 are left out.

        ``query_vector`` is the question embedded by ``embedding_model``. Memories another model embedded
        (stored before the default model changed) are compared with ``query_vector_of(their model)``, the
        question embedded by that model, when it gives one; otherwise they rank by their words alone.
        """
        if top_k <= 0:
            return []
        memories = self._load(tenant_id, user_id)
        if not memories:
            return []
        query_keywords = keywords(query_text)
        cosines = cosine_scores(memories, query_vector, embedding_model)
        if query_vector_of is not None:
            _score_other_models(memories, cosines, embedding_model, query_vector_of)
        scored = [
            (memory, max(cosine, keyword_overlap(query_keywords, memory.content)))
            for memory, cosine in zip(memories, cosines, strict=True)
        ]
        ranked = sorted((item for item in scored if item[1] > 0.0), key=lambda item: (-item[1], item[0].id))
        return ranked[:top_k]

    @abstractmethod
    def delete(self, tenant_id: str, user_id: str, memory_id: str) -> bool:
        """Delete one memory of this user; False when there is none with that id (or it is another's)."""

    @abstractmethod
    def delete_all(self, tenant_id: str, user_id: str) -> int:
        """Delete every memory of this user; returns how many were deleted."""

    def _writing(self) -> AbstractContextManager[object]:
        """The scope of one add (read, dedup, write, evict): a transaction where the backend has one."""
        return contextlib.nullcontext()

    @abstractmethod
    def _load(self, tenant_id: str, user_id: str) -> Memories:
        """Up to :data:`LOAD_LIMIT` of the user's memories, with their vectors, in any order."""

    @abstractmethod
    def _put(self, memory: Memory) -> None:
        """Insert or replace by id."""

    @abstractmethod
    def _remove(self, tenant_id: str, user_id: str, memory_ids: Sequence[str]) -> None:
        """Delete these memories of the user (ids that are not there are ignored)."""
