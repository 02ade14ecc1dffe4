"""Step 6: an FAQ hit answers with its current question and answers.

An FAQ chunk is indexed by its question, which is what matched; the model needs the answers, and reads
them as stored now (answers are edited without re-indexing). An entry switched off since indexing is
dropped rather than shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragline.merge.lookup import ChunkLookup, load_chunks
from ragline.types import ChunkType, SearchResult

QUESTION_KEY = "standard_question"
ANSWERS_KEY = "answers"
QUESTION_PREFIX = "Q: "
ANSWER_HEADER = "Answer:"
ANSWER_BULLET = "- "


def faq_answers(value: object) -> list[str]:
    """Answers as a list of non-blank strings; a single answer may be stored as a plain string."""
    items: Sequence[object]
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, list | tuple):
        items = value
    else:
        return []
    return [str(item).strip() for item in items if item is not None and str(item).strip()]


def render_faq(question: str, answers: Sequence[str]) -> str:
    """``Q: <question>`` then ``Answer:`` and one ``- <answer>`` line per answer; "" when both are empty."""
    lines: list[str] = []
    if question.strip():
        lines.append(QUESTION_PREFIX + question.strip())
    if answers:
        lines.append(ANSWER_HEADER)
        lines.extend(ANSWER_BULLET + answer for answer in answers)
    return "\n".join(lines)


def faq_content(metadata: Mapping[str, object], fallback_question: str = "") -> str:
    """The rendered entry from FAQ metadata; "" when the metadata holds no answer."""
    answers = faq_answers(metadata.get(ANSWERS_KEY))
    if not answers:
        return ""
    question = metadata.get(QUESTION_KEY)
    return render_faq(question if isinstance(question, str) and question.strip() else fallback_question, answers)


def render_faq_answers(results: Sequence[SearchResult], lookup: ChunkLookup) -> tuple[list[SearchResult], int]:
    """FAQ results rendered in place from the stored metadata (else the metadata retrieval carried).

    Returns the results that remain and how many were rendered. The question falls back to the matched
    text when the metadata has none.
    """
    faqs = [r for r in results if r.chunk_type == ChunkType.FAQ]
    if not faqs:
        return list(results), 0
    stored = load_chunks(lookup, (r.id for r in faqs))
    kept: list[SearchResult] = []
    rendered = 0
    for result in results:
        chunk = stored.get(result.id) if result.chunk_type == ChunkType.FAQ else None
        if chunk is not None and not chunk.enabled:
            continue
        if result.chunk_type == ChunkType.FAQ:
            sources = [chunk.metadata] if chunk is not None else []
            for metadata in (*sources, result.chunk_metadata):
                content = faq_content(metadata, fallback_question=result.content)
                if content:
                    result.content = content
                    rendered += 1
                    break
        kept.append(result)
    return kept, rendered
