"""The pipeline's shared vocabulary: stages, state, search results and stream events."""

from ragline.types.chat_manage import (
    ChatManage,
    ChatOptions,
    FallbackStrategy,
    History,
    PipelineContext,
    PipelineRequest,
    PipelineState,
    SearchTarget,
    SearchTargetType,
)
from ragline.types.events import EventType
from ragline.types.intent import QueryIntent, needs_kb_retrieval, normalize_query_intent
from ragline.types.pipeline import PipelineBuilder
from ragline.types.search import ChunkType, MatchType, SearchResult
from ragline.types.stream import ResponseType, StreamEvent, StreamResponse

__all__ = [
    "ChatManage",
    "ChatOptions",
    "ChunkType",
    "EventType",
    "FallbackStrategy",
    "History",
    "MatchType",
    "PipelineBuilder",
    "PipelineContext",
    "PipelineRequest",
    "PipelineState",
    "QueryIntent",
    "ResponseType",
    "SearchResult",
    "SearchTarget",
    "SearchTargetType",
    "StreamEvent",
    "StreamResponse",
    "needs_kb_retrieval",
    "normalize_query_intent",
]
