"""Preparing the model's messages and streaming its reply onto the event bus.

Shared by CHAT_COMPLETION_STREAM and the fallback answer.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragline.config import PromptTemplates, render_placeholders
from ragline.event.bus import BusEventType
from ragline.event.cancel import until_cancelled
from ragline.ingest.images import MAX_IMAGE_BYTES, sniff
from ragline.merge.overlaps import IMAGE_VECTOR_MATCH
from ragline.modelcontext import SourceRegistry, StreamDecoder, fold_citations
from ragline.modelcontext.protocol import protocol_prompt
from ragline.modelcontext.registry import ChunkPart
from ragline.models.base import TRUNCATION_REASONS, ChatMessage, ChatModel, ModelCallError, data_url
from ragline.pipeline.emit import emit, event_id
from ragline.pipeline.faq_layout import faq_layout
from ragline.reranking.rerank import IMAGE_VECTOR, KEPT_BY
from ragline.store.base import KnowledgeStore
from ragline.store.ids import utc_now
from ragline.types import ChatManage, ChatOptions, SearchResult
from ragline.types.images import ImageLoader
from ragline.types.search import image_entries, is_image_hit

logger = logging.getLogger(__name__)

# Shown when the output limit cut the reply before any text came out.
TRUNCATED_WITHOUT_TEXT = (
    "The model reached its output limit before it wrote an answer. Try a shorter or more specific question, "
    "or raise max_completion_tokens."
)


def chat_options(cm: ChatManage) -> ChatOptions:
    """The model options of the request's summary settings: temperature, completion tokens, thinking."""
    summary = cm.request.summary_config
    return ChatOptions(
        temperature=summary.temperature, max_tokens=summary.max_completion_tokens, thinking=summary.thinking
    )


def build_messages(
    cm: ChatManage, templates: PromptTemplates, prompt_id: str, images: Sequence[str] = ()
) -> tuple[list[ChatMessage], SourceRegistry]:
    """System prompt (with aliased sources, memory and the citation protocol), history, current turn.

    The registry is rebuilt from the results on every call, in the same order, so a separate invocation
    (a serverless step) assigns the same aliases.
    """
    request, state = cm.request, cm.state
    registry = SourceRegistry(citations_enabled=request.citations_on)
    results = cm.final_results() if cm.needs_retrieval() else []
    values = {"query": request.query, "language": request.language}
    if results:
        layout = faq_layout(cm, results)
        if layout is None:
            sources = registry.render_results(results)
        else:
            sources = registry.render_results(layout.documents, faq=layout.faq, exact_id=layout.exact_id)
        template = (
            state.system_prompt_override or request.summary_config.prompt or templates.get("system_prompt", prompt_id)
        )
        if "contexts" not in template:
            template = template.rstrip() + "\n\n{{contexts}}"
        system = render_placeholders(template, {**values, "contexts": sources})
    else:
        template = state.system_prompt_override or templates.get("system_prompt", "default_chat")
        system = render_placeholders(template, {**values, "contexts": ""})
    if state.memory_prompt:
        system = f"{system.rstrip()}\n\n{state.memory_prompt}"
    if results:
        system = f"{system.rstrip()}\n\n{protocol_prompt(registry.citations_enabled)}"
        if MARKDOWN_IMAGE.search(sources):
            system = f"{system.rstrip()}\n\n{IMAGE_OUTPUT_PROMPT}"

    messages = [ChatMessage("system", system)]
    for round_ in state.history:
        messages.append(ChatMessage("user", registry.resources.encode(round_.query)))
        messages.append(ChatMessage("assistant", registry.resources.encode(fold_citations(round_.answer, registry))))
    messages.append(
        ChatMessage("user", registry.resources.encode(state.user_content or request.query), images=tuple(images))
    )
    return messages, registry


# The reference's paragraph for a context that carries Markdown images (appendRetrievedImageOutputRequirement).
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\([^)\s]+\)")
IMAGE_OUTPUT_PROMPT = (
    "Some sources contain images written as Markdown, ![description](res://NNNN). When an image helps the"
    " answer, show it with that same Markdown, its link unchanged, next to the sentence it supports; never write"
    " an image link that is not in the sources."
)
# Images of the retrieved passages a vision model is shown, after the question's own.
MAX_CONTEXT_IMAGES = 3


def context_image_urls(results: Sequence[SearchResult]) -> list[str]:
    """Handles of the images the final passages were found by, first occurrence kept, at most three.

    Image chunks (OCR text or caption), images rerank kept on their vector score, and passages that stand
    for a dropped image's chunk (``image_vector_match``).
    """
    urls: list[str] = []
    for result in results:
        matched = result.metadata.get(KEPT_BY) == IMAGE_VECTOR or result.metadata.get(IMAGE_VECTOR_MATCH) == "true"
        if not (is_image_hit(result) or matched):
            continue
        for entry in image_entries(result.image_info):
            url = entry.get("url")
            if isinstance(url, str) and url and url not in urls:
                urls.append(url)
    return urls[:MAX_CONTEXT_IMAGES]


def vision_images(cm: ChatManage, load: ImageLoader | None) -> list[str]:
    """``data:`` URLs for a chat model that sees images: the question's images, then the passages' (≤ 3).

    Nothing for a model that does not see images, or without a way to read the kept images; an image that
    cannot be read, is over 5 MB or is not PNG/JPEG/WebP/GIF is left out.
    """
    request = cm.request
    if not request.chat_model_supports_vision or load is None:
        return []
    results = cm.final_results() if cm.needs_retrieval() else []
    urls = list(dict.fromkeys([*request.images, *context_image_urls(results)]))
    shown = []
    for url in urls:
        try:
            raw = load(request.tenant_id, url)
        except Exception:
            logger.warning("an image could not be read for the answer", exc_info=True)
            continue
        media_type = sniff(raw) if raw is not None else None
        if raw is None or media_type is None or len(raw) > MAX_IMAGE_BYTES:
            continue
        shown.append(data_url(raw, media_type))
    return shown


def attach_passage_parts(cm: ChatManage, registry: SourceRegistry, knowledge: KnowledgeStore | None) -> None:
    """Tell the registry which stored chunks each passage is made of.

    A citation then names the chunk that holds its claim: merge gives a passage its parent section's text, joins
    consecutive chunks and widens short ones with their neighbours, while the passage keeps its first chunk's id.
    """
    if knowledge is None or not cm.needs_retrieval():
        return
    results = [r for r in cm.final_results() if not r.is_web and (r.sub_chunk_id or r.parent_chunk_id)]
    if not results:
        return
    tenant = cm.request.tenant_id
    try:
        by_id = {c.id: c for c in knowledge.chunks(tenant, list({i for r in results for i in (r.id, *r.sub_chunk_id)}))}
        documents = {r.knowledge_id for r in results if r.parent_chunk_id and r.knowledge_id}
        siblings = [c for d in sorted(documents) for c in knowledge.chunks_of_document(tenant, d) if c.parent_chunk_id]
    except Exception:  # the citation then names the passage's first chunk, as before
        logger.warning("passage parts unreadable; citations name each passage's first chunk", exc_info=True)
        return
    for result in results:
        parts = {i: by_id[i] for i in (result.id, *result.sub_chunk_id) if i in by_id}
        if result.parent_chunk_id:
            parts.update({c.id: c for c in siblings if c.parent_chunk_id == result.parent_chunk_id and c.searchable})
        ordered = sorted(parts.values(), key=lambda c: c.chunk_index)
        if len(ordered) > 1:
            registry.set_parts(result.id, [ChunkPart(c.id, c.content) for c in ordered])


@dataclass
class StreamOutcome:
    """How a streamed answer ended: its text, whether thinking was shown, the finish reason, a stop or an error."""

    answer_text: str = ""
    thinking_emitted: bool = False
    finish_reason: str | None = None
    cancelled: bool = False
    error: ModelCallError | None = None

    @property
    def truncated(self) -> bool:
        """True when the model stopped at its token limit."""
        return self.finish_reason in TRUNCATION_REASONS


async def stream_reply(
    cm: ChatManage,
    model: ChatModel,
    messages: list[ChatMessage],
    registry: SourceRegistry,
    *,
    answer_id: str,
    extra_data: dict[str, Any] | None = None,
) -> StreamOutcome:
    """Stream the model's reply as thinking and answer events; never emits the final ``done``."""
    outcome = StreamOutcome()
    answer_decoder, thinking_decoder = StreamDecoder(registry), StreamDecoder(registry)
    thinking_id = event_id(cm, "thinking")
    thinking_started = time.monotonic()
    # Which model wrote the answer (its name, never its endpoint): the page and the CLI mark a quote as such.
    data = {"event_id": answer_id, "model_id": model.model_id.split("@", 1)[0], **(extra_data or {})}
    parts: list[str] = []

    async def answer(text: str) -> None:
        if text:
            parts.append(text)
            await emit(cm, BusEventType.FINAL_ANSWER, answer_id, text, data=data)

    async def thought(text: str) -> None:
        if text:
            outcome.thinking_emitted = True
            await emit(cm, BusEventType.THOUGHT, thinking_id, text, data={"event_id": thinking_id})

    try:
        async for chunk in until_cancelled(model.chat_stream(messages, chat_options(cm)), cm.context.cancel):
            if cm.context.cancelled():
                outcome.cancelled = True
                break
            if chunk.type == "answer":
                await answer(answer_decoder.feed(chunk.content))
            elif chunk.type == "thinking":
                await thought(thinking_decoder.feed(chunk.content))
            else:
                outcome.finish_reason = chunk.finish_reason
    except ModelCallError as exc:
        outcome.error = exc
    outcome.cancelled = outcome.cancelled or cm.context.cancelled()
    # Whatever ended the stream, text held back for a possible tag is settled (partial tags dropped).
    await thought(thinking_decoder.flush())
    await answer(answer_decoder.flush())
    if outcome.thinking_emitted and not outcome.cancelled:
        await emit(
            cm,
            BusEventType.THOUGHT,
            thinking_id,
            done=True,
            data={"event_id": thinking_id, "duration_ms": int((time.monotonic() - thinking_started) * 1000)},
        )
    outcome.answer_text = "".join(parts)
    return outcome


async def finish_answer(
    cm: ChatManage,
    outcome: StreamOutcome,
    *,
    answer_id: str,
    started: float,
    extra_data: dict[str, Any] | None = None,
) -> None:
    """The one ``done`` answer event: truncation flagged, and a fixed notice when no text came at all."""
    data: dict[str, Any] = {
        "event_id": answer_id,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "completed_at": utc_now(),
        **(extra_data or {}),
    }
    content = ""
    if outcome.truncated:
        data["truncated"] = True
        if not outcome.answer_text.strip():
            content = TRUNCATED_WITHOUT_TEXT
    await emit(cm, BusEventType.FINAL_ANSWER, answer_id, content, done=True, data=data)
