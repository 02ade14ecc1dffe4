"""Per-request stage lists: the builder and the named presets."""

from __future__ import annotations

from typing import Self

from ragline.types.events import EventType


class PipelineBuilder:
    """Builds the ordered stage list of one request: ``PipelineBuilder().add_if(c, E).add(E).build()``."""

    def __init__(self) -> None:
        self._stages: list[EventType] = []

    def add(self, stage: EventType) -> Self:
        self._stages.append(stage)
        return self

    def add_if(self, condition: bool, stage: EventType) -> Self:
        if condition:
            self._stages.append(stage)
        return self

    def build(self) -> list[EventType]:
        """A copy: later changes to the builder never reach a list already handed out."""
        return list(self._stages)


# Static presets for callers that need no dynamic assembly. Stages a later step delivers are absent here
# until they exist (query understanding, memory): a preset never names a stage that would
# silently do nothing.
PRESETS: dict[str, tuple[EventType, ...]] = {
    "chat": (EventType.CHAT_COMPLETION,),
    "chat_stream": (EventType.CHAT_COMPLETION_STREAM,),
    "chat_history_stream": (EventType.LOAD_HISTORY, EventType.CHAT_COMPLETION_STREAM),
    "rag": (
        EventType.CHUNK_SEARCH,
        EventType.CHUNK_RERANK,
        EventType.CHUNK_MERGE,
        EventType.FILTER_TOP_K,
        EventType.INTO_CHAT_MESSAGE,
        EventType.CHAT_COMPLETION,
    ),
    "rag_stream": (
        EventType.CHUNK_SEARCH,
        EventType.CHUNK_RERANK,
        EventType.CHUNK_MERGE,
        EventType.FILTER_TOP_K,
        EventType.INTO_CHAT_MESSAGE,
        EventType.CHAT_COMPLETION_STREAM,
    ),
}


def preset(name: str) -> list[EventType]:
    """A fresh list for the named preset; ``KeyError`` names the unknown preset."""
    return list(PRESETS[name])
