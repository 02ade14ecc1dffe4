"""MEMORY_RECALL: the caller's memories that bear on the question, for the prompt and the client.

No model call, and never in the way of the answer: a failing store or embedder is logged and the turn
goes on without memories. Runs only when the request opted in to memory.
"""

from __future__ import annotations

import logging

from ragline.event.bus import BusEventType
from ragline.memory.models import memory_enabled
from ragline.memory.recall import DEFAULT_RECALL_TOP_K, MIN_RECALL_SCORE, format_memory_prompt, recall
from ragline.memory.store import MemoryStore, ScoredMemories
from ragline.models.base import Embedder
from ragline.models.registry import ModelRegistry
from ragline.pipeline.emit import emit, event_id
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.reads import read_off_loop
from ragline.types import ChatManage, EventType, PipelineRequest

logger = logging.getLogger(__name__)

STAGE = EventType.MEMORY_RECALL.value
EVENT_KIND = "memory"
# Scores in the event are for display; four decimals is more than a client shows.
SCORE_DECIMALS = 4


def recalled_event_data(recalled: ScoredMemories) -> dict[str, object]:
    """The ``memory_recalled`` payload: what was recalled, never the vectors."""
    return {
        "memories": [
            {"id": memory.id, "content": memory.content, "score": round(score, SCORE_DECIMALS)}
            for memory, score in recalled
        ],
        "count": len(recalled),
    }


class PluginMemoryRecall:
    """Recall the caller's memories into ``state.memory_prompt`` for generation.

    Writes ``state.memory_prompt`` (appended to the system prompt by generation) and emits one ``memory_recalled`` event
    when something was recalled.
    """

    def __init__(
        self,
        store: MemoryStore,
        models: ModelRegistry,
        top_k: int = DEFAULT_RECALL_TOP_K,
        min_score: float = MIN_RECALL_SCORE,
    ) -> None:
        """A recall from ``store``, embedding with ``models``: the ``top_k`` memories scoring at least ``min_score``."""
        self._store = store
        self._models = models
        self._top_k = top_k
        self._min_score = min_score

    def activation_events(self) -> list[EventType]:
        """Runs at MEMORY_RECALL."""
        return [EventType.MEMORY_RECALL]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Recall memories when the request allows it; a failed recall is logged and skipped."""
        if memory_enabled(cm.request):
            try:
                await self.recall(cm)
            except Exception:
                # Memory personalises an answer; without it the answer is still right.
                logger.warning("memory recall skipped", exc_info=True, extra={"stage": STAGE})
        return await next()

    async def recall(self, cm: ChatManage) -> ScoredMemories:
        """Recall for the question, set the prompt section and emit the event; returns what was recalled."""
        recalled = await read_off_loop(self._recall_sync, cm.request)
        if not recalled:
            return []
        cm.state.memory_prompt = format_memory_prompt(memory for memory, _ in recalled)
        await emit(
            cm, BusEventType.MEMORY_RECALLED, event_id(cm, EVENT_KIND), done=True, data=recalled_event_data(recalled)
        )
        logger.info("recalled %d memories", len(recalled), extra={"stage": STAGE})
        return recalled

    def _recall_sync(self, request: PipelineRequest) -> ScoredMemories:
        # In a worker thread: the first call may load the embedder, and the store reads block.
        return recall(
            self._store,
            self._embedder(),
            request.tenant_id,
            request.user_id,
            request.query,
            self._top_k,
            self._min_score,
            embedder_of=self._embedder,
        )

    def _embedder(self, model_id: str = "") -> Embedder | None:
        """The embedder ``model_id`` names, or the default one; None when there is none: keywords still work.

        The default is the one extraction embeds memories with; another is asked for the memories stored before the
        default changed, and only while it is registered.
        """
        if model_id and not self._models.has_embedder(model_id):
            return None
        try:
            return self._models.embedder(model_id)
        except Exception:
            logger.warning("memory recall without %s", model_id or "an embedder", exc_info=True, extra={"stage": STAGE})
            return None
