"""CHUNK_SEARCH_PARALLEL: chunk search and entity search side by side, each branch on its own state.

The stage is three steps so that both runtimes run the same logic: ``plan_branches`` (one branch per
embedding-model group of targets, plus entity search when entities were extracted), ``run_branch`` and
``reduce``. The embedded runtime runs the branches concurrently on clones; the serverless runtime runs
each branch in its own invocation under a Map state.
"""

from __future__ import annotations

import asyncio
import logging
from enum import StrEnum

from pydantic import BaseModel, Field

from ragline.pipeline.chunk_search import PluginSearch, TargetGroup
from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, NextFn, Plugin, PluginError
from ragline.reads import read_off_loop
from ragline.text.segmentation import content_signature
from ragline.types import ChatManage, EventType, SearchResult
from ragline.web.service import WebSearchService

logger = logging.getLogger(__name__)


async def _noop() -> PluginError | None:
    return None


class BranchKind(StrEnum):
    """What a branch of the parallel search searches: chunks, the entity graph, or the web."""

    CHUNK = "chunk"
    ENTITY = "entity"
    WEB = "web"


class SearchBranch(BaseModel):
    """One branch to run: its kind and, for chunk search, the target group."""

    kind: BranchKind
    group: TargetGroup | None = None


class BranchResult(BaseModel):
    """What one branch found, or the error it ended with (failures are data, never raised)."""

    kind: BranchKind
    results: list[SearchResult] = Field(default_factory=list)
    error: str = ""
    graph_result: dict[str, object] = Field(default_factory=dict)


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
    """The CHUNK_SEARCH_PARALLEL stage: chunk, entity and web search as branches, then one reduce."""

    def __init__(
        self,
        chunk_search: PluginSearch,
        entity_search: Plugin | None = None,
        web_search: WebSearchService | None = None,
    ) -> None:
        """A parallel search over ``chunk_search`` and, when given, ``entity_search`` and ``web_search``."""
        self._chunk_search = chunk_search
        self._entity_search = entity_search
        self._web_search = web_search

    def activation_events(self) -> list[EventType]:
        """Runs at CHUNK_SEARCH_PARALLEL."""
        return [EventType.CHUNK_SEARCH_PARALLEL]

    def plan_branches(self, cm: ChatManage) -> list[SearchBranch]:
        """The branches this turn runs (none when it retrieves nothing): the serverless runtime runs each in its own step."""
        if not cm.needs_retrieval():
            return []
        branches = [SearchBranch(kind=BranchKind.CHUNK, group=g) for g in self._chunk_search.plan_groups(cm)]
        if self._entity_search is not None and cm.state.entity:
            branches.append(SearchBranch(kind=BranchKind.ENTITY))
        if self._web_search is not None and self._web_search.should_search(cm):
            branches.append(SearchBranch(kind=BranchKind.WEB))
        return branches

    async def run_branch(self, cm: ChatManage, branch: SearchBranch) -> BranchResult:
        """One branch on ``cm`` (a clone or a freshly loaded state). Never raises: failures are data."""
        try:
            if branch.kind == BranchKind.CHUNK and branch.group is not None:
                results = await self._chunk_search.search_group(cm, branch.group)
                return BranchResult(kind=branch.kind, results=results)
            if branch.kind == BranchKind.ENTITY and self._entity_search is not None:
                error = await self._entity_search.on_event(EventType.ENTITY_SEARCH, cm, _noop)
                return BranchResult(
                    kind=branch.kind,
                    results=cm.state.search_result,
                    error=error.message if error else "",
                    graph_result=cm.state.graph_result,
                )
            if branch.kind == BranchKind.WEB and self._web_search is not None:
                return BranchResult(kind=branch.kind, results=await self._web_search.search(cm))
        except Exception as exc:
            logger.warning("search branch %s failed: %s", branch.kind, exc, extra={"stage": "chunk_search_parallel"})
            return BranchResult(kind=branch.kind, error=f"{type(exc).__name__}: {exc}")
        return BranchResult(kind=branch.kind, error="branch has nothing to run")

    def reduce(self, cm: ChatManage, outcomes: list[BranchResult]) -> PluginError | None:
        """Chunk hits (as chunk search concludes them) then graph hits, deduplicated by id and content."""
        chunk = [o for o in outcomes if o.kind == BranchKind.CHUNK]
        chunk_cm = cm.clone()
        chunk_error = PluginSearch.conclude(
            chunk_cm, [r for o in chunk for r in o.results], [o.error for o in chunk if o.error]
        )
        results = list(chunk_cm.state.search_result)
        candidates = chunk_cm.state.candidate_count
        for outcome in outcomes:
            if outcome.kind == BranchKind.WEB:
                # Web errors are logged by run_branch and otherwise ignored, as the seed swallows them.
                results.extend(outcome.results)
                candidates += len(outcome.results)
            if outcome.kind == BranchKind.ENTITY:
                results.extend(outcome.results)
                candidates += len(outcome.results)
                cm.state.graph_result = outcome.graph_result
        cm.state.search_result = remove_duplicates(results)
        cm.state.candidate_count = candidates
        if not cm.state.search_result:
            if chunk_error is not None and chunk_error.error_type != ERR_SEARCH_NOTHING.error_type:
                return chunk_error
            return ERR_SEARCH_NOTHING
        return None

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Run every branch on its own clone of the state, then reduce their results into this one."""
        if not cm.needs_retrieval():
            return await next()
        # The plan reads the knowledge bases (a store): off the event loop.
        branches = await read_off_loop(self.plan_branches, cm)
        # Each branch gets its own clone, so no branch can see or race on another's lists.
        outcomes = await asyncio.gather(*(self.run_branch(cm.clone(), b) for b in branches))
        error = self.reduce(cm, list(outcomes))
        if error is not None:
            return error
        return await next()
