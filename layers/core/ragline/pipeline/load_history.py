"""LOAD_HISTORY: the session's recent rounds, paired by request id, oldest first."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from ragline.models.base import strip_think_tags
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.reads import read_off_loop
from ragline.store.base import SessionStore
from ragline.store.models import Message
from ragline.types import ChatManage, EventType, History, SearchResult

logger = logging.getLogger(__name__)

# Fetch more than two messages per round: unpaired or unfinished messages must not starve the window.
_EXTRA_MESSAGES = 10


def question_with_captions(query: str, images: Sequence[Mapping[str, str]]) -> str:
    """A past question with what its images showed (their captions), as the next turn's history reads it."""
    captions = [image.get("caption", "").strip() for image in images]
    notes = [f"[Image {n}: {caption}]" for n, caption in enumerate(captions, start=1) if caption]
    return "\n".join([query, *notes]) if notes else query


def pair_rounds(messages: Iterable[Message], max_rounds: int, exclude_request_id: str = "") -> list[History]:
    """Pair user and assistant messages by request id; keep the newest ``max_rounds`` in chronological order.

    A round needs both halves and a completed answer with text; the current request is excluded. Of turns that
    are alternatives of one another (regenerated or edited: ``alternative_of``), the newest alone counts, and
    none when the current request is itself one of them (it replaces them).
    """
    by_request: dict[str, dict[str, Message]] = {}
    replaced = ""
    for message in messages:
        if message.request_id == exclude_request_id:
            replaced = replaced or message.alternative_of
            continue
        by_request.setdefault(message.request_id, {})[message.role] = message
    newest: dict[str, str] = {}  # alternative group → the created_at of its newest turn
    for pair in by_request.values():
        if "assistant" in pair:
            group = pair["assistant"].alternative_of or pair["assistant"].id
            newest[group] = max(newest.get(group, ""), pair["assistant"].created_at)
    rounds: list[tuple[str, History]] = []
    for request_id, pair in by_request.items():
        user, assistant = pair.get("user"), pair.get("assistant")
        if user is None or assistant is None or not assistant.is_completed:
            continue
        group = assistant.alternative_of or assistant.id
        if group == replaced or assistant.created_at < newest[group]:
            continue
        answer = strip_think_tags(assistant.content)
        if not answer:
            continue
        rounds.append(
            (
                user.created_at,
                History(
                    query=question_with_captions(user.content, user.images),
                    answer=answer,
                    request_id=request_id,
                    created_at=user.created_at,
                    knowledge_references=_references(assistant),
                ),
            )
        )
    rounds.sort(key=lambda item: item[0], reverse=True)
    return [history for _, history in reversed(rounds[:max_rounds])]


def _references(message: Message) -> list[SearchResult]:
    """The answer's references, for the merge stage's history step; unreadable ones are skipped."""
    references: list[SearchResult] = []
    for item in message.knowledge_references:
        try:
            references.append(SearchResult.model_validate(item))
        except ValueError:
            continue
    return references


class PluginLoadHistory:
    """The LOAD_HISTORY stage: the session's last ``max_rounds`` turns, as the model reads them."""

    def __init__(self, sessions: SessionStore) -> None:
        """A stage reading messages from ``sessions``."""
        self._sessions = sessions

    def activation_events(self) -> list[EventType]:
        """Runs at LOAD_HISTORY."""
        return [EventType.LOAD_HISTORY]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Write ``state.history`` from the session's recent messages; ``max_rounds`` <= 0 turns history off."""
        max_rounds = cm.request.max_rounds
        # max_rounds <= 0 means multi-turn is off on purpose: no fallback to a global default.
        if max_rounds <= 0:
            return await next()
        try:
            messages = await read_off_loop(
                self._sessions.recent_messages, cm.request.session_id, max_rounds * 2 + _EXTRA_MESSAGES
            )
        except Exception:
            # History is an enhancement: a failed read must not fail the answer.
            logger.warning("history read failed", exc_info=True, extra={"stage": event_type.value})
            return await next()
        cm.state.history = pair_rounds(messages, max_rounds, exclude_request_id=cm.request.request_id)
        return await next()
