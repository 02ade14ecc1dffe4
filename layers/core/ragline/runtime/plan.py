"""The per-request stage plan (the seed's KnowledgeQA assembly), limited to the stages delivered so far."""

from __future__ import annotations

from ragline.types import EventType, PipelineBuilder, PipelineRequest


def build_plan(request: PipelineRequest) -> list[EventType]:
    """RAG when there is knowledge to search (or the web); otherwise plain chat."""
    has_history = request.max_rounds > 0
    if request.has_knowledge or request.web_search_enabled:
        return (
            PipelineBuilder()
            .add_if(has_history, EventType.LOAD_HISTORY)
            .add_if(request.memory_enabled, EventType.MEMORY_RECALL)
            .add(EventType.QUERY_UNDERSTAND)
            .add(EventType.CHUNK_SEARCH_PARALLEL)
            .add(EventType.CHUNK_RERANK)
            .add_if(request.web_search_enabled, EventType.WEB_FETCH)
            .add(EventType.CHUNK_MERGE)
            .add(EventType.FILTER_TOP_K)
            .add_if(request.data_analysis_enabled, EventType.DATA_ANALYSIS)
            .add(EventType.INTO_CHAT_MESSAGE)
            .add(EventType.CHAT_COMPLETION_STREAM)
            .build()
        )
    # Plain chat as the reference builds it: no context to assemble, so no INTO_CHAT_MESSAGE (the answer
    # stage sends the question itself). MEMORY_RECALL runs when memory is on, not as a no-op stage: on AWS
    # every stage is a Lambda invocation and two workflow transitions.
    return (
        PipelineBuilder()
        .add_if(has_history, EventType.LOAD_HISTORY)
        .add_if(request.memory_enabled, EventType.MEMORY_RECALL)
        .add(EventType.CHAT_COMPLETION_STREAM)
        .build()
    )


# Every stage a plan can contain, in pipeline order: the serverless state machine is generated from it.
FULL_STAGE_ORDER: tuple[EventType, ...] = (
    EventType.LOAD_HISTORY,
    EventType.MEMORY_RECALL,
    EventType.QUERY_UNDERSTAND,
    EventType.CHUNK_SEARCH_PARALLEL,
    EventType.CHUNK_RERANK,
    EventType.WEB_FETCH,
    EventType.CHUNK_MERGE,
    EventType.FILTER_TOP_K,
    EventType.DATA_ANALYSIS,
    EventType.INTO_CHAT_MESSAGE,
    EventType.CHAT_COMPLETION_STREAM,
)
