"""Score boosts applied after rerank: wiki pages and documents the caller keeps citing.

Both multiply ``score`` and re-sort stably, so results the boost does not touch keep their relative order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ragline.reranking.config import MemoryAffinityConfig
from ragline.reranking.scoring import format_score
from ragline.types import ChunkType, SearchResult

WIKI_BOOSTED_KEY = "wiki_boosted"
MEMORY_AFFINITY_KEY = "memory_affinity_boost"


def sort_by_score(results: list[SearchResult]) -> None:
    """Score descending, in place; ``list.sort`` is stable, so ties keep their previous order."""
    results.sort(key=lambda r: -r.score)


def apply_wiki_boost(results: list[SearchResult], is_boosted: Callable[[SearchResult], bool], factor: float) -> int:
    """Multiply the score of every result ``is_boosted`` accepts; re-sort when any was boosted."""
    boosted = 0
    for result in results:
        if result.chunk_type == ChunkType.WIKI_PAGE and is_boosted(result):
            result.score *= factor
            result.metadata[WIKI_BOOSTED_KEY] = "true"
            boosted += 1
    if boosted:
        sort_by_score(results)
    return boosted


def affinity_factor(hits: int, config: MemoryAffinityConfig) -> float:
    """1 + max_boost · min(1, ln(1 + hits) / ln(log_base)) for hits ≥ min_hits, else 1.

    Logarithmic so the tenth reuse counts far less than the second: familiarity is a nudge, not a feedback
    loop that locks a person into the first document they ever opened. h=2 → 1.075, h=3 → 1.0946,
    h ≥ 8 → 1.15 with the defaults.
    """
    if hits < config.min_hits:
        return 1.0
    ratio = min(1.0, math.log1p(hits) / math.log(config.log_base))
    return 1.0 + config.max_boost * ratio


def apply_memory_affinity(
    results: list[SearchResult], hits_by_document: Mapping[str, int], config: MemoryAffinityConfig
) -> int:
    """Boost results whose document the caller's past answers cited at least ``min_hits`` times."""
    boosted = 0
    for result in results:
        factor = affinity_factor(hits_by_document.get(result.knowledge_id, 0), config)
        if result.knowledge_id and factor > 1.0:
            result.score *= factor
            result.metadata[MEMORY_AFFINITY_KEY] = format_score(factor)
            boosted += 1
    if boosted:
        sort_by_score(results)
    return boosted
