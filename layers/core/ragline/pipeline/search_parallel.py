"""CHUNK_SEARCH_PARALLEL: chunk search and entity search side by side on clones of the state."""

from __future__ import annotations

import asyncio

from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, NextFn, Plugin, PluginError
from ragline.retrieval.text import content_signature
from ragline.types import ChatManage, EventType, SearchResult


async def _noop() -> PluginError | None:
    return None


def remove_duplicates(results: list[SearchResult]) -> list[SearchResult]:
    """Keep the first of each chunk id and of each content signature (equal text from two chunks)."""
    seen_ids: set[str] = set()
    seen_signatures: set[str] = set()
    kept: list[SearchResult] = []
    for result in results:
        signature = content_signature(result.content)
        if result.id in seen_ids or signature in seen_signatures:
            continue
        seen_ids.add(result.id)
        seen_signatures.add(signature)
        kept.append(result)
    return kept


class PluginSearchParallel:
    """Composes the chunk-search plugin and, when one is wired and entities were extracted, entity search.

    Each branch gets its own clone, so neither can see or race on the other's lists.
    """

    def __init__(self, chunk_search: Plugin, entity_search: Plugin | None = None) -> None:
        self._chunk_search = chunk_search
        self._entity_search = entity_search

    def activation_events(self) -> list[EventType]:
        return [EventType.CHUNK_SEARCH_PARALLEL]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        if not cm.needs_retrieval():
            return await next()
        chunk_cm = cm.clone()
        branches = [self._chunk_search.on_event(EventType.CHUNK_SEARCH, chunk_cm, _noop)]
        entity_cm: ChatManage | None = None
        if self._entity_search is not None and cm.state.entity:
            entity_cm = cm.clone()
            branches.append(self._entity_search.on_event(EventType.ENTITY_SEARCH, entity_cm, _noop))
        outcomes = await asyncio.gather(*branches)
        chunk_error = outcomes[0]

        results = list(chunk_cm.state.search_result)
        if entity_cm is not None:
            results.extend(entity_cm.state.search_result)
            cm.state.graph_result = entity_cm.state.graph_result
        results = remove_duplicates(results)
        cm.state.search_result = results
        cm.state.candidate_count = chunk_cm.state.candidate_count + (
            len(entity_cm.state.search_result) if entity_cm is not None else 0
        )
        if not results:
            if chunk_error is not None and chunk_error.error_type != ERR_SEARCH_NOTHING.error_type:
                return chunk_error
            return ERR_SEARCH_NOTHING
        return await next()
