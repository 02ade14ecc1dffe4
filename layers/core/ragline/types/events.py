"""The pipeline events (stages) of the reference design that ragline runs.

Thirteen of the seed's fourteen: its blocking CHAT_COMPLETION is not one, since every answer here streams
(CHAT_COMPLETION_STREAM); an event no plan can hold would only be a name with no stage behind it.
"""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    """A pipeline stage. The value is also the span name, the log key and the Step Functions state name."""

    LOAD_HISTORY = "load_history"
    MEMORY_RECALL = "memory_recall"
    QUERY_UNDERSTAND = "query_understand"
    CHUNK_SEARCH = "chunk_search"
    CHUNK_SEARCH_PARALLEL = "chunk_search_parallel"
    ENTITY_SEARCH = "entity_search"
    CHUNK_RERANK = "chunk_rerank"
    WEB_FETCH = "web_fetch"
    CHUNK_MERGE = "chunk_merge"
    DATA_ANALYSIS = "data_analysis"
    INTO_CHAT_MESSAGE = "into_chat_message"
    CHAT_COMPLETION_STREAM = "chat_completion_stream"
    FILTER_TOP_K = "filter_top_k"
