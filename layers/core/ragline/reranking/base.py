"""The rerank model port: score passages against a query.

Adapters live in :mod:`ragline.reranking.providers`; only the wiring that builds the registry imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class RankResult:
    """One model score: the passage's position in the request and its relevance."""

    index: int
    score: float


@runtime_checkable
class RerankModel(Protocol):
    """A cross-encoder behind some API. Scores need not come back sorted or complete; callers check.

    ``max_passage_chars`` is the longest passage the model should receive (0: no limit); the stage cuts
    passages from the end before the call rather than letting the provider reject the request.
    """

    model_id: str
    max_passage_chars: int

    async def rerank(self, query: str, passages: Sequence[str]) -> list[RankResult]:
        """Raises :class:`ragline.models.base.ModelCallError` when the model cannot answer."""
        ...
