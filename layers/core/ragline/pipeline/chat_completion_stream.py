"""CHAT_COMPLETION_STREAM: the answer from the assembled messages, streamed as thinking and answer events."""

from __future__ import annotations

import asyncio
import time

from ragline.config import PromptTemplates
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.pipeline.emit import event_id
from ragline.pipeline.generation import (
    attach_passage_parts,
    build_messages,
    finish_answer,
    stream_reply,
    vision_images,
)
from ragline.pipeline.plugin import ERR_GET_CHAT_MODEL, ERR_MODEL_CALL, NextFn, PluginError
from ragline.store.base import KnowledgeStore
from ragline.types import ChatManage, EventType
from ragline.types.images import ImageLoader


class PluginChatCompletionStream:
    """Streams thinking and answer events; ``done`` exactly once; model failures become ``model_call_failed``."""

    def __init__(
        self,
        models: ModelRegistry,
        templates: PromptTemplates,
        prompt_id: str,
        knowledge: KnowledgeStore | None = None,
        images: ImageLoader | None = None,
    ) -> None:
        """A generation stage using ``models``, the prompt ``prompt_id`` of ``templates``, and ``knowledge`` for document names."""
        self._models = models
        self._templates = templates
        self._prompt_id = prompt_id
        self._knowledge = knowledge
        # Reads kept images (the question's, the passages') for a chat model that sees them.
        self._images = images

    def activation_events(self) -> list[EventType]:
        """Runs at CHAT_COMPLETION_STREAM."""
        return [EventType.CHAT_COMPLETION_STREAM]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Stream the answer to the bus; a model failure becomes ``model_call_failed``."""
        if cm.context.event_bus is None:
            return ERR_MODEL_CALL.with_cause("streaming needs an event bus")
        try:
            model = self._models.chat_model(cm.request.chat_model_id)
        except UnknownModel as exc:
            return ERR_GET_CHAT_MODEL.with_cause(f"unknown chat model {exc}")
        images = await asyncio.to_thread(vision_images, cm, self._images)
        messages, registry = build_messages(cm, self._templates, self._prompt_id, images)
        attach_passage_parts(cm, registry, self._knowledge)
        answer_id = event_id(cm, "answer")
        started = time.monotonic()
        outcome = await stream_reply(cm, model, messages, registry, answer_id=answer_id)
        cm.state.chat_response = outcome.answer_text
        cm.state.chat_finish_reason = outcome.finish_reason or ""
        if outcome.cancelled or cm.context.cancelled():
            return None  # the orchestrator sees the stop; no done event after a stop
        if outcome.error is not None:
            return ERR_MODEL_CALL.with_cause(outcome.error)
        await finish_answer(cm, outcome, answer_id=answer_id, started=started)
        return await next()
