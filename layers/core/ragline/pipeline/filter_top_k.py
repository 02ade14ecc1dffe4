"""FILTER_TOP_K: a deterministic order, then the top ``rerank_top_k``."""

from __future__ import annotations

from ragline.pipeline.plugin import NextFn, PluginError
from ragline.reranking.rerank import KEPT_BY
from ragline.types import ChatManage, EventType, SearchResult
from ragline.types.search import sort_deterministically


class PluginFilterTopK:
    """The FILTER_TOP_K stage: keep the request's ``rerank_top_k`` best of the merged (or reranked) results."""

    def activation_events(self) -> list[EventType]:
        """Runs at FILTER_TOP_K."""
        return [EventType.FILTER_TOP_K]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Cut the merged results (else the reranked ones) to the top-k, deterministically ordered."""
        top_k = max(1, cm.request.rerank_top_k)
        state = cm.state
        if state.merge_result:
            state.merge_result = top(state.merge_result, top_k)
        elif state.rerank_result:
            state.rerank_result = top(state.rerank_result, top_k)
        elif state.search_result:
            state.search_result = top(state.search_result, top_k)
        return await next()


def top(results: list[SearchResult], top_k: int) -> list[SearchResult]:
    """The ``top_k`` best, deterministically ordered.

    Results rerank kept for another reason (``kept_by``: images kept on their vector score) take no place and
    follow them.
    """
    ranked = sort_deterministically([r for r in results if not r.metadata.get(KEPT_BY)])[:top_k]
    return ranked + [r for r in results if r.metadata.get(KEPT_BY)]
