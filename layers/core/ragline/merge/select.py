"""Step 1: which results the stage merges."""

from __future__ import annotations

from collections.abc import Sequence

from ragline.types import MatchType, SearchResult


def select_input(
    rerank_result: Sequence[SearchResult], search_result: Sequence[SearchResult], rerank_top_k: int
) -> list[SearchResult]:
    """The rerank result, else the search result by score cut to ``rerank_top_k``, as copies.

    Without the cut, a turn whose rerank did not run would resolve parents, FAQ answers and neighbours for
    every search hit before FILTER_TOP_K dropped most of them. Graph hits have no retrieval score and
    would always fall below the cut; entity search already bounds how many there are, so they all stay.
    The copies let merging edit passages while later stages can still fall back to the earlier lists.
    """
    if rerank_result:
        return [result.model_copy(deep=True) for result in rerank_result]
    ranked = sorted(search_result, key=lambda result: -result.score)
    limit = max(1, rerank_top_k)
    kept = ranked[:limit] + [result for result in ranked[limit:] if result.match_type == MatchType.GRAPH]
    return [result.model_copy(deep=True) for result in kept]
