"""The default answerer when no generative model is configured: it quotes the sources, with citations.

It reads the same messages a generative model would (the retrieved passages in the system prompt, the
question in the last user turn), picks the sentence that answers the question (:mod:`ragline.answering`)
and streams it with a ``<ref id="cN"/>`` citation of the passage it was taken from, so the whole pipeline
(citations included) works without any model or key. When no sentence clears the relevance bar it says
plainly that the knowledge base does not say, in the question's language. The answer events say which
model wrote them (``model_id`` ``local:extractive``), which is how the page and the CLI tell a quote from
a generated answer.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace

from ragline.answering.selection import (
    DEFAULT_WEIGHTS,
    Selection,
    Similarity,
    Source,
    Weights,
    answer_span,
    select,
    trim,
)
from ragline.answering.terms import is_chinese
from ragline.modelcontext.registry import EXCERPT_PATTERN
from ragline.models.base import ChatChunk, ChatMessage, ChatModel, ChatResponse, Embedder, collect
from ragline.types import ChatOptions
from ragline.types.images import split_image_text

_DOCUMENT = re.compile(r'<document\b[^>]*?title="([^"]*)"[^>]*>(.*?)</document>', re.DOTALL)
_PAGE = re.compile(r'<page id="([^"]+)" title="([^"]*)"><content>(.*?)</content></page>', re.DOTALL)
_CONTEXT = re.compile(r'<context id="([^"]+)"[^>]*>(.*?)</context>', re.DOTALL)
_SECTION = re.compile(r'section="([^"]*)"')
_IMAGE_LABEL = re.compile(r"^\[Image \d+\] ", re.MULTILINE)

NOTHING_FOUND = (
    "The knowledge base does not say. No passage I found answers this question; without a generative model "
    "ragline can only quote the documents, so try the words they would use."
)
NOTHING_FOUND_ZH = (
    "知识库中没有找到这个问题的答案。没有配置生成模型时，ragline 只能引用文档原文；请换用文档中可能出现的词语再问。"
)
# Said first when the question's images were read by OCR (no model here sees images).
IMAGE_TEXT_READ = "From the text read in your image (I cannot see the image itself): "
IMAGE_TEXT_READ_ZH = "根据从图片中识别出的文字（我无法查看图片本身）："
NOTHING_FOUND_PREFIXES = ("The knowledge base does not say", "知识库中没有找到")


def _question(messages: Sequence[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            text = message.content
            marker = text.rfind("Question:")
            return text[marker + len("Question:") :].strip() if marker >= 0 else text.strip()
    return ""


def _sources(messages: Sequence[ChatMessage]) -> list[Source]:
    """The passages of the context in order, each with its document title and section heading."""
    text = "\n".join(m.content for m in messages if m.role != "assistant")
    titles: dict[int, str] = {}
    for document in _DOCUMENT.finditer(text):
        titles[document.start(2)] = html.unescape(document.group(1))
    starts = sorted(titles)
    found: list[tuple[int, Source]] = []
    for chunk in EXCERPT_PATTERN.finditer(text):
        before = [s for s in starts if s <= chunk.start()]
        title = titles[before[-1]] if before else ""
        section = _SECTION.search(chunk.group(2))
        context = " ".join(p for p in (title, html.unescape(section.group(1)) if section else "") if p)
        found.append((chunk.start(), Source(chunk.group(1), chunk.group(3), context)))
    for page in _PAGE.finditer(text):
        found.append((page.start(), Source(page.group(1), page.group(3), html.unescape(page.group(2)))))
    if not found:
        found = [(m.start(), Source(m.group(1), m.group(2), "")) for m in _CONTEXT.finditer(text)]
    return [source for _, source in sorted(found, key=lambda item: item[0])]


def compose(question: str, selection: Selection, cite: bool) -> str:
    """The answer text: each quote followed by the citation of its own passage.

    A quote is the part of its sentence that answers when the question asks for a time, a number or a person and one
    part holds it, else the sentence (a long one trimmed to its answering clauses).
    """
    if not selection.best:
        return NOTHING_FOUND_ZH if is_chinese(question) else NOTHING_FOUND
    parts = []
    for candidate in selection.best:
        citation = f'<ref id="{candidate.source}"/>' if cite and candidate.source.startswith(("c", "w")) else ""
        quote = answer_span(candidate, question, selection.question_terms) if len(selection.best) == 1 else None
        parts.append(f"{quote or trim(candidate, question, selection.question_terms)}{citation}")
    return " ".join(parts)


# The answerer's constants for each sentence model, tuned on one half of the development sets (split by
# paragraph) and reported on the other (bench/answers/qa.py --part).
# MiniLM: a sentence sharing words with the question but not its meaning (cosine under 0.3, lower than any
# right answer of the tuning half) does not answer it; one sharing its meaning (0.5) does, in other words.
ENGLISH_WEIGHTS = replace(DEFAULT_WEIGHTS, min_coverage=0.45, agree_similarity=0.3, min_similarity=0.5)
# multilingual-e5 scores any two sentences 0.75-0.95: a larger weight spreads its differences, and its
# cosine clears the bar only high (0.9) and with a quarter of the question's words. Twelve sentences are
# re-ranked (it is slower than MiniLM). Chinese sentences are short: a second one joins the best when it
# scores half as much and both stay within 150 characters.
MULTILINGUAL_WEIGHTS = replace(
    DEFAULT_WEIGHTS,
    similarity=4.0,
    min_similarity=0.9,
    agree_coverage=0.25,
    shortlist=12,
    companion=0.5,
    companion_chars=150,
)


# Each sentence model's constants (its cosines spread differently), by model id; a model not listed takes its
# language's (bench/answers/sentence_models.py tunes them).
SENTENCE_WEIGHTS: dict[str, Weights] = {
    "local:all-MiniLM-L6-v2-int8": ENGLISH_WEIGHTS,
    "local:multilingual-e5-small-q4": MULTILINGUAL_WEIGHTS,
}


# The sentence models that read each language's questions, best first: the first this process has is used.
SENTENCE_MODELS: dict[str, tuple[str, ...]] = {
    "en": ("local:all-MiniLM-L6-v2-int8",),
    "zh": ("local:multilingual-e5-small-q4",),
}


def sentence_weights(model_id: str, language: str) -> Weights:
    """The answerer's constants with the sentence model ``model_id`` reading ``language`` (``en`` or ``zh``)."""
    return SENTENCE_WEIGHTS.get(model_id) or (MULTILINGUAL_WEIGHTS if language == "zh" else ENGLISH_WEIGHTS)


def model_writes(model: ChatModel) -> bool:
    """False for the extractive answerer.

    It quotes sources and cannot follow any other instruction (rewrite a question, write SQL, name a session).
    """
    return model.model_id != ExtractiveChatModel.model_id


class ExtractiveChatModel:
    """The quoting answerer: it answers with the source sentences that best match the question.

    ``embedder``: a sentence model for English (MiniLM); it re-ranks the best lexical candidates by meaning and lets a
    paraphrase clear the relevance bar. ``multilingual``: the one for Chinese questions (multilingual-e5, slower: it
    re-ranks fewer candidates); without it Chinese is matched by words alone.
    """

    model_id = "local:extractive"
    generative = False  # it quotes the context: no titles, SQL or graph extractions from it

    def __init__(
        self,
        word_delay_s: float = 0.0,
        embedder: Callable[[], Embedder] | None = None,
        multilingual: Callable[[], Embedder] | None = None,
    ) -> None:
        """The answerer; the sentence models are built on first use, and ``word_delay_s`` paces the stream."""
        self._delay = word_delay_s
        self._embedder = embedder
        self._multilingual = multilingual

    def _reader(self, question: str) -> tuple[Similarity | None, Weights]:
        """The sentence model that reads the question's language, and the constants that go with it."""
        chinese = is_chinese(question)
        factory = self._multilingual if chinese else self._embedder
        if factory is None:
            return None, DEFAULT_WEIGHTS
        embedder = factory()
        weights = sentence_weights(embedder.model_id, "zh" if chinese else "en")

        def similarity(query: str, sentences: list[str]) -> list[float]:
            if not sentences:
                return []
            vectors = embedder.embed_documents(sentences)
            return [float(value) for value in vectors @ embedder.embed_query(query)]

        return similarity, weights

    def answer(self, messages: Sequence[ChatMessage]) -> str:
        """The answer to the last user message, quoted from the passages in the system prompt.

        A question whose images were read by OCR is searched with their text, and the answer says it read
        the image's text, not the image.
        """
        asked, image_text = split_image_text(_question(messages))
        question = f"{asked}\n{_IMAGE_LABEL.sub('', image_text)}".strip()
        cite = any('<ref id="' in m.content for m in messages if m.role == "system")
        similarity, weights = self._reader(question)
        selection = select(question, _sources(messages), weights=weights, similarity=similarity)
        answer = compose(question, selection, cite)
        if image_text and not answer.startswith(NOTHING_FOUND_PREFIXES):
            answer = (IMAGE_TEXT_READ_ZH if is_chinese(question) else IMAGE_TEXT_READ) + answer
        return answer

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Stream the answer word by word, cut at ``options.max_tokens`` (about four characters a token)."""
        text = await asyncio.to_thread(self.answer, messages)  # embedding and jieba: off the event loop
        budget = max(1, options.max_tokens) * 4  # ~4 characters per token
        truncated = len(text) > budget
        text = text[:budget]
        for piece in re.findall(r"\S+\s*|\s+", text):
            yield ChatChunk("answer", piece)
            await asyncio.sleep(self._delay)
        yield ChatChunk("end", finish_reason="length" if truncated else "stop")

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """The whole answer at once."""
        return await collect(self, messages, options)
