"""Accepting a question and stopping a turn: the logic both runtimes share.

A runtime only decides how the stages run (a task in this process, or a Step Functions execution); it
plugs in as a :class:`TurnLauncher`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from ragline.config import AppConfig, PromptTemplates
from ragline.pipeline.session_title import heuristic_title
from ragline.runtime.plan import build_plan
from ragline.runtime.question_images import MAX_QUESTION_IMAGES, keep_question_images, read_question_images
from ragline.store.base import KnowledgeStore, SessionStore
from ragline.store.models import Message, Session
from ragline.store.originals import OriginalStore
from ragline.stream.base import StreamManager, stream_key
from ragline.stream.replay import AnswerSummary, summarize_answer
from ragline.types import (
    EventType,
    FallbackStrategy,
    PipelineRequest,
    ResponseType,
    SearchTarget,
    SearchTargetType,
    StreamEvent,
)
from ragline.types.chat_manage import SummaryConfig
from ragline.types.intent import QueryIntent
from ragline.types.text import MAX_DOCUMENT_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS, Identifier, IdList, PlainText

logger = logging.getLogger(__name__)


def _not_blank_query(value: str) -> str:
    if not value.strip():
        raise ValueError("query must not be empty")
    return value


# The provisional title of a session whose first question is its images alone.
IMAGE_ONLY_TITLE = "Question about an image"

# A question as the HTTP API takes it: at least one character that is not whitespace, no NUL, no other
# control character but tabs and line breaks, no bidi override.
Query = Annotated[PlainText, Field(min_length=1, max_length=MAX_TEXT_CHARS), AfterValidator(_not_blank_query)]


class MentionedItem(BaseModel):
    """A knowledge base or a document @-mentioned in WeKnora's chat box: it joins the search scope."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=200)
    name: str = Field(default="", max_length=MAX_NAME_CHARS)
    type: Literal["kb", "file", "tag"] = "kb"
    kb_type: Identifier = ""


class ImageAttachment(BaseModel):
    """An image sent with a question, in WeKnora's shape: a ``data:`` URI, or a URL and a caption."""

    model_config = ConfigDict(extra="ignore")

    # Base64 of at most the upload limit (a third more characters than bytes).
    data: str = Field(default="", max_length=MAX_DOCUMENT_CHARS * 4 // 3 + 64)
    url: str = Field(default="", max_length=8192)
    caption: str = Field(default="", max_length=MAX_TEXT_CHARS)


def mentioned_scope(
    kb_ids: Sequence[str], knowledge_ids: Sequence[str], mentioned: Sequence[MentionedItem]
) -> tuple[list[str], list[str]]:
    """Knowledge bases and documents named, with the mentioned ones added (in order, once each)."""
    kbs = [*kb_ids, *(m.id for m in mentioned if m.type == "kb")]
    files = [*knowledge_ids, *(m.id for m in mentioned if m.type == "file")]
    return list(dict.fromkeys(kbs)), list(dict.fromkeys(files))


# WeKnora's built-in agent, the only one ragline has: its knowledge-base selection is "all", so a question asked
# through it that names no knowledge base searches every one of the tenant's (as WeKnora's does).
QUICK_ANSWER_AGENT_ID = "builtin-quick-answer"


# WeKnora's chat fields that ragline accepts and does not act on (a debug line says so): agents, the
# suggestion that led to the question, the client's channel.
# WeKnora's request fields that ragline accepts and does not act on: the agent's own (agent mode is off), the
# web page's bookkeeping, and chat attachments (not read yet: the reply is the knowledge base's answer).
IGNORED_QUESTION_FIELDS = (
    "agent_source_tenant_id",
    "mcp_service_ids",
    "skill_names",
    "suggestion_attribution",
    "channel",
    "attachment_uploads",
    "attachment_ids",
)
# What the first event of a turn says when agent mode was asked for.
AGENT_MODE_OFF = {"agent_enabled": False, "agent_mode": "off"}


class QuestionBody(BaseModel):
    """The body of ``POST /sessions/{sid}/questions`` and WeKnora's chat routes.

    The query, the seed's request options and WeKnora's request fields.
    """

    model_config = ConfigDict(extra="forbid")

    # The images come first so that the query's check sees them: a question may be its images alone.
    images: list[ImageAttachment] | None = Field(default=None, max_length=MAX_QUESTION_IMAGES)
    # At least one character that is not whitespace, unless the question carries images ("" then).
    query: PlainText = Field(default=None, validate_default=True, max_length=MAX_TEXT_CHARS)
    knowledge_base_ids: IdList | None = None
    knowledge_ids: IdList | None = None
    tags: list[Identifier] | None = Field(default=None, max_length=50)
    web_search_enabled: bool = False
    web_search_provider_id: str | None = Field(default=None, max_length=100)
    web_fetch_enabled: bool | None = None
    citation_enabled: bool | None = None
    enable_rewrite: bool | None = None
    enable_query_expansion: bool | None = None
    # Query understanding for this question: its chat model, rewrite template (rewrite.yaml) and system
    # prompts per intent (each key one of the nine intents).
    understand_model_id: str | None = Field(default=None, max_length=200)
    rewrite_template_id: str | None = Field(default=None, max_length=100)
    intent_prompts: dict[QueryIntent, Annotated[str, Field(max_length=8000)]] | None = Field(default=None, max_length=9)
    faq_priority_enabled: bool | None = None
    memory_enabled: bool | None = None
    data_analysis_enabled: bool = False
    max_rounds: int | None = Field(default=None, ge=0, le=50)
    fallback_strategy: FallbackStrategy | None = None
    vector_threshold: float | None = Field(default=None, ge=0, le=1)
    keyword_threshold: float | None = Field(default=None, ge=0, le=1)
    embedding_top_k: int | None = Field(default=None, ge=1, le=500)
    rerank_top_k: int | None = Field(default=None, ge=1, le=200)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=32768)
    language: str | None = Field(default=None, max_length=40)
    request_id: str | None = Field(default=None, max_length=100)
    # WeKnora's request fields.
    mentioned_items: list[MentionedItem] | None = Field(default=None, max_length=100)
    # The answering model (a chat model id of this deployment; WeKnora's "summary model").
    summary_model_id: str | None = Field(default=None, max_length=200)
    disable_title: bool = False
    # Agent mode is not implemented: the question runs the knowledge-chat pipeline and the reply says so.
    agent_enabled: bool = False
    agent_id: str | None = Field(default=None, max_length=200)
    channel: str | None = Field(default=None, max_length=40)
    suggestion_attribution: dict[str, Any] | None = None
    # ragline's own: this question regenerates or edits the turn of this assistant message; the turns are kept
    # as alternatives of one another and a model's history holds the newest alone.
    alternative_of: str | None = Field(default=None, min_length=1, max_length=200)
    # WeKnora's tag filter (ids, numbers or names): the same as ``tags``.
    tag_ids: list[Identifier] | None = Field(default=None, max_length=50)
    agent_source_tenant_id: int | Identifier | None = None
    mcp_service_ids: list[Identifier] | None = Field(default=None, max_length=100)
    skill_names: list[Identifier] | None = Field(default=None, max_length=100)
    attachment_uploads: list[dict[str, Any]] | None = Field(default=None, max_length=20)
    attachment_ids: list[Identifier] | None = Field(default=None, max_length=20)

    @field_validator("query", mode="before")
    @classmethod
    def _query_or_images(cls, value: object, info: ValidationInfo) -> object:
        """A question needs a query, unless it carries images (the seed's image-only input)."""
        images = info.data.get("images")
        if value is None:
            if images:
                return ""
            raise PydanticCustomError("missing", "Field required")
        if isinstance(value, str) and not value.strip() and not images:
            raise PydanticCustomError("value_error", "Value error, query must not be empty")
        return value

    def scope(self, session: Session) -> tuple[list[str], list[str]]:
        """The knowledge bases (the session's unless named) and documents this question searches."""
        kb_ids = self.knowledge_base_ids if self.knowledge_base_ids is not None else session.knowledge_base_ids
        return mentioned_scope(kb_ids, self.knowledge_ids or [], self.mentioned_items or [])


def tag_targets(kb_ids: Sequence[str], tags: list[str], knowledge_ids: list[str]) -> tuple[SearchTarget, ...]:
    """Knowledge bases narrowed to tagged documents (and any named documents).

    One target each; none without tags, so the usual whole-base and document targets apply.
    """
    if not tags:
        return ()
    return tuple(
        SearchTarget(
            type=SearchTargetType.KNOWLEDGE_BASE,
            knowledge_base_id=kb_id,
            tag_ids=tuple(tags),
            knowledge_ids=tuple(knowledge_ids),
        )
        for kb_id in kb_ids
    )


class UnknownKnowledgeBase(LookupError):
    """A knowledge base, document or message a question names that is not the tenant's (a 404 naming ``field``).

    ``what`` says what it is.
    """

    def __init__(self, field: str, value: str, what: str = "") -> None:
        """The 404 for ``value`` of ``field``."""
        super().__init__(f"unknown {field}: {value}")
        self.field = field
        self.value = value
        self.what = what or field.removesuffix("_ids").replace("_", " ")


@dataclass
class AcceptedTurn:
    """A turn stored and ready to start: its session, request, plan and both messages."""

    session: Session
    request: PipelineRequest
    plan: list[EventType]
    user_message: Message
    assistant_message: Message
    # A repeated request id: the earlier turn, which is not started again.
    duplicate: bool = False

    @property
    def key(self) -> str:
        """The turn's log key."""
        return stream_key(self.session.id, self.assistant_message.id)

    def ids(self) -> dict[str, str]:
        """The ids a client needs to follow the turn, with its stream's URL."""
        return {
            "session_id": self.session.id,
            "request_id": self.request.request_id,
            "user_message_id": self.user_message.id,
            "assistant_message_id": self.assistant_message.id,
            "stream_url": f"/api/v1/sessions/{self.session.id}/messages/{self.assistant_message.id}/events",
        }


class TurnLauncher(Protocol):
    """What starts and stops turns: a local task runner, or Step Functions."""

    async def launch(self, turn: AcceptedTurn) -> None:
        """Start the accepted turn."""
        ...

    async def cancel(self, session_id: str, message_id: str) -> None:
        """Stop the turn of the assistant message ``message_id``, if it runs."""
        ...

    async def started(self, turn: AcceptedTurn) -> bool:
        """Whether the turn was ever handed to a runner (a lease, a workflow execution), ended or not."""
        ...


class TurnService:
    """Accepts turns (validate, store both messages, open the log) and finalises them; shared by both runtimes."""

    def __init__(
        self,
        config: AppConfig,
        templates: PromptTemplates,
        knowledge: KnowledgeStore,
        sessions: SessionStore,
        stream: StreamManager,
        originals: OriginalStore | None = None,
    ) -> None:
        """A service over the stores and the log, with ``config``'s conversation settings and ``templates``.

        ``originals`` keeps the questions' images (None: a question with images is refused).
        """
        self._originals = originals
        self._config = config
        self._templates = templates
        self._knowledge = knowledge
        self._sessions = sessions
        self._stream = stream
        self._closed = False

    def build_request(
        self,
        session: Session,
        body: QuestionBody,
        request_id: str,
        user_message_id: str,
        assistant_message_id: str,
        user_id: str = "",
        images: Sequence[str] = (),
    ) -> PipelineRequest:
        """The pipeline request of a question: the session's options, the body's, and the configuration's defaults."""
        conversation = self._config.conversation
        kb_ids, knowledge_ids = self.scope(session, body)
        summary = conversation.summary
        fallback_response = self._templates.entry("fallback", conversation.fallback_prompt_id).get(
            "response", conversation.fallback_response
        )
        options: dict[str, Any] = {**session.options}
        return PipelineRequest(
            query=body.query,
            request_id=request_id,
            session_id=session.id,
            tenant_id=session.tenant_id,
            user_id=user_id,
            user_message_id=user_message_id,
            assistant_message_id=assistant_message_id,
            language=body.language or options.get("language") or conversation.language,
            knowledge_base_ids=tuple(kb_ids),
            knowledge_ids=tuple(knowledge_ids),
            search_targets=tag_targets(kb_ids, body.tags or [], knowledge_ids),
            vector_threshold=_pick(body.vector_threshold, conversation.vector_threshold),
            keyword_threshold=_pick(body.keyword_threshold, conversation.keyword_threshold),
            embedding_top_k=_pick(body.embedding_top_k, conversation.embedding_top_k),
            rerank_top_k=_pick(body.rerank_top_k, conversation.rerank_top_k),
            rerank_threshold=conversation.rerank_threshold,
            summary_config=SummaryConfig(
                temperature=_pick(body.temperature, summary.temperature),
                max_completion_tokens=_pick(body.max_completion_tokens, summary.max_completion_tokens),
            ),
            max_rounds=_pick(body.max_rounds, conversation.max_rounds),
            fallback_strategy=body.fallback_strategy or FallbackStrategy(conversation.fallback_strategy),
            fallback_response=str(fallback_response),
            citation_enabled=body.citation_enabled,
            enable_rewrite=_pick(body.enable_rewrite, conversation.enable_rewrite),
            enable_query_expansion=_pick(body.enable_query_expansion, conversation.enable_query_expansion),
            understand_model_id=body.understand_model_id or conversation.understand_model_id,
            rewrite_template_id=body.rewrite_template_id or conversation.rewrite_template_id,
            intent_prompts={
                **conversation.intent_prompts,
                **{str(k): v for k, v in (body.intent_prompts or {}).items()},
            },
            faq_priority_enabled=_pick(body.faq_priority_enabled, conversation.faq_priority_enabled),
            memory_enabled=_pick(body.memory_enabled, conversation.memory_enabled),
            data_analysis_enabled=body.data_analysis_enabled,
            faq_direct_answer_threshold=conversation.faq_direct_answer_threshold,
            faq_score_boost=conversation.faq_score_boost,
            web_search_enabled=body.web_search_enabled,
            web_search_provider_id=body.web_search_provider_id or str(options.get("web_search_provider_id", "")),
            web_fetch_enabled=_pick(body.web_fetch_enabled, body.web_search_enabled),
            chat_model_id=body.summary_model_id or "",
            title_enabled=not body.disable_title,
            images=tuple(images),
            chat_model_supports_vision=conversation.chat_model_supports_vision,
            vlm_model_id=conversation.vlm_model_id,
        )

    def scope(self, session: Session, body: QuestionBody) -> tuple[list[str], list[str]]:
        """The knowledge bases and documents a question searches.

        Those it names, else its session's; asked through the built-in quick-answer agent with neither, every knowledge
        base of the tenant.
        """
        kb_ids, knowledge_ids = body.scope(session)
        if not kb_ids and not knowledge_ids and body.agent_id == QUICK_ANSWER_AGENT_ID:
            kb_ids = [kb.id for kb in self._knowledge.list_knowledge_bases(session.tenant_id)]
        return kb_ids, knowledge_ids

    def validate_scope(self, session: Session, body: QuestionBody) -> None:
        """Every knowledge base and document named must be the tenant's own (else: unknown, 404)."""
        kb_ids, knowledge_ids = self.scope(session, body)
        found = {kb.id for kb in self._knowledge.knowledge_bases(session.tenant_id, kb_ids)}
        for kb_id in kb_ids:
            if kb_id not in found:
                raise UnknownKnowledgeBase("knowledge_base_ids", kb_id)
        for knowledge_id in knowledge_ids:
            if self._knowledge.document(session.tenant_id, knowledge_id) is None:
                raise UnknownKnowledgeBase("knowledge_ids", knowledge_id)

    def alternative_root(self, session: Session, message_id: str | None) -> str:
        """The first assistant message of the alternatives ``message_id`` belongs to ("" for none)."""
        if not message_id:
            return ""
        message = self._sessions.message(session.tenant_id, session.id, message_id)
        if message is None or message.role != "assistant":
            raise UnknownKnowledgeBase("alternative_of", message_id, "answer")
        return message.alternative_of or message.id

    async def accept(
        self, session: Session, body: QuestionBody, user_id: str = "", *, agent_requested: bool = False
    ) -> AcceptedTurn:
        """Validate, store both messages, open the log with ``agent_query``.

        Nothing is stored if validation fails.

        ``agent_requested`` (WeKnora's agent chat, or ``agent_enabled``): the turn runs this pipeline all
        the same, and its ``agent_query`` event says agent mode is off.
        """
        if self._closed:
            raise TurnsClosed("the server is shutting down; ask again once it is back")
        # The stores and the images (decoded, kept) off the event loop that serves the streams.
        turn = await asyncio.to_thread(self._store_turn, session, body, user_id)
        if turn.duplicate:
            return turn
        await self._stream.append_event(
            turn.key,
            StreamEvent(
                id=turn.request.request_id,
                type=ResponseType.AGENT_QUERY,
                content=body.query,
                done=True,
                data={
                    "session_id": session.id,
                    "assistant_message_id": turn.assistant_message.id,
                    "request_id": turn.request.request_id,
                    **(AGENT_MODE_OFF if agent_requested or body.agent_enabled else {}),
                },
            ),
        )
        return turn

    def _store_turn(self, session: Session, body: QuestionBody, user_id: str) -> AcceptedTurn:
        """The turn's two messages stored (or the earlier turn of a repeated request id, ``duplicate``)."""
        self.validate_scope(session, body)
        images = read_question_images(body.images or [], session.tenant_id, self._originals)
        ignored = sorted(set(IGNORED_QUESTION_FIELDS) & body.model_fields_set)
        if ignored:
            logger.debug("question: ignoring WeKnora fields %s", ", ".join(ignored), extra={"session_id": session.id})
        request_id = body.request_id or str(uuid.uuid4())
        if body.request_id:
            earlier = self._sessions.message_by_request(session.tenant_id, session.id, request_id)
            if earlier is not None:
                user, assistant = earlier
                handles = [image["url"] for image in user.images]
                request = self.build_request(session, body, request_id, user.id, assistant.id, user_id, handles)
                return AcceptedTurn(session, request, build_plan(request), user, assistant, duplicate=True)
        alternative_of = self.alternative_root(session, body.alternative_of)
        kept = keep_question_images(images, session.tenant_id, self._originals)
        user, assistant = self._sessions.create_turn(
            session, request_id, body.query, alternative_of, user_id, images=kept
        )
        if not session.title and not body.disable_title:
            # At once, the question's first words; the generated title replaces them when the turn ends.
            self._sessions.set_provisional_title(
                session.tenant_id, session.id, heuristic_title(body.query or IMAGE_ONLY_TITLE)
            )
        handles = [image["url"] for image in kept]
        request = self.build_request(session, body, request_id, user.id, assistant.id, user_id, handles)
        return AcceptedTurn(session, request, build_plan(request), user, assistant)

    async def never_started(self, turn: AcceptedTurn, launcher: TurnLauncher) -> bool:
        """A repeated request whose turn was stored (its ``agent_query`` written) but never started.

        The accept that stored it died before starting it (a crash, a failed start). Such a turn is started by the
        repeat; one still being accepted (no ``agent_query`` yet), running or ended is not.
        """
        if not turn.duplicate:
            return False
        events = await self._stream.get_events(turn.key)
        if not events or any(e.is_terminal for e in events):
            return False
        return not await launcher.started(turn)

    def close(self) -> None:
        """Accept no more turns (the process is shutting down); ``accept`` raises :class:`TurnsClosed`."""
        self._closed = True

    async def finalize(self, session_id: str, message_id: str) -> bool:
        """Complete the assistant message with what its log says the client received.

        Called once the log has its terminal event: the message's content and stop reason then say what
        the stream says (text up to the terminal event; ``stopped``, ``error`` or ``interrupted``).
        """
        summary = summarize_answer(await self._stream.get_events(stream_key(session_id, message_id)))
        return await asyncio.to_thread(
            self._sessions.complete_assistant_message,
            session_id,
            message_id,
            summary.content,
            summary.references,
            summary.stop_reason,
        )

    async def with_ended_answers(self, messages: Sequence[Message]) -> list[Message]:
        """``messages``, each answer whose log has ended saved from it first.

        A turn's message is saved from its log just after the log's last event: a client that read that event and
        asks for the conversation at once gets the saved answer, not the one still being written.
        """
        out = []
        for message in messages:
            if message.role == "assistant" and not message.is_completed:
                last = await self._stream.last_event(stream_key(message.session_id, message.id))
                if last is not None and last.is_terminal:
                    await self.finalize(message.session_id, message.id)
                    saved = await asyncio.to_thread(
                        self._sessions.message, message.tenant_id, message.session_id, message.id
                    )
                    message = saved or message
            out.append(message)
        return out

    async def interrupt(self, session_id: str, message_id: str, request_id: str = "", cause: str = "restart") -> bool:
        """End a turn whose runner is gone (or is going); True when this call wrote the terminal event.

        End a turn whose runner is gone (or is going): ``error`` with ``data.reason = "interrupted"``, appended only if
        the log has no terminal event yet, then the message completed with the partial answer and ``stop_reason =
        "interrupted"``. True when this call wrote the terminal event.

        ``cause`` says why, for the client and the logs: ``restart`` (found at start), ``shutdown``
        (the grace period ran out), ``runner_lost`` (a sweep found its runner gone).
        """
        key = stream_key(session_id, message_id)
        summary = summarize_answer(await self._stream.get_events(key))
        written = await self._stream.append_if_open(key, interrupted_event(request_id or message_id, cause, summary))
        await self.finalize(session_id, message_id)
        return written is not None

    async def stop(self, launcher: TurnLauncher, tenant_id: str, session_id: str, message_id: str) -> str:
        """Stop a running turn: cancel first (nothing more is appended), then ``stop``, then save.

        Returns ``"stopped"``, or for a turn that had already ended ``"already_completed"``,
        ``"already_stopped"``, ``"already_failed"`` or ``"already_interrupted"`` (see :data:`STOP_REPLIES`);
        raises ``LookupError`` for an unknown message.
        """
        message = await asyncio.to_thread(self._sessions.message, tenant_id, session_id, message_id)
        if message is None or message.role != "assistant":
            raise LookupError(message_id)
        if message.is_completed:
            return _already(message.stop_reason)
        await launcher.cancel(session_id, message_id)
        key = stream_key(session_id, message_id)
        stopped = await self._stream.append_if_open(
            key,
            StreamEvent(
                id=f"stop-{time.time_ns()}",
                type=ResponseType.STOP,
                content="Generation stopped by user",
                done=True,
                data={"session_id": session_id, "message_id": message_id, "reason": "user_requested"},
            ),
        )
        await self.finalize(session_id, message_id)
        if stopped is None:
            # The turn ended on its own between the look at the message and the stop.
            return _already(summarize_answer(await self._stream.get_events(key)).stop_reason)
        return "stopped"


# What the stop route answers, by the status ``TurnService.stop`` returns.
STOP_REPLIES: dict[str, str] = {
    "stopped": "Generation stopped",
    "already_completed": "The answer had already completed",
    "already_stopped": "The answer had already been stopped",
    "already_failed": "The answer had already ended with an error",
    "already_interrupted": "The answer had already been interrupted",
}


def _already(stop_reason: str) -> str:
    return {"stopped": "already_stopped", "error": "already_failed", INTERRUPTED: "already_interrupted"}.get(
        stop_reason, "already_completed"
    )


class TurnsClosed(RuntimeError):
    """The process is shutting down and accepts no new turn (HTTP 503)."""


class TurnStarting(RuntimeError):
    """Another accept of the same request is starting the turn right now, or died doing so.

    Another accept of the same request is starting the turn right now, or died doing so a moment ago (HTTP 503: asked
    again shortly, the turn is found started, or started then).
    """


INTERRUPTED = "interrupted"
INTERRUPTED_MESSAGES = {
    "restart": "The answer was interrupted: the server stopped while it was being written.",
    "shutdown": "The answer was interrupted: the server shut down before it was finished.",
    "runner_lost": "The answer was interrupted: the process writing it is gone.",
    "unverifiable": "The answer was interrupted: whether it was still being written could not be checked.",
}


def interrupted_event(request_id: str, cause: str, summary: AnswerSummary) -> StreamEvent:
    """The terminal ``error`` of a turn whose runner is gone.

    ``data.partial`` says whether answer text was already streamed (it is kept, in the log and in the message).
    """
    message = INTERRUPTED_MESSAGES.get(cause, INTERRUPTED_MESSAGES["runner_lost"])
    return StreamEvent(
        id=f"{request_id[:8]}-interrupted",
        type=ResponseType.ERROR,
        content=message,
        done=True,
        data={
            "stage": "knowledge_qa_execution",
            "error_type": INTERRUPTED,
            "reason": INTERRUPTED,
            "cause": cause,
            "partial": bool(summary.content),
            "answer_chars": len(summary.content),
            "error": message,
        },
    )


_T = TypeVar("_T")


def _pick(value: _T | None, default: _T) -> _T:
    return default if value is None else value
