"""QUERY_UNDERSTAND: rewrite the question, classify its intent, describe attached images.

One model call answers all three as JSON (see :mod:`ragline.understanding.parse`). Understanding is an
enhancement: a missing model, a failed call or an unreadable reply leave the original question and an
empty intent (which searches), and the turn goes on. This stage never returns an error of its own.

Which model:
- images and a vision-capable chat model: the chat model, with the images;
- images and a VLM configured: the VLM, with the images;
- otherwise the dedicated understanding model, falling back to the chat model when it cannot be had.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ragline.config import PromptTemplates
from ragline.ingest.images import sniff
from ragline.models.base import TRUNCATION_REASONS, ChatModel, data_url
from ragline.models.extractive import model_writes
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.pipeline.load_history import pair_rounds
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.reads import read_off_loop
from ragline.store.base import SessionStore
from ragline.types import ChatManage, ChatOptions, EventType, History
from ragline.types.images import ImageLoader
from ragline.types.intent import needs_retrieval
from ragline.understanding.acceptance import rewrite_rejection
from ragline.understanding.notes import UserMessageNotes
from ragline.understanding.parse import Understanding, parse_understanding
from ragline.understanding.prompt import (
    DEFAULT_REWRITE_TEMPLATE_ID,
    intent_system_prompt,
    understanding_messages,
    without_image_markers,
)

logger = logging.getLogger(__name__)

# The reference design's sampling for this call: low temperature for a stable label, no reasoning
# (it would eat the output budget), a budget that fits the JSON of a rewrite and an intent.
UNDERSTAND_TEMPERATURE = 0.3
UNDERSTAND_MAX_TOKENS = 150
# With images the reply also carries the full OCR transcript of every image.
UNDERSTAND_MAX_TOKENS_WITH_IMAGES = 2048
# Messages read from the session when LOAD_HISTORY has not already filled the history.
DEFAULT_HISTORY_MESSAGES = 20
# Where the image description is left for later stages of this process until PipelineState has a field.
IMAGE_DESCRIPTION_EXTRA = "image_description"


@dataclass(frozen=True)
class _ModelChoice:
    model_id: str
    sends_images: bool


class PluginQueryUnderstand:
    """Rewrite + intent (+ image description) for one turn.

    ``understand_model_id``: a small model dedicated to this call ("" = the chat model); the request's
    ``understand_model_id`` wins over it, as its ``rewrite_template_id`` over the one given here.
    ``agent_intent_prompts``: an agent's system prompt per intent, preferred over intent_prompts.yaml; the
    request's ``intent_prompts`` win over both.
    ``notes``: where the image description is written for later turns (fire and forget).
    """

    def __init__(
        self,
        models: ModelRegistry,
        sessions: SessionStore,
        templates: PromptTemplates,
        understand_model_id: str = "",
        history_messages: int = DEFAULT_HISTORY_MESSAGES,
        agent_intent_prompts: Mapping[str, str] | None = None,
        notes: UserMessageNotes | None = None,
        rewrite_template_id: str = DEFAULT_REWRITE_TEMPLATE_ID,
        images: ImageLoader | None = None,
        ocr: Callable[[bytes], str] | None = None,
    ) -> None:
        """A stage asking ``models`` with ``templates``; ``history_messages`` recent messages give the question context."""
        self._models = models
        self._sessions = sessions
        self._templates = templates
        self._understand_model_id = understand_model_id
        self._history_messages = history_messages
        self._agent_intent_prompts = dict(agent_intent_prompts or {})
        self._notes = notes
        self._rewrite_template_id = rewrite_template_id
        self._images = images
        self._ocr = ocr
        # Strong references to note writes in flight: the event loop keeps only weak ones.
        self._pending_notes: set[asyncio.Task[None]] = set()

    def activation_events(self) -> list[EventType]:
        """Runs at QUERY_UNDERSTAND."""
        return [EventType.QUERY_UNDERSTAND]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Rewrite the question and classify its intent (and describe its images) when the request asks for it."""
        request = cm.request
        if not request.enable_rewrite and not request.images:
            return await next()
        log = {"stage": event_type.value, "session_id": request.session_id}

        selected = self._select_model(cm, log)
        sends_images = selected is not None and selected[1] and model_writes(selected[0])
        query, shown = request.query, request.images
        if request.images:
            shown = await asyncio.to_thread(self._data_urls, cm) if sends_images else ()
            sends_images = bool(shown)
            if not sends_images:
                # No model here can see them: their text, read by OCR, joins the question (and the search).
                text = await asyncio.to_thread(self._image_text, cm)
                if text:
                    cm.state.image_text = text
                    query = f"{request.query}\n\n{text}".strip()
                    cm.state.rewrite_query = query
                shown = request.images
        if selected is None:
            logger.warning("no model for query understanding; keeping the question", extra=log)
            return await next()
        model = selected[0]
        if not model_writes(model):
            logger.debug("the chat model does not write text; keeping the question", extra=log)
            return await next()
        history = await read_off_loop(self._history, cm, log)
        try:
            messages = understanding_messages(
                self._templates,
                query=query,
                history=history,
                language=request.language,
                images=shown,
                send_images=sends_images,
                template_id=request.rewrite_template_id or self._rewrite_template_id,
            )
        except KeyError:
            logger.warning("rewrite prompt template missing; keeping the question", exc_info=True, extra=log)
            return await next()

        options = ChatOptions(
            temperature=UNDERSTAND_TEMPERATURE,
            max_tokens=UNDERSTAND_MAX_TOKENS_WITH_IMAGES if sends_images else UNDERSTAND_MAX_TOKENS,
            thinking=False,
        )
        try:
            response = await model.chat(messages, options)
        except Exception:  # any failure of the call, not only ModelCallError: understanding is optional
            logger.warning("query understanding call failed; keeping the question", exc_info=True, extra=log)
            return await next()
        if response.finish_reason in TRUNCATION_REASONS:
            logger.info("query understanding reply cut by the output limit", extra=log)

        understanding = parse_understanding(response.content)
        understanding = dataclasses.replace(
            understanding, rewrite_query=without_image_markers(understanding.rewrite_query)
        )
        if not understanding.parsed:
            logger.warning("query understanding reply unreadable; keeping the question", extra=log)
            return await next()
        rejected = understanding.rewrite_query and rewrite_rejection(
            understanding.rewrite_query,
            query,
            history,
            (m.content for m in messages),
            seen=(understanding.image_description,) if sends_images else (),
        )
        if rejected:
            # Searching for a line of the prompt, or for something unrelated, would find nothing asked for.
            logger.info("rewrite ignored (%s); searching the question as asked", rejected, extra=log)
            understanding = dataclasses.replace(understanding, rewrite_query="")
        self._apply(cm, understanding, sends_images)
        return await next()

    def _load(self, cm: ChatManage, url: str) -> bytes | None:
        """The bytes behind one image handle; None when it is not kept here or cannot be read."""
        if self._images is None:
            return None
        try:
            return self._images(cm.request.tenant_id, url)
        except Exception:
            logger.warning(
                "a question image could not be read", exc_info=True, extra={"session_id": cm.request.session_id}
            )
            return None

    def _data_urls(self, cm: ChatManage) -> tuple[str, ...]:
        """The question's images for a model that can see them.

        Kept ones as ``data:`` URLs, web and ``data:`` URLs as they are; handles that cannot be read are left out.
        """
        urls = []
        for url in cm.request.images:
            raw = self._load(cm, url)
            if raw is not None:
                urls.append(data_url(raw, sniff(raw) or "image/png"))
            elif url.startswith(("https://", "http://", "data:")):
                urls.append(url)
        return tuple(urls)

    def _image_text(self, cm: ChatManage) -> str:
        """The OCR text of the question's images, one block per image with text ("" without an OCR engine)."""
        if self._ocr is None:
            return ""
        blocks = []
        loaded = [raw for raw in (self._load(cm, url) for url in cm.request.images) if raw is not None]
        for number, raw in enumerate(loaded, start=1):
            try:
                text = self._ocr(raw).strip()
            except Exception:
                logger.warning(
                    "OCR of a question image failed", exc_info=True, extra={"session_id": cm.request.session_id}
                )
                continue
            if text:
                blocks.append(f"[Image {number}] {text}")
        return "\n".join(blocks)

    async def wait_for_notes(self) -> None:
        """Wait for image-description writes still running (a serverless step calls this before it returns)."""
        if self._pending_notes:
            await asyncio.gather(*self._pending_notes, return_exceptions=True)

    # ---------------------------------------------------------------------------------------------------

    def _history(self, cm: ChatManage, log: dict[str, str]) -> list[History]:
        """LOAD_HISTORY's rounds when it ran; else the session's newest messages, paired here.

        ``max_rounds <= 0`` means the conversation is single-turn on purpose: no old rounds may leak in.
        """
        if cm.state.history:
            return cm.state.history
        max_rounds = cm.request.max_rounds
        if max_rounds <= 0:
            return []
        try:
            messages = self._sessions.recent_messages(cm.request.session_id, self._history_messages)
        except Exception:
            logger.warning("history read failed; understanding without it", exc_info=True, extra=log)
            return []
        cm.state.history = pair_rounds(messages, max_rounds, exclude_request_id=cm.request.request_id)
        return cm.state.history

    def _candidates(self, cm: ChatManage) -> Iterator[_ModelChoice]:
        """Models to try, best first; see the module docstring."""
        request = cm.request
        if request.images:
            if request.chat_model_supports_vision:
                yield _ModelChoice(request.chat_model_id, sends_images=True)
            if request.vlm_model_id:
                yield _ModelChoice(request.vlm_model_id, sends_images=True)
        understand_model_id = request.understand_model_id or self._understand_model_id
        if understand_model_id:
            yield _ModelChoice(understand_model_id, sends_images=False)
        yield _ModelChoice(request.chat_model_id, sends_images=False)

    def _select_model(self, cm: ChatManage, log: dict[str, str]) -> tuple[ChatModel, bool] | None:
        unavailable: set[str] = set()
        for choice in self._candidates(cm):
            if choice.model_id in unavailable:
                continue
            try:
                return self._models.chat_model(choice.model_id), choice.sends_images
            except UnknownModel:
                logger.warning("model %r unavailable for query understanding", choice.model_id, extra=log)
            except Exception:
                logger.warning("model %r failed to load", choice.model_id, exc_info=True, extra=log)
            unavailable.add(choice.model_id)
        return None

    def _apply(self, cm: ChatManage, understanding: Understanding, sends_images: bool) -> None:
        state, request = cm.state, cm.request
        if understanding.rewrite_query:
            state.rewrite_query = understanding.rewrite_query
        state.intent = understanding.intent
        # A description from a model that never saw the images would be invented.
        if sends_images and understanding.image_description:
            cm.context.extras[IMAGE_DESCRIPTION_EXTRA] = understanding.image_description
            state.image_description = understanding.image_description
            self._store_image_description(cm, understanding.image_description)
        if not needs_retrieval(state.intent, request.web_search_enabled):
            prompt = intent_system_prompt(
                state.intent,
                request.language,
                self._templates,
                {**self._agent_intent_prompts, **request.intent_prompts},
            )
            if prompt:
                state.system_prompt_override = prompt

    def _store_image_description(self, cm: ChatManage, description: str) -> None:
        """Write the description onto the user message in the background; a failure is only logged."""
        message_id = cm.request.user_message_id or cm.context.user_message_id
        if self._notes is None or not message_id:
            return
        task = asyncio.create_task(
            asyncio.to_thread(self._notes.set_image_description, cm.request.session_id, message_id, description)
        )
        self._pending_notes.add(task)
        task.add_done_callback(self._note_written)

    def _note_written(self, task: asyncio.Task[None]) -> None:
        self._pending_notes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning(
                "storing the image description failed",
                exc_info=task.exception(),
                extra={"stage": EventType.QUERY_UNDERSTAND.value},
            )
