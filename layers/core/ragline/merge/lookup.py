"""How merge steps read stored chunks: one batched call per step, scoped by the caller (tenant)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from ragline.store.models import Chunk


class ChunkLookup(Protocol):
    """Chunks by id; unknown ids are absent from the answer.

    Usually ``KnowledgeStore.chunks`` bound to the request's tenant, so a step can never read another tenant's text.
    """

    def __call__(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks among ``chunk_ids`` that exist (for the request's tenant)."""
        ...


def load_chunks(lookup: ChunkLookup, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
    """The chunks for ``chunk_ids`` (blanks and repeats skipped) by id, in one call; none when none asked."""
    wanted = list(dict.fromkeys(chunk_id for chunk_id in chunk_ids if chunk_id))
    if not wanted:
        return {}
    return {chunk.id: chunk for chunk in lookup(wanted)}
