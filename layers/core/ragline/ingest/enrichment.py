"""Ingestion enrichment: what a generative chat model adds to a stored document, off the request path.

The reference design's four templates, loaded from ``config/prompt_templates``:

- ``generate_questions``: up to ``questions_per_chunk`` questions each searchable passage answers, stored in
  the chunk's metadata (``generated_questions``, ``[{"id", "question"}]``), embedded as extra vectors of the
  chunk (a question phrased like the user's finds the passage that answers it) and read by rerank's enriched
  passage (:func:`ragline.reranking.passages.enriched_passage`);
- ``generate_summary``: a few sentences about the document, its description when it has none;
- ``generate_kb_description``: two sentences about the knowledge base from its documents' titles and
  summaries, written while it has no description of its own;
- ``keywords_extraction``: at most five search keywords of a question (the keywords route).

The document's ``summary_status`` (WeKnora's name) says where the work is: ``pending`` once scheduled,
``processing``, then ``completed`` or ``failed``; ``none`` when there is no generative model or enrichment is
off. A passage whose model call fails gets no questions and the rest go on; the document fails only when every
call did.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragline.config import EnrichmentConfig, PromptTemplates, render_placeholders
from ragline.ingest.images import sniff
from ragline.ingest.indexing import embed_passages, vector_text
from ragline.ingest.language import detect_language
from ragline.models.base import ChatMessage, ChatModel, Embedder, data_url, is_generative, strip_think_tags
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.reranking.passages import GENERATED_QUESTIONS_KEY
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.models import Chunk, Document, KnowledgeBase, SummaryStatus
from ragline.text.stopwords import SEARCH_STOPWORDS_EN
from ragline.types import ChatOptions, ChunkType
from ragline.types.images import ImageLoader
from ragline.types.search import image_entries

logger = logging.getLogger(__name__)

MAX_KEYWORDS = 5
# What a passage, a summary or a list of documents sent to the model is cut to.
MAX_PASSAGE_CHARS = 4000
MAX_DESCRIPTION_INPUT_CHARS = 6000
# Documents the knowledge-base description is written from (the most recent).
MAX_DESCRIPTION_DOCUMENTS = 50

QUESTION_OPTIONS = ChatOptions(temperature=0.3, max_tokens=300, thinking=False)
SUMMARY_OPTIONS = ChatOptions(temperature=0.3, max_tokens=400, thinking=False)
KEYWORD_OPTIONS = ChatOptions(temperature=0.0, max_tokens=100, thinking=False)

# Chunk types that get questions: passages of text. FAQ entries are questions already; table, graph, summary
# and image-text chunks have their own recall.
_QUESTION_TYPES = frozenset({ChunkType.TEXT, ChunkType.WIKI_PAGE})
_LIST_MARK = re.compile(r"^\s*(?:[-*•·]+|\(?\d{1,2}[.)、:：]|[QqＱ]\d*[.:：])\s*")
_WORD = re.compile(r"\w+", re.UNICODE)


def reply_lines(reply: str, limit: int) -> list[str]:
    """The items of a one-per-line reply, at most ``limit``.

    List marks, numbering and quotes are stripped, blank and repeated lines dropped (case-insensitively). A
    reply in a JSON array is read the same way.
    """
    text = strip_think_tags(reply)
    if text.startswith("[") and text.endswith("]"):
        text = "\n".join(part.strip().strip('"').strip("'") for part in text[1:-1].split('",'))
    items: dict[str, str] = {}
    for line in text.splitlines():
        item = _LIST_MARK.sub("", line).strip().strip("\"“”'`").strip()
        if item and item.casefold() not in items and len(items) < limit:
            items[item.casefold()] = item
    return list(items.values())


def language_name(text: str) -> str:
    """The language a summary is written in: the document's own."""
    return "Chinese" if detect_language(text) == "zh" else "English"


def term_keywords(query: str, limit: int = MAX_KEYWORDS) -> list[str]:
    """Keywords without a model: the question's words less stop words, longest first, at most ``limit``."""
    words = [w for w in dict.fromkeys(_WORD.findall(query)) if w.lower() not in SEARCH_STOPWORDS_EN]
    return sorted(words, key=len, reverse=True)[:limit]


class Enricher:
    """The four prompts on a generative chat model (``model_id``: "" for the registry's default)."""

    def __init__(self, models: ModelRegistry, templates: PromptTemplates, model_id: str = "") -> None:
        """Asks ``model_id`` of ``models`` with the prompts of ``templates``."""
        self._models = models
        self._templates = templates
        self._model_id = model_id

    def generative_model(self) -> ChatModel | None:
        """The chat model to ask, or None when there is none that writes text of its own."""
        try:
            model = self._models.chat_model(self._model_id)
        except UnknownModel:
            return None
        return model if is_generative(model) else None

    async def _ask(self, model: ChatModel, file: str, values: dict[str, str], options: ChatOptions) -> str:
        prompt = render_placeholders(self._templates.get(file, "default"), values)
        reply = await model.chat([ChatMessage("user", prompt)], options)
        return strip_think_tags(reply.content)

    async def questions(self, model: ChatModel, passage: str, count: int) -> list[str]:
        """Up to ``count`` questions ``passage`` answers."""
        reply = await self._ask(
            model,
            "generate_questions",
            {"count": str(count), "content": passage[:MAX_PASSAGE_CHARS]},
            QUESTION_OPTIONS,
        )
        return reply_lines(reply, count)

    async def summary(self, model: ChatModel, text: str) -> str:
        """A few sentences about a document, in its language."""
        return await self._ask(
            model, "generate_summary", {"content": text, "language": language_name(text)}, SUMMARY_OPTIONS
        )

    async def knowledge_base_description(self, model: ChatModel, documents: Sequence[Document]) -> str:
        """Two sentences about what a knowledge base covers, from its documents' titles and descriptions."""
        lines = [f"- {d.title}: {d.description}".rstrip(": ") for d in documents]
        listing = "\n".join(lines)[:MAX_DESCRIPTION_INPUT_CHARS]
        return await self._ask(
            model,
            "generate_kb_description",
            {"documents": listing, "language": language_name(listing)},
            SUMMARY_OPTIONS,
        )

    async def caption(self, model: ChatModel, image: bytes, language: str) -> str:
        """A sentence or two describing ``image`` for search (a model that sees images)."""
        prompt = render_placeholders(self._templates.get("image_caption", "default"), {"language": language})
        media_type = sniff(image) or "image/png"
        reply = await model.chat([ChatMessage("user", prompt, images=(data_url(image, media_type),))], SUMMARY_OPTIONS)
        return strip_think_tags(reply.content)

    def vision_model(self, model_id: str | None) -> ChatModel | None:
        """The model that captions images: ``model_id`` ("" for the default chat model); None for none."""
        if model_id is None:
            return None
        try:
            model = self._models.chat_model(model_id)
        except UnknownModel:
            return None
        return model if is_generative(model) else None

    async def keywords(self, query: str) -> tuple[list[str], str]:
        """At most five search keywords of ``query`` and where they came from.

        ``"model"``, or ``"terms"`` (the question's own words) without a generative model or when its reply
        holds none.
        """
        model = self.generative_model()
        if model is not None:
            try:
                reply = await self._ask(model, "keywords_extraction", {"query": query}, KEYWORD_OPTIONS)
                found = reply_lines(reply, MAX_KEYWORDS)
                if found:
                    return found, "model"
            except Exception:
                logger.warning("keyword extraction failed", exc_info=True)
        return term_keywords(query), "terms"


@dataclass(frozen=True)
class EnrichmentResult:
    """What enrichment added to one document."""

    status: SummaryStatus
    chunks: int = 0  # passages asked for questions
    questions: int = 0  # questions stored and embedded
    failed_calls: int = 0
    summary: bool = False  # the summary became the document's description
    knowledge_base_description: bool = False
    captions: int = 0  # images described by a vision model


class DocumentEnricher:
    """Runs enrichment for stored documents and records it in the store and the search engine."""

    def __init__(
        self,
        knowledge: KnowledgeStore,
        engine: RetrieveEngine,
        models: ModelRegistry,
        enricher: Enricher,
        config: EnrichmentConfig,
        *,
        images: ImageLoader | None = None,
        vision_model_id: str | None = None,
    ) -> None:
        """Reads and writes through ``knowledge`` and ``engine``; embeds with the knowledge base's model.

        ``images`` reads a kept image by its handle; ``vision_model_id`` names the model that sees images
        ("" the default chat model, None none): documents' images then get a caption.
        """
        self._images = images
        self._vision_model_id = vision_model_id
        self._knowledge = knowledge
        self._engine = engine
        self._models = models
        self._enricher = enricher
        self._config = config

    @property
    def active(self) -> bool:
        """Whether documents get enriched: enrichment on and a generative chat model configured."""
        return self._config.enabled and self._enricher.generative_model() is not None

    def mark_pending(self, document: Document) -> Document:
        """The document, waiting for enrichment when enrichment is active (as it was otherwise)."""
        if not self.active:
            return document
        marked = self._knowledge.set_summary_status(document.tenant_id, document.id, SummaryStatus.PENDING)
        return document.model_copy(update={"summary_status": SummaryStatus.PENDING}) if marked else document

    async def enrich(self, kb: KnowledgeBase, document: Document) -> EnrichmentResult:
        """Questions for the document's passages, its summary, its knowledge base's description."""
        model = self._enricher.generative_model()
        if not self._config.enabled or model is None:
            return EnrichmentResult(SummaryStatus.NONE)
        tenant = document.tenant_id
        if (
            await asyncio.to_thread(self._knowledge.set_summary_status, tenant, document.id, SummaryStatus.PROCESSING)
            is None
        ):
            return EnrichmentResult(SummaryStatus.NONE)  # deleted meanwhile
        try:
            result = await self._enrich(model, kb, document)
        except Exception:
            logger.exception("enrichment failed", extra={"document_id": document.id, "stage": "enrichment"})
            result = EnrichmentResult(SummaryStatus.FAILED)
        await asyncio.to_thread(self._knowledge.set_summary_status, tenant, document.id, result.status)
        logger.info(
            "enrichment of document %s: %s, %d questions for %d passages, %d failed calls",
            document.id,
            result.status.value,
            result.questions,
            result.chunks,
            result.failed_calls,
            extra={"stage": "enrichment", "knowledge_base_id": kb.id},
        )
        return result

    async def _enrich(self, model: ChatModel, kb: KnowledgeBase, document: Document) -> EnrichmentResult:
        chunks = await asyncio.to_thread(self._knowledge.chunks_of_document, document.tenant_id, document.id)
        passages = [
            c for c in chunks if c.searchable and c.enabled and c.chunk_type in _QUESTION_TYPES and c.content.strip()
        ]
        passages.sort(key=lambda c: c.chunk_index)
        asked = passages[: self._config.max_question_chunks] if self._config.questions_per_chunk else []
        # The questions are asked while the summary and the description are written (one round of model
        # latency less per document).
        asking = asyncio.ensure_future(self._questions(model, kb, document, asked))
        try:
            captioned = await self._captions(kb, document, chunks)
            summary, described, calls, failed = await self._describe_document(model, kb, document, chunks)
        finally:
            outcomes = await asking
        calls += len(outcomes) + len(captioned)
        failed += sum(1 for o in outcomes if o is None) + sum(1 for c in captioned if not c)
        questions = sum(o or 0 for o in outcomes)
        status = SummaryStatus.FAILED if calls and failed == calls else SummaryStatus.COMPLETED
        return EnrichmentResult(
            status, len(asked), questions, failed, summary, described, captions=sum(1 for c in captioned if c)
        )

    async def _captions(self, kb: KnowledgeBase, document: Document, chunks: Sequence[Chunk]) -> list[bool]:
        """A vision model's caption for each of the document's images (True per image described).

        The caption goes first in the image chunk's text (then its OCR text) and into its ``image_info``; an
        image without text becomes searchable by its caption.
        """
        model = self._enricher.vision_model(self._vision_model_id)
        pictures = [c for c in chunks if c.chunk_type == ChunkType.IMAGE_OCR and c.enabled]
        if model is None or self._images is None or not pictures:
            return []
        load = self._images
        language = language_name("\n".join(c.content for c in chunks if c.content)[:2000] or document.title)
        semaphore = asyncio.Semaphore(self._config.concurrency)
        embedder = self._models.embedder(kb.embedding_model)

        async def one(chunk: Chunk) -> bool:
            url = chunk.metadata.get("image_url")
            raw = await asyncio.to_thread(load, document.tenant_id, url) if isinstance(url, str) else None
            if raw is None:
                return False
            async with semaphore:
                try:
                    caption = await self._enricher.caption(model, raw, language)
                except Exception:
                    logger.warning("image caption failed", exc_info=True, extra={"chunk_id": chunk.id})
                    return False
            if not caption:
                return False
            await asyncio.to_thread(self._store_caption, kb, document, chunk, caption, embedder)
            return True

        return list(await asyncio.gather(*(one(c) for c in pictures)))

    def _store_caption(
        self, kb: KnowledgeBase, document: Document, chunk: Chunk, caption: str, embedder: Embedder
    ) -> None:
        info = image_entries(chunk.metadata.get("image_info"))
        ocr_text = str(info[0].get("ocr_text", "")) if info else ""
        if info:
            info[0]["caption"] = caption
        metadata = {**chunk.metadata, "image_info": json.dumps(info, ensure_ascii=False)}
        content = "\n".join(part for part in (caption, ocr_text) if part.strip())
        stored = self._knowledge.update_chunk(
            chunk.tenant_id, chunk.id, content=content, metadata=metadata, searchable=True
        )
        if stored is None:
            return
        vectors = embed_passages(embedder, [vector_text(document, stored)])
        self._engine.reindex_chunks(kb.id, kb.embedding_model, [stored], vectors, document=document)

    async def _describe_document(
        self, model: ChatModel, kb: KnowledgeBase, document: Document, chunks: Sequence[Chunk]
    ) -> tuple[bool, bool, int, int]:
        """The document's summary, then its knowledge base's description.

        Returns (summary written, description written, model calls, failed calls).
        """
        calls = 0
        failed = 0
        summary = False
        if self._config.summary and not document.description.strip():
            calls += 1
            text = "\n\n".join(c.content for c in sorted(chunks, key=lambda c: c.chunk_index) if c.searchable)
            try:
                written = await self._enricher.summary(model, text[: self._config.summary_input_chars])
            except Exception:
                logger.warning("summary failed", exc_info=True, extra={"document_id": document.id})
                failed += 1
            else:
                if written:
                    await asyncio.to_thread(
                        self._knowledge.update_document, document.tenant_id, document.id, description=written
                    )
                    summary = True
        described = False
        if self._config.knowledge_base_description and not kb.description.strip():
            calls += 1
            try:
                described = await self._describe(model, kb)
            except Exception:
                logger.warning("knowledge base description failed", exc_info=True, extra={"knowledge_base_id": kb.id})
                failed += 1
        return summary, described, calls, failed

    async def _questions(
        self, model: ChatModel, kb: KnowledgeBase, document: Document, passages: Sequence[Chunk]
    ) -> list[int | None]:
        """Questions per passage, stored and embedded as each reply comes; None for a failed call."""
        semaphore = asyncio.Semaphore(self._config.concurrency)
        embedder = self._models.embedder(kb.embedding_model)
        count = self._config.questions_per_chunk

        async def one(chunk: Chunk) -> int | None:
            async with semaphore:
                try:
                    found = await self._enricher.questions(model, chunk.content, count)
                except Exception:
                    logger.warning("question generation failed", exc_info=True, extra={"chunk_id": chunk.id})
                    return None
            if not found:
                return 0
            await asyncio.to_thread(self._store_questions, kb, document, chunk, found, embedder)
            return len(found)

        return list(await asyncio.gather(*(one(c) for c in passages)))

    def _store_questions(
        self, kb: KnowledgeBase, document: Document, chunk: Chunk, questions: list[str], embedder: Embedder
    ) -> None:
        metadata = dict(chunk.metadata)
        metadata[GENERATED_QUESTIONS_KEY] = [{"id": f"q{i}", "question": q} for i, q in enumerate(questions)]
        stored = self._knowledge.update_chunk(chunk.tenant_id, chunk.id, metadata=metadata)
        if stored is None:
            return  # the chunk is gone (document deleted or parsed again)
        vectors = embed_passages(embedder, questions)
        self._engine.index_questions(kb.id, kb.embedding_model, stored, vectors, document=document)

    async def _describe(self, model: ChatModel, kb: KnowledgeBase) -> bool:
        documents = await asyncio.to_thread(self._knowledge.documents, kb.tenant_id, kb.id, MAX_DESCRIPTION_DOCUMENTS)
        if not documents:
            return False
        written = await self._enricher.knowledge_base_description(model, documents)
        if not written:
            return False
        current = await asyncio.to_thread(self._knowledge.knowledge_base, kb.tenant_id, kb.id)
        if current is None or current.description.strip():
            return False  # gone, or described by someone meanwhile
        await asyncio.to_thread(self._knowledge.update_knowledge_base, kb.tenant_id, kb.id, description=written)
        return True
