"""The fourteen pipeline events (stages) of the reference design."""

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
    # The seed's blocking completion: no plan uses it (every answer streams), so no stage handles it.
    CHAT_COMPLETION = "chat_completion"
    CHAT_COMPLETION_STREAM = "chat_completion_stream"
    FILTER_TOP_K = "filter_top_k"
