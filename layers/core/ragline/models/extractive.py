"""The default answerer when no generative model is configured: it quotes the sources, with citations.

It reads the same messages a generative model would (the retrieved passages in the system prompt, the
question in the last user turn), picks the sentences that best match the question and streams them with
``<ref id="cN"/>`` citations, so the whole pipeline (citations included) works without any model or key.
It says plainly that it is extractive.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from ragline.models.base import ChatChunk, ChatMessage, ChatResponse, collect
from ragline.retrieval.text import tokenize_simple
from ragline.types import ChatOptions

_CHUNK = re.compile(r'<chunk id="([^"]+)"[^>]*><content>(.*?)</content></chunk>', re.DOTALL)
_CONTEXT = re.compile(r'<context id="([^"]+)"[^>]*>(.*?)</context>', re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "about",
        "into",
        "than",
        "then",
        "there",
        "these",
        "those",
    ]
)

INTRO = "Extractive answer (no generative model is configured, so these are the sources' own words):\n\n"
NOTHING_FOUND = (
    "I found nothing in the knowledge base that answers this question. ragline is running without a "
    "generative model, so it can only quote the knowledge base; try rephrasing the question with the "
    "terms the documents use."
)
MAX_SENTENCES = 4
MAX_ANSWER_CHARS = 900


@dataclass
class _Sentence:
    source: str
    rank: int
    position: int
    text: str
    score: float = 0.0


def _question(messages: Sequence[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            text = message.content
            marker = text.rfind("Question:")
            return text[marker + len("Question:") :].strip() if marker >= 0 else text.strip()
    return ""


def _sources(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    text = "\n".join(m.content for m in messages if m.role != "assistant")
    found = _CHUNK.findall(text)
    return found if found else _CONTEXT.findall(text)


def _terms(text: str) -> set[str]:
    return {t for t in tokenize_simple(text) if t not in _STOPWORDS}


def select_sentences(question: str, sources: list[tuple[str, str]]) -> list[_Sentence]:
    """The sentences that share the most informative question terms, in source order."""
    sentences: list[_Sentence] = []
    for rank, (source, content) in enumerate(sources):
        for position, raw in enumerate(_SENTENCE_END.split(content)):
            text = raw.strip().lstrip("#>-*| ").strip()
            if len(text) >= 20:
                sentences.append(_Sentence(source, rank, position, text))
    query_terms = _terms(question)
    if not sentences or not query_terms:
        return []
    document_frequency: Counter[str] = Counter()
    sentence_terms = [_terms(s.text) for s in sentences]
    for terms in sentence_terms:
        document_frequency.update(terms & query_terms)
    total = len(sentences)
    for sentence, terms in zip(sentences, sentence_terms, strict=True):
        matched = terms & query_terms
        idf = sum(math.log(1 + total / document_frequency[t]) for t in matched)
        # Earlier sources ranked higher in retrieval: a small prior, never enough to beat a better match.
        sentence.score = idf / math.sqrt(1 + len(terms) / 12) + 0.05 / (1 + sentence.rank)
    best = sorted((s for s in sentences if s.score > 0.1), key=lambda s: -s.score)
    chosen: list[_Sentence] = []
    length = 0
    for sentence in best:
        if len(chosen) == MAX_SENTENCES or (length + len(sentence.text) > MAX_ANSWER_CHARS and chosen):
            break
        chosen.append(sentence)
        length += len(sentence.text)
    return sorted(chosen, key=lambda s: (s.rank, s.position))


class ExtractiveChatModel:
    model_id = "local:extractive"

    def __init__(self, word_delay_s: float = 0.0) -> None:
        self._delay = word_delay_s

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        question = _question(messages)
        sources = _sources(messages)
        cite = any('<ref id="' in m.content for m in messages if m.role == "system")
        chosen = select_sentences(question, sources)
        if not chosen:
            text = NOTHING_FOUND
        else:
            lines = []
            for sentence in chosen:
                citation = f'<ref id="{sentence.source}"/>' if cite and sentence.source.startswith(("c", "w")) else ""
                lines.append(f"- {sentence.text}{citation}")
            text = INTRO + "\n".join(lines)
        budget = max(1, options.max_tokens) * 4  # ~4 characters per token
        truncated = len(text) > budget
        text = text[:budget]
        for piece in re.findall(r"\S+\s*|\s+", text):
            yield ChatChunk("answer", piece)
            await asyncio.sleep(self._delay)
        yield ChatChunk("end", finish_reason="length" if truncated else "stop")

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        return await collect(self, messages, options)
