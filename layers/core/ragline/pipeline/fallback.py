"""The answer when search found nothing: a fixed text, or the model answering freely (and saying so)."""

from __future__ import annotations

import time

from ragline.config import PromptTemplates, render_placeholders
from ragline.event.bus import BusEventType
from ragline.modelcontext import SourceRegistry
from ragline.models.base import ChatMessage
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.pipeline.emit import emit, event_id
from ragline.pipeline.generation import finish_answer, stream_reply
from ragline.store.base import KnowledgeStore
from ragline.types import ChatManage, FallbackStrategy

MAX_LISTED_DOCUMENTS = 50
MAX_DESCRIPTION_CHARS = 100
_FALLBACK_DATA = {"is_fallback": True}


class FallbackResponder:
    """The answer of a turn that found nothing: the request's fixed text, or the chat model's reply."""

    def __init__(
        self, models: ModelRegistry, templates: PromptTemplates, knowledge: KnowledgeStore, prompt_id: str
    ) -> None:
        """A responder asking ``models`` with the prompt ``prompt_id``, listing documents from ``knowledge``."""
        self._models = models
        self._templates = templates
        self._knowledge = knowledge
        self._prompt_id = prompt_id

    def document_list(self, cm: ChatManage) -> str:
        """The searched knowledge bases' documents as a Markdown list (titles and short descriptions), bounded."""
        lines: list[str] = []
        for kb_id in cm.request.knowledge_base_ids:
            for document in self._knowledge.documents(cm.request.tenant_id, kb_id, limit=MAX_LISTED_DOCUMENTS):
                description = document.description[:MAX_DESCRIPTION_CHARS]
                lines.append(f"- {document.title}" + (f": {description}" if description else ""))
                if len(lines) == MAX_LISTED_DOCUMENTS:
                    return "\n".join(lines)
        return "\n".join(lines) or "(none)"

    async def respond(self, cm: ChatManage) -> None:
        """Emit the fallback answer: the fixed text, or the chat model's reply (the fixed text when there is none)."""
        answer_id = event_id(cm, "fallback")
        fixed = cm.request.fallback_response
        if cm.request.fallback_strategy == FallbackStrategy.FIXED:
            await emit(
                cm,
                BusEventType.FINAL_ANSWER,
                answer_id,
                fixed,
                done=True,
                data={"event_id": answer_id, **_FALLBACK_DATA},
            )
            return
        try:
            model = self._models.chat_model(cm.request.chat_model_id)
        except UnknownModel:
            await emit(
                cm,
                BusEventType.FINAL_ANSWER,
                answer_id,
                fixed,
                done=True,
                data={"event_id": answer_id, **_FALLBACK_DATA},
            )
            return
        template = cm.request.fallback_prompt or self._templates.get("fallback", self._prompt_id)
        prompt = render_placeholders(
            template,
            {"query": cm.request.query, "language": cm.request.language, "documents": self.document_list(cm)},
        )
        system = render_placeholders(
            self._templates.get("system_prompt", "default_chat"), {"language": cm.request.language}
        )
        if cm.state.memory_prompt:
            # What the assistant knows about the user matters most when the knowledge base has nothing.
            system = f"{system.rstrip()}\n\n{cm.state.memory_prompt}"
        messages = [ChatMessage("system", system)]
        for round_ in cm.state.history:
            messages += [ChatMessage("user", round_.query), ChatMessage("assistant", round_.answer)]
        messages.append(ChatMessage("user", prompt))
        started = time.monotonic()
        # No sources: the registry is empty, so any citation the model invents is dropped.
        outcome = await stream_reply(
            cm, model, messages, SourceRegistry(), answer_id=answer_id, extra_data=_FALLBACK_DATA
        )
        if outcome.cancelled or cm.context.cancelled():
            return
        if outcome.error is not None or not outcome.answer_text.strip():
            # The model failed or said nothing: the fixed text is the answer.
            await emit(
                cm,
                BusEventType.FINAL_ANSWER,
                answer_id,
                fixed,
                done=True,
                data={"event_id": answer_id, **_FALLBACK_DATA},
            )
            return
        await finish_answer(cm, outcome, answer_id=answer_id, started=started, extra_data=_FALLBACK_DATA)
