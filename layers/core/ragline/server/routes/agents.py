"""WeKnora's agents as ragline has them: one, the built-in quick answer (``/agents``), and its suggested questions.

ragline answers every question with the knowledge-base pipeline (WeKnora's quick-answer mode); it has no agent mode
and no custom agents. The built-in agent's model is the deployment's chat model (the extractive answerer when none is
configured). Follow-up suggestions after an answer are not generated: each answer's set says so (``suppressed``,
``disabled``), as WeKnora's does when an agent has them off.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi import Query as QueryParam
from pydantic import BaseModel, Field

from ragline.container import Container
from ragline.runtime.suggestions import suggested_questions
from ragline.runtime.turns import QUICK_ANSWER_AGENT_ID as QUICK_ANSWER_ID
from ragline.server.deps import ContainerDep, TenantDep, session_of
from ragline.server.errors import ApiError, not_found
from ragline.server.schemas.agents import EnsureSuggestionsBody
from ragline.server.views import Envelope
from ragline.server.wire import tenant_number
from ragline.store.models import Tenant
from ragline.stream.base import stream_key

router = APIRouter(prefix="/api/v1", tags=["agents"])

# When the deployment started answering: the built-in agent's record is as old as the process's configuration.
_EPOCH = "1970-01-01T00:00:00Z"


class AgentView(BaseModel):
    """WeKnora's agent record."""

    id: str
    name: str
    description: str
    avatar: str = "💬"
    is_builtin: bool = True
    tenant_id: int
    created_by: str = ""
    config: dict[str, Any]
    created_at: str = _EPOCH
    updated_at: str = _EPOCH
    deleted_at: str | None = None


class AgentList(Envelope[list[AgentView]]):
    """The agents, and those the tenant hid from the chat's list (none: ragline's one cannot be hidden)."""

    disabled_own_agent_ids: list[str] = Field(default_factory=list)


def quick_answer(container: Container, tenant: Tenant) -> AgentView:
    """The built-in quick-answer agent: ragline's pipeline with the deployment's chat model and settings."""
    conversation = container.config.conversation
    return AgentView(
        id=QUICK_ANSWER_ID,
        name="Quick Answer",
        description="Answers from the knowledge bases with references (ragline's pipeline).",
        tenant_id=tenant_number(tenant.id),
        config={
            "agent_mode": "quick-answer",
            "model_id": container.models.default_chat_model_id,
            "temperature": conversation.summary.temperature,
            "max_completion_tokens": conversation.summary.max_completion_tokens,
            "kb_selection_mode": "all",
            "knowledge_bases": [],
            "web_search_enabled": False,
            "multi_turn_enabled": True,
            "history_turns": conversation.max_rounds,
            "citation_enabled": True,
            "enable_rewrite": conversation.enable_rewrite,
            "enable_query_expansion": conversation.enable_query_expansion,
            "embedding_top_k": conversation.embedding_top_k,
            "vector_threshold": conversation.vector_threshold,
            "keyword_threshold": conversation.keyword_threshold,
            "rerank_top_k": conversation.rerank_top_k,
            "rerank_threshold": conversation.rerank_threshold,
            "fallback_strategy": conversation.fallback_strategy,
            "fallback_response": conversation.fallback_response,
            "question_suggestions": {
                "starters": {"enabled": True, "mode": "knowledge", "items": [], "count": 4},
                "follow_ups": {"enabled": False, "mode": "knowledge", "count": 0, "categories": []},
            },
        },
    )


def _agent(container: Container, tenant: Tenant, agent_id: str) -> AgentView:
    if agent_id != QUICK_ANSWER_ID:
        raise not_found("agent", "agent_id")
    return quick_answer(container, tenant)


@router.get("/agents")
def list_agents(tenant: TenantDep, container: ContainerDep) -> AgentList:
    """The built-in quick-answer agent (ragline has no other)."""
    return AgentList(data=[quick_answer(container, tenant)])


@router.get("/agents/{agent_id}")
def get_agent(agent_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[AgentView]:
    """One agent: only ``builtin-quick-answer`` exists (another id is a 404 naming ``agent_id``)."""
    return Envelope(data=_agent(container, tenant, agent_id))


class SuggestedQuestion(BaseModel):
    """A question to start with, from a knowledge base's documents."""

    question: str
    source: Literal["document"] = "document"
    knowledge_base_id: str
    knowledge_id: str


class SuggestedQuestions(BaseModel):
    """WeKnora's ``{"questions": [...]}``."""

    questions: list[SuggestedQuestion]


# A query parameter's characters: percent-encoded (up to 12 bytes each) they stay under the 16 KiB a request line may
# take in uvicorn (a longer one has its connection closed, no reply); about 27 ids, comma-separated.
MAX_QUERY_CHARS = 1000


def _ids(raw: str) -> list[str]:
    return [part for part in dict.fromkeys(p.strip() for p in raw.split(",")) if part]


@router.get("/agents/{agent_id}/suggested-questions")
def agent_suggested_questions(
    agent_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    knowledge_base_ids: Annotated[str, QueryParam(max_length=MAX_QUERY_CHARS)] = "",
    knowledge_ids: Annotated[str, QueryParam(max_length=MAX_QUERY_CHARS)] = "",
    tag_scopes: Annotated[str, QueryParam(max_length=MAX_QUERY_CHARS)] = "",
    limit: Annotated[int, QueryParam(ge=1, le=20)] = 4,
) -> Envelope[SuggestedQuestions]:
    """First questions from the titles and headings of the knowledge bases' documents (all of them when none named).

    ``knowledge_ids`` keeps the questions about those documents; ``tag_scopes`` is accepted and not acted on.
    """
    _agent(container, tenant, agent_id)
    del tag_scopes
    wanted = _ids(knowledge_base_ids)
    bases = (
        container.knowledge.knowledge_bases(tenant.id, wanted)
        if wanted
        else container.knowledge.list_knowledge_bases(tenant.id)
    )
    documents = set(_ids(knowledge_ids))
    found: list[SuggestedQuestion] = []
    for kb in bases:
        for s in suggested_questions(container.knowledge, tenant.id, kb.id, limit):
            if not documents or s.knowledge_id in documents:
                found.append(
                    SuggestedQuestion(question=s.question, knowledge_base_id=kb.id, knowledge_id=s.knowledge_id)
                )
    return Envelope(data=SuggestedQuestions(questions=found[:limit]))


class SuggestionSet(BaseModel):
    """WeKnora's follow-up suggestions of an answer: none here (``suppressed``, ``disabled``)."""

    id: str
    session_id: str
    assistant_message_id: str
    status: Literal["suppressed"] = "suppressed"
    allow_regenerate: bool = False
    suppression_reason: str = "disabled"
    questions: list[dict[str, Any]] = Field(default_factory=list)


async def _suggestions(container: Container, tenant: Tenant, session_id: str, message_id: str) -> SuggestionSet:
    session = await asyncio.to_thread(session_of, container, tenant, session_id)
    message = await asyncio.to_thread(container.sessions.message, tenant.id, session.id, message_id)
    if message is None:
        raise not_found("message", "message_id")
    # An answer whose stream has ended is complete, though its message may be saved a moment after the last frame
    # (the app asks for suggestions as soon as it reads that frame).
    last = await container.stream.last_event(stream_key(session.id, message.id)) if not message.is_completed else None
    ended = message.is_completed or (last is not None and last.is_terminal)
    if message.role != "assistant" or not ended:
        raise ApiError(
            400,
            "invalid_field",
            "follow-up suggestions require a completed assistant message",
            "message_id",
        )
    return SuggestionSet(id=f"suggestions-{message.id}", session_id=session.id, assistant_message_id=message.id)


@router.get("/sessions/{session_id}/messages/{message_id}/suggestions")
async def message_suggestions(
    session_id: str, message_id: str, tenant: TenantDep, container: ContainerDep
) -> Envelope[SuggestionSet]:
    """An answer's follow-up suggestions: none, the set says they are off (ragline does not generate them)."""
    return Envelope(data=await _suggestions(container, tenant, session_id, message_id))


@router.post("/sessions/{session_id}/messages/{message_id}/suggestions")
async def ensure_message_suggestions(
    session_id: str,
    message_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    body: EnsureSuggestionsBody | None = None,
) -> Envelope[SuggestionSet]:
    """WeKnora's "make the follow-ups": the same suppressed set; ``regenerate`` is a 400 (not allowed, as WeKnora's)."""
    if body is not None and body.regenerate:
        raise ApiError(400, "invalid_field", "suggestion regeneration is not allowed", "regenerate")
    return Envelope(data=await _suggestions(container, tenant, session_id, message_id))
