"""CHAT_COMPLETION: the answer from the assembled messages in one blocking call (CHAT_COMPLETION_STREAM, the
streamed one, is :mod:`ragline.pipeline.chat_completion_stream`)."""

from __future__ import annotations

from ragline.config import PromptTemplates
from ragline.event.bus import BusEventType
from ragline.modelcontext import expand_text
from ragline.models.base import ModelCallError
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.pipeline.emit import emit, event_id
from ragline.pipeline.generation import (
    attach_passage_parts,
    build_messages,
    chat_options,
)
from ragline.pipeline.plugin import ERR_GET_CHAT_MODEL, ERR_MODEL_CALL, NextFn, PluginError
from ragline.store.base import KnowledgeStore
from ragline.types import ChatManage, EventType


class PluginChatCompletion:
    """One blocking call; the answer lands in ``state.chat_response`` and as a single done event."""

    def __init__(
        self,
        models: ModelRegistry,
        templates: PromptTemplates,
        prompt_id: str,
        knowledge: KnowledgeStore | None = None,
    ) -> None:
        self._models = models
        self._templates = templates
        self._prompt_id = prompt_id
        self._knowledge = knowledge

    def activation_events(self) -> list[EventType]:
        return [EventType.CHAT_COMPLETION]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        try:
            model = self._models.chat_model(cm.request.chat_model_id)
        except UnknownModel as exc:
            return ERR_GET_CHAT_MODEL.with_cause(f"unknown chat model {exc}")
        messages, registry = build_messages(cm, self._templates, self._prompt_id)
        attach_passage_parts(cm, registry, self._knowledge)
        try:
            reply = await model.chat(messages, chat_options(cm))
        except ModelCallError as exc:
            return ERR_MODEL_CALL.with_cause(exc)
        cm.state.chat_response = expand_text(reply.content, registry)
        cm.state.chat_finish_reason = reply.finish_reason or ""
        answer_id = event_id(cm, "answer")
        data: dict[str, object] = {"event_id": answer_id}
        if reply.finish_reason in {"length", "max_tokens", "max_output_tokens"}:
            data["truncated"] = True
        await emit(cm, BusEventType.FINAL_ANSWER, answer_id, cm.state.chat_response, done=True, data=data)
        return await next()
