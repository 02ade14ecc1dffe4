"""CHUNK_MERGE: ranked hits become the passages the model reads, in eight steps.

1. input: the rerank result, else the search result by score cut to ``rerank_top_k`` (graph hits kept);
2. deduplicate by chunk id and content signature;
3. add the latest answer's references that still bear on the question (discounted, at most three);
4. text sub-chunks take their parent section's current text;
5. passages of one document and chunk type that continue each other are merged;
6. FAQ hits are rendered with their current answers;
7. short text passages are widened with their neighbours;
8. step 5 again (widening creates new overlaps), deduplication, then near-duplicates are dropped.

Merging works on copies: ``search_result`` and ``rerank_result`` stay as they were for later fallbacks.
Stored chunks are read best effort: a failing read leaves passages as retrieved rather than failing the
turn, because merging improves an answer that the hits alone can already give.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ragline.merge import (
    ChunkLookup,
    MergeConfig,
    expand_short_passages,
    history_references,
    merge_sequential,
    remove_partial_overlaps,
    render_faq_answers,
    resolve_parents,
    select_input,
)
from ragline.pipeline.chunk_search_parallel import remove_duplicates
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.reads import read_off_loop
from ragline.store.base import KnowledgeStore
from ragline.store.models import Chunk
from ragline.types import ChatManage, EventType, SearchResult

logger = logging.getLogger(__name__)


@dataclass
class MergeCounts:
    """How many passages each step left (or touched), for the stage's one debug line."""

    selected: int = 0
    deduplicated: int = 0
    history: int = 0
    parents: int = 0
    merged: int = 0
    faq: int = 0
    expanded: int = 0
    output: int = 0

    def line(self) -> str:
        """The counts as ``name=value`` pairs on one line."""
        return " ".join(f"{name}={value}" for name, value in asdict(self).items())


class PluginMerge:
    """The CHUNK_MERGE stage; reads parents, FAQ entries and neighbours through ``knowledge``."""

    def __init__(self, knowledge: KnowledgeStore, config: MergeConfig) -> None:
        """A merge stage reading through ``knowledge``, tuned by ``config``."""
        self._knowledge = knowledge
        self._config = config

    def activation_events(self) -> list[EventType]:
        """Runs at CHUNK_MERGE."""
        return [EventType.CHUNK_MERGE]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Write ``merge_result`` from the reranked results (off the event loop), when the turn retrieves."""
        if not cm.needs_retrieval():
            return await next()
        # Store reads are blocking; the event loop keeps serving other turns' streams meanwhile.
        results, counts = await read_off_loop(self.merge, cm)
        cm.state.merge_result = results
        logger.debug(
            "merge %s",
            counts.line(),
            extra={
                "session_id": cm.request.session_id,
                "message_id": cm.request.assistant_message_id,
                "stage": event_type.value,
            },
        )
        return await next()

    def merge(self, cm: ChatManage) -> tuple[list[SearchResult], MergeCounts]:
        """The eight steps over ``cm``'s state; ``cm`` itself is not modified."""
        config, state = self._config, cm.state
        lookup = self._lookup(cm.request.tenant_id)
        span = {"min_overlap": config.min_overlap_chars, "window": config.overlap_window_chars}
        counts = MergeCounts()

        results = select_input(state.rerank_result, state.search_result, cm.request.rerank_top_k)
        counts.selected = len(results)
        results = remove_duplicates(results)
        counts.deduplicated = len(results)
        from_history = history_references(
            cm.search_query,
            state.history,
            {result.id for result in results},
            min_overlap=config.history_min_overlap,
            score_factor=config.history_score_factor,
            limit=config.history_max_references,
        )
        results = remove_duplicates([*results, *from_history])
        counts.history = len(results) - counts.deduplicated
        if not results:
            return [], counts

        counts.parents = resolve_parents(results, lookup, **span)
        results = merge_sequential(results, **span)
        counts.merged = len(results)
        results, counts.faq = render_faq_answers(results, lookup)
        counts.expanded = expand_short_passages(
            results,
            lookup,
            short_chars=config.short_passage_chars,
            target=config.expand_target_chars,
            **span,
        )

        results = merge_sequential(results, **span)
        results = remove_duplicates(results)
        results = remove_partial_overlaps(
            results,
            min_ratio=config.partial_overlap_min_ratio,
            max_size_ratio=config.partial_overlap_max_size_ratio,
        )
        counts.output = len(results)
        return results, counts

    def _lookup(self, tenant_id: str) -> ChunkLookup:
        """``KnowledgeStore.chunks`` for this tenant; a failed read is logged and reads as nothing found."""

        def lookup(chunk_ids: Sequence[str]) -> list[Chunk]:
            try:
                return self._knowledge.chunks(tenant_id, chunk_ids)
            except Exception:
                logger.warning(
                    "chunk read failed; merging without it", exc_info=True, extra={"stage": EventType.CHUNK_MERGE.value}
                )
                return []

        return lookup
