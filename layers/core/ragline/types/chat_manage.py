"""ChatManage: the object that crosses the whole pipeline, in three parts.

- ``PipelineRequest``: the request's configuration, immutable once the turn starts;
- ``PipelineState``: what stages read and write; successive results stay in separate fields
  (search → rerank → merge) so a later stage can fall back to an earlier one;
- ``PipelineContext``: runtime handles (event bus, ids, cancel token). Never serialised and never copied
  by :meth:`ChatManage.clone`, because in AWS every stage runs in a separate invocation and rebuilds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ragline.types.intent import needs_kb_retrieval, needs_retrieval
from ragline.types.search import SearchResult

if TYPE_CHECKING:
    from ragline.event.bus import EventBus
    from ragline.event.cancel import CancelToken


class FallbackStrategy(StrEnum):
    """What generation answers with when nothing relevant was found: a fixed text or the model's own reply."""

    FIXED = "fixed"
    MODEL = "model"


class SearchTargetType(StrEnum):
    """What a search target names: a whole knowledge base or some of its documents."""

    KNOWLEDGE_BASE = "knowledge_base"
    KNOWLEDGE = "knowledge"


class SearchTarget(BaseModel):
    """A knowledge base, whole or narrowed to documents or tags."""

    model_config = ConfigDict(frozen=True)

    type: SearchTargetType = SearchTargetType.KNOWLEDGE_BASE
    knowledge_base_id: str
    knowledge_ids: tuple[str, ...] = ()
    tag_ids: tuple[str, ...] = ()

    @property
    def is_constrained(self) -> bool:
        """True when the target searches only some documents (by id or tag), not the whole knowledge base."""
        return bool(self.knowledge_ids or self.tag_ids)


class ChatOptions(BaseModel):
    """Sampling options handed to a chat model."""

    temperature: float = 0.3
    top_p: float | None = None
    max_tokens: int = 2048
    thinking: bool | None = None


class SummaryConfig(BaseModel):
    """Generation settings: prompt templates and sampling."""

    model_config = ConfigDict(frozen=True)

    prompt: str = ""
    context_template: str = ""
    temperature: float = 0.3
    max_completion_tokens: int = 2048
    thinking: bool | None = None


class PipelineRequest(BaseModel):
    """Immutable request configuration (the seed's PipelineRequest)."""

    model_config = ConfigDict(frozen=True)

    query: str
    request_id: str
    session_id: str
    tenant_id: str
    user_id: str = ""
    user_message_id: str = ""
    assistant_message_id: str = ""
    language: str = "English"

    knowledge_base_ids: tuple[str, ...] = ()
    knowledge_ids: tuple[str, ...] = ()
    search_targets: tuple[SearchTarget, ...] = ()

    vector_threshold: float = 0.2
    keyword_threshold: float = 0.3
    embedding_top_k: int = 30
    # Which retrievers hybrid search runs (both by default); benchmarks and callers may use one alone.
    vector_search_enabled: bool = True
    keyword_search_enabled: bool = True
    rerank_model_id: str = ""
    rerank_top_k: int = 30
    rerank_threshold: float = 0.3
    chat_model_id: str = ""
    # A session title is generated on the first turn unless the request turned it off (disable_title).
    title_enabled: bool = True
    summary_config: SummaryConfig = Field(default_factory=SummaryConfig)
    max_rounds: int = 5

    fallback_strategy: FallbackStrategy = FallbackStrategy.MODEL
    fallback_response: str = "Sorry, I am unable to answer this question."
    fallback_prompt: str = ""

    citation_enabled: bool | None = None
    enable_rewrite: bool = True
    enable_query_expansion: bool = True
    # Query understanding: a chat model dedicated to it ("" = the answering model), its rewrite template
    # (an id of rewrite.yaml; "" = the stage's default) and system prompts per intent that replace
    # intent_prompts.yaml's (the seed's QueryUnderstandModelID and prompt overrides).
    understand_model_id: str = ""
    rewrite_template_id: str = ""
    intent_prompts: dict[str, str] = Field(default_factory=dict)

    # FAQ answers first, marked high priority, boosted in rerank (config.yaml's default too).
    faq_priority_enabled: bool = True
    faq_direct_answer_threshold: float = 0.9
    faq_score_boost: float = 1.2

    data_analysis_enabled: bool = False
    images: tuple[str, ...] = ()
    vlm_model_id: str = ""
    chat_model_supports_vision: bool = False

    # Long-term memory across sessions (recall before answering, extraction after): opt-in per request.
    memory_enabled: bool = False

    web_search_enabled: bool = False
    # The web search provider chosen for this session/agent ("" = the configured default).
    web_search_provider_id: str = ""
    web_fetch_enabled: bool = False
    web_fetch_top_n: int = 3

    @property
    def citations_on(self) -> bool:
        """``citation_enabled`` unset means enabled."""
        return self.citation_enabled is not False

    @property
    def has_knowledge(self) -> bool:
        """True when the request names anything to search: knowledge bases, documents or targets."""
        return bool(self.knowledge_base_ids or self.knowledge_ids or self.search_targets)


class History(BaseModel):
    """One earlier question/answer round, paired by request id.

    Frozen, its references a tuple: a turn's parallel branches share the rounds instead of each copying them.
    """

    model_config = ConfigDict(frozen=True)

    query: str
    answer: str
    request_id: str = ""
    created_at: str = ""
    knowledge_references: tuple[SearchResult, ...] = ()


class PipelineState(BaseModel):
    """Intermediate state read and written by the stages (the seed's PipelineState)."""

    rewrite_query: str = ""
    intent: str = ""
    # The question's images as query understanding read them: what a vision model saw in them, or (without
    # a model that can see) their text read by OCR. Both join the question the answering model reads.
    image_description: str = ""
    image_text: str = ""
    history: list[History] = Field(default_factory=list)
    memory_prompt: str = ""

    search_result: list[SearchResult] = Field(default_factory=list)
    rerank_result: list[SearchResult] = Field(default_factory=list)
    merge_result: list[SearchResult] = Field(default_factory=list)
    candidate_count: int = 0

    entity: list[str] = Field(default_factory=list)
    entity_kb_ids: list[str] = Field(default_factory=list)
    graph_result: dict[str, Any] = Field(default_factory=dict)

    user_content: str = ""
    rendered_contexts: str = ""
    system_prompt_override: str = ""
    chat_response: str = ""
    chat_finish_reason: str = ""
    # Wall-clock start of the turn (ms); carried in state because in AWS each stage is a new process.
    started_at_ms: int = 0
    steps_run: int = 0


@dataclass
class PipelineContext:
    """Runtime handles of one turn. Rebuilt in every process; never serialised, never cloned."""

    event_bus: EventBus | None = None
    cancel: CancelToken | None = None
    session_id: str = ""
    message_id: str = ""
    user_message_id: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    def cancelled(self) -> bool:
        """True once the turn was stopped; False without a cancel token (a step run on its own)."""
        return self.cancel is not None and self.cancel.cancelled


class StoredChatManage(BaseModel):
    """The serialisable part of a turn: what crosses a stage boundary between invocations."""

    request: PipelineRequest
    state: PipelineState


class ChatManage:
    """Request + state + context. Request and state round-trip through JSON; the context stays behind."""

    __slots__ = ("context", "request", "state")

    def __init__(
        self,
        request: PipelineRequest,
        state: PipelineState | None = None,
        context: PipelineContext | None = None,
    ) -> None:
        """A turn's state from its ``request``; ``state`` and ``context`` start empty unless given (a resumed step)."""
        self.request = request
        self.state = state if state is not None else PipelineState()
        self.context = context if context is not None else PipelineContext()

    @classmethod
    def start(cls, request: PipelineRequest, context: PipelineContext | None = None) -> ChatManage:
        """A new turn: the rewrite starts as the original query."""
        state = PipelineState(rewrite_query=request.query, started_at_ms=int(time.time() * 1000))
        return cls(request, state, context)

    def clone(self) -> ChatManage:
        """Deep copy of request and state for a parallel branch; the context is shared, not copied.

        The history's rounds are frozen, so the copy's list holds the same rounds: deep-copying five rounds with
        their references took ~20 times as long as the rest of the state.
        """
        history = self.state.history
        state = self.state.model_copy(update={"history": []}).model_copy(deep=True)
        state.history = list(history)
        return ChatManage(self.request.model_copy(deep=True), state, self.context)

    @property
    def search_query(self) -> str:
        """The query search runs: the rewritten one when query understanding wrote it, else the user's."""
        return self.state.rewrite_query or self.request.query

    def needs_kb_retrieval(self) -> bool:
        """True when the intent needs knowledge-base search."""
        return needs_kb_retrieval(self.state.intent)

    def needs_retrieval(self) -> bool:
        """True when the intent needs any retrieval, knowledge base or web (when enabled)."""
        return needs_retrieval(self.state.intent, self.request.web_search_enabled)

    def final_results(self) -> list[SearchResult]:
        """The latest non-empty result list: merge, else rerank, else search."""
        return self.state.merge_result or self.state.rerank_result or self.state.search_result

    def dump_json(self) -> str:
        """The request and state as JSON, for a serverless step to hand to the next (the context is rebuilt)."""
        return StoredChatManage(request=self.request, state=self.state).model_dump_json()

    @classmethod
    def load_json(cls, raw: str | bytes, context: PipelineContext | None = None) -> ChatManage:
        """A turn restored from :meth:`dump_json`, with a fresh ``context`` unless given."""
        stored = StoredChatManage.model_validate_json(raw)
        return cls(stored.request, stored.state, context)
