"""QUERY_UNDERSTAND (inner link): the entity names of the question, for entity search.

Registered after :class:`ragline.pipeline.query_understand.PluginQueryUnderstand`, this plugin is the inner
link of the event's chain: the outer plugin rewrites the question and classifies its intent, then calls
``next()``, which runs this one on the rewritten question.

It extracts only when all three hold, because each call costs a model round trip on the critical path:
- the graph is enabled for the process (``RAGLINE_GRAPH_ENABLED``; the reference's ``NEO4J_ENABLE``);
- the intent needs the knowledge base (greetings and chit-chat search nothing);
- a knowledge base in the request's scope has graph extraction on (others have no graph to search).

It writes ``state.entity`` (the names) and ``state.entity_kb_ids`` (the knowledge bases with extraction
on), which CHUNK_SEARCH_PARALLEL reads to plan its entity branch. It never fails a turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ragline.graph.extract import GraphExtractor
from ragline.pipeline.chunk_search import resolve_targets
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.store.base import KnowledgeStore
from ragline.types import ChatManage, EventType

logger = logging.getLogger(__name__)

STAGE = EventType.QUERY_UNDERSTAND.value


def scope_knowledge_base_ids(cm: ChatManage, knowledge: KnowledgeStore | None = None) -> list[str]:
    """The knowledge bases chunk search would read.

    In request order: explicit targets, else the request's knowledge bases plus (given a store to resolve them) those of
    the documents it names.
    """
    request = cm.request
    if knowledge is not None:
        kb_ids = [target.knowledge_base_id for target in resolve_targets(cm, knowledge)]
    elif request.search_targets:
        kb_ids = [target.knowledge_base_id for target in request.search_targets]
    else:
        kb_ids = list(request.knowledge_base_ids)
    return list(dict.fromkeys(kb_ids))


class PluginExtractEntity:
    """Entity names of the rewritten question, when the graph can answer them.

    ``extraction_enabled``: knowledge base id → graph extraction on (the wiring reads the knowledge base's
    setting). ``knowledge``: resolves documents named by the request to their knowledge bases; without it
    only knowledge bases named directly are in scope.
    """

    def __init__(
        self,
        extractor: GraphExtractor,
        graph_enabled: bool,
        extraction_enabled: Callable[[str], bool],
        knowledge: KnowledgeStore | None = None,
    ) -> None:
        """An extraction with ``extractor``, on when ``graph_enabled`` and ``extraction_enabled`` for a searched knowledge base."""
        self._extractor = extractor
        self._graph_enabled = graph_enabled
        self._extraction_enabled = extraction_enabled
        self._knowledge = knowledge

    def activation_events(self) -> list[EventType]:
        """Runs at QUERY_UNDERSTAND, after the rewrite."""
        return [EventType.QUERY_UNDERSTAND]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Write ``state.entity`` once the question is understood; a failed extraction leaves it empty."""
        try:
            await self.extract(cm)
        except Exception:
            # Entity search only adds candidates; without it chunk search still answers.
            logger.warning("entity extraction skipped", exc_info=True, extra={"stage": STAGE})
            cm.state.entity, cm.state.entity_kb_ids = [], []
        return await next()

    async def extract(self, cm: ChatManage) -> list[str]:
        """Set ``state.entity`` and ``state.entity_kb_ids`` (both empty when extraction does not apply)."""
        cm.state.entity, cm.state.entity_kb_ids = [], []
        if not self._graph_enabled or not cm.needs_kb_retrieval():
            return []
        kb_ids = await asyncio.to_thread(self._kbs_with_extraction, cm)
        if not kb_ids:
            return []
        entities = await self._extractor.extract_entities(cm.search_query, cm.request.chat_model_id)
        cm.state.entity = entities
        cm.state.entity_kb_ids = kb_ids if entities else []
        logger.info(
            "extracted %d entities",
            len(entities),
            extra={"stage": STAGE, "session_id": cm.request.session_id, "knowledge_bases": len(kb_ids)},
        )
        return entities

    def _kbs_with_extraction(self, cm: ChatManage) -> list[str]:
        return [kb_id for kb_id in scope_knowledge_base_ids(cm, self._knowledge) if self._extraction_enabled(kb_id)]
