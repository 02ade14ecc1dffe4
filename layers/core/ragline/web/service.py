"""The web branch of CHUNK_SEARCH: which provider answers a turn, and its hits as search results.

:class:`ragline.pipeline.chunk_search_parallel.PluginSearchParallel` runs it as a third branch kind next to chunk
and entity search. Its failures are the branch's error, which the reduce step logs and otherwise ignores
(the seed swallows web errors), so a provider outage never costs the user the knowledge-base answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from enum import StrEnum

from ragline.types import ChatManage, PipelineRequest, SearchResult
from ragline.web.search import (
    DEFAULT_MAX_RESULTS,
    WebSearchRegistry,
    choose_provider_id,
    to_search_results,
)

logger = logging.getLogger(__name__)

# (agent-or-session provider id, tenant provider id) for one turn; "" where that level chose nothing.
ProviderChoice = Callable[[ChatManage], tuple[str, str]]


def no_choice(cm: ChatManage) -> tuple[str, str]:
    """Neither agent nor tenant chose: the registry's default answers."""
    return "", ""


class SearchSource(StrEnum):
    """What a turn searches, as the ``knowledge_search`` tool call reports it (``search_source``)."""

    KNOWLEDGE = "knowledge"
    WEB = "web"
    MIXED = "mixed"


def search_source(request: PipelineRequest) -> SearchSource:
    """``mixed`` when the turn has knowledge bases and web search, ``web`` for web alone, else ``knowledge``."""
    if request.web_search_enabled:
        return SearchSource.MIXED if request.has_knowledge else SearchSource.WEB
    return SearchSource.KNOWLEDGE


def web_count(results: Iterable[SearchResult]) -> int:
    """How many results came from the web (the ``knowledge_search`` tool result's ``web_count``)."""
    return sum(1 for result in results if result.is_web)


class WebSearchService:
    """Resolves the turn's provider and converts its hits.

    ``choose`` tells the agent/session-level and tenant-level provider ids of a turn; the wiring supplies it from
    wherever those settings live.
    """

    def __init__(
        self,
        registry: WebSearchRegistry,
        *,
        max_results: int = DEFAULT_MAX_RESULTS,
        choose: ProviderChoice = no_choice,
    ) -> None:
        """A service choosing providers from ``registry`` with ``choose``; at most ``max_results`` hits a turn."""
        self._registry = registry
        self._max_results = max_results
        self._choose = choose

    def should_search(self, cm: ChatManage) -> bool:
        """Web search is on for the turn and some provider would answer it."""
        if not cm.request.web_search_enabled:
            return False
        agent_id, tenant_id = self._choose(cm)
        return bool(choose_provider_id(agent_id, tenant_id, self._registry.default_id))

    async def search(self, cm: ChatManage) -> list[SearchResult]:
        """The turn's web results (empty when no provider is configured).

        Raises :class:`ragline.web.search.WebSearchError` when the provider fails or is unknown.
        """
        agent_id, tenant_id = self._choose(cm)
        resolved = self._registry.resolve(agent_provider_id=agent_id, tenant_provider_id=tenant_id)
        if resolved is None:
            return []
        provider_id, provider = resolved
        hits = await provider.search(cm.search_query, self._max_results)
        results = to_search_results(hits, provider_id)
        logger.info(
            "web search provider=%s hits=%d results=%d",
            provider_id,
            len(hits),
            len(results),
            extra={"stage": "chunk_search"},
        )
        return results
