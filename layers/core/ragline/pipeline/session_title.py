"""Session titles: generated on a session's first turn, alongside the answer, and sent as ``session_title``.

The title is asked for when the turn starts and waited for (at most ``TITLE_WAIT_S``) just before
``complete``, so the stream carries it and nothing comes after ``complete``. Without a generative model
(the extractive default) the title is the question's first words.
"""

from __future__ import annotations

import asyncio
import logging
import re

from ragline.config import PromptTemplates, render_placeholders
from ragline.event.bus import BusEventType
from ragline.models.base import ChatMessage, is_generative
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.observability import failed_call
from ragline.pipeline.emit import emit, event_id
from ragline.store.base import SessionStore
from ragline.types import ChatManage, ChatOptions

logger = logging.getLogger(__name__)

TITLE_WAIT_S = 3.0
TITLE_MAX_TOKENS = 32
TITLE_MAX_CHARS = 60
TITLE_MAX_WORDS = 8
_TASK_KEY = "session_title_task"
_PREFIX = re.compile(r"^\s*(?:title|titre|标题)\s*[:：]\s*", re.IGNORECASE)
_EDGE = re.compile(r"^[\s\"'“”‘’`*#>\-]+|[\s\"'“”‘’`*.。!！?？:：;；,，]+$")
# Markup a model may put in any reply: citation tags (<ref id="1"/>, <kb .../>), HTML, a thinking block.
_THINKING = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
_MARKDOWN = re.compile(r"(\*\*|__|`)")
# Numbered citation markers an answer-style reply carries: [1], [1, 2], [^3].
_CITATION = re.compile(r"\[\^?\d+(?:\s*[,，]\s*\d+)*\]")
# Control characters (Cc) and the bidirectional controls, which could reorder what the page shows.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain_text(text: str) -> str:
    """``text`` without tags, citation markers, emphasis marks or control characters: what a title may hold."""
    text = _CONTROL.sub("", _THINKING.sub("", text))
    return _CITATION.sub("", _MARKDOWN.sub("", _TAG.sub("", text)))


def clean_title(text: str, max_chars: int = TITLE_MAX_CHARS) -> str:
    """The first non-empty line of plain text, cut at a word when longer than ``max_chars``.

    The first non-empty line of plain text (no tags, quotes, markup, "Title:" prefix or final punctuation), cut at a
    word with "…" when longer than ``max_chars``.
    """
    line = next((line for line in plain_text(text).splitlines() if line.strip()), "")
    title = _EDGE.sub("", _PREFIX.sub("", _EDGE.sub("", line)))
    title = " ".join(title.split())
    if len(title) > max_chars:
        cut = title.rfind(" ", 0, max_chars)
        title = _EDGE.sub("", title[: cut if cut > max_chars // 2 else max_chars - 1]) + "…"
    return title


def heuristic_title(query: str) -> str:
    """The question's first words (``TITLE_MAX_WORDS``), cut at a word with "…" when there are more."""
    words = " ".join(plain_text(query).split()).split(" ")
    title = clean_title(" ".join(words[:TITLE_MAX_WORDS]))
    if len(words) > TITLE_MAX_WORDS and not title.endswith("…"):
        title += "…"
    return title[:1].upper() + title[1:]


class SessionTitler:
    """Titles a conversation from its first question, in the background of the first turn."""

    def __init__(self, sessions: SessionStore, models: ModelRegistry, templates: PromptTemplates) -> None:
        """A titler storing titles in ``sessions``, asking ``models`` with ``templates``."""
        self._sessions = sessions
        self._models = models
        self._templates = templates

    def needs_title(self, cm: ChatManage) -> bool:
        """True when the request wants a title and the session has none (or only a provisional one)."""
        if not cm.request.title_enabled:
            return False
        session = self._sessions.session(cm.request.tenant_id, cm.request.session_id)
        return session is not None and (not session.title or session.title_provisional)

    async def generate(self, cm: ChatManage) -> str:
        """A title for the turn's question, in the request's language and with its chat model."""
        return await self.title_for(
            cm.request.query, cm.request.language, cm.request.chat_model_id, cm.request.session_id
        )

    async def title_for(self, query: str, language: str, chat_model_id: str = "", session_id: str = "") -> str:
        """A title for a conversation that starts with ``query``.

        The chat model's, or the query's first words when there is no generative model or it fails.
        """
        try:
            model = self._models.chat_model(chat_model_id)
        except UnknownModel:
            return heuristic_title(query)
        if not is_generative(model):
            return heuristic_title(query)
        prompt = render_placeholders(
            self._templates.get("generate_session_title", "default"), {"query": query, "language": language}
        )
        try:
            reply = await model.chat(
                [ChatMessage("user", prompt)], ChatOptions(temperature=0.3, max_tokens=TITLE_MAX_TOKENS, thinking=False)
            )
        except Exception:
            logger.warning("title generation failed", exc_info=True, extra={"session_id": session_id})
            return heuristic_title(query)
        return clean_title(reply.content) or heuristic_title(query)

    def start(self, cm: ChatManage) -> None:
        """Begin generating while the turn runs (embedded runtime: one process for the whole turn)."""
        if cm.request.title_enabled:
            cm.context.extras[_TASK_KEY] = asyncio.ensure_future(self._generate_if_needed(cm))

    async def _generate_if_needed(self, cm: ChatManage) -> str:
        """A title when the session needs one ("" when it does not), the session read off the event loop."""
        if not await asyncio.to_thread(self.needs_title, cm):
            return ""
        return await self.generate(cm)

    async def finish(self, cm: ChatManage) -> None:
        """Wait (bounded) for the title, store it and send it; a slow or failed title never delays much."""
        task = cm.context.extras.pop(_TASK_KEY, None)
        if task is None:
            if not await asyncio.to_thread(self.needs_title, cm):
                return
            task = asyncio.ensure_future(self.generate(cm))
        try:
            title = await asyncio.wait_for(task, timeout=TITLE_WAIT_S)
        except (TimeoutError, asyncio.CancelledError):
            return
        except Exception:
            logger.warning("title generation failed", exc_info=True, extra={"session_id": cm.request.session_id})
            return
        if not title:
            return
        try:
            await asyncio.to_thread(self._sessions.set_title, cm.request.tenant_id, cm.request.session_id, title)
        except Exception as exc:  # the answer stands untitled: a title is never worth a failed turn
            logger.error(
                "session title not stored: the turn stays untitled",
                exc_info=True,
                extra={"session_id": cm.request.session_id, **failed_call(exc)},
            )
            return
        await emit(
            cm,
            BusEventType.SESSION_TITLE,
            event_id(cm, "title"),
            title,
            done=True,
            data={"session_id": cm.request.session_id, "title": title},
        )
