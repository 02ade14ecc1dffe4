"""What the rerank model and MMR read for a candidate, and which candidates reach the model.

Two texts per candidate. The enriched passage (clean content, image caption/OCR, generated questions) is
what MMR compares: a shared document title would make every chunk of one document look redundant. The
model passage prefixes the title and heading breadcrumb: chunks rarely restate what their document is
about, and the breadcrumb was embedded with the chunk, so vector search found it under its heading while a
model scoring the bare body would reject it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from ragline.reranking.clean import clean_passage
from ragline.types import ChunkType, MatchType, SearchResult

logger = logging.getLogger(__name__)

GENERATED_QUESTIONS_KEY = "generated_questions"
QUESTION_SEPARATOR = "; "
SECTION_SEPARATOR = "\n\n"
ENRICHMENT_SEPARATOR = "\n"
_IMAGE_TEXT_FIELDS = ("caption", "ocr_text")


def _image_texts(result: SearchResult) -> list[str]:
    """Captions and OCR texts of the chunk's images, in order; unreadable image info counts as none."""
    if not result.image_info:
        return []
    try:
        images = json.loads(result.image_info)
    except ValueError:
        logger.warning("unreadable image_info on chunk %s", result.id)
        return []
    if isinstance(images, dict):
        images = [images]
    if not isinstance(images, list):
        return []
    texts: list[str] = []
    for image in images:
        if not isinstance(image, dict):
            continue
        for field in _IMAGE_TEXT_FIELDS:
            value = image.get(field)
            if isinstance(value, str) and value.strip():
                texts.append(value)
    return texts


def generated_questions(result: SearchResult) -> list[str]:
    """Questions generated for the chunk at ingestion: plain strings or ``{"question": ...}`` objects."""
    raw = result.chunk_metadata.get(GENERATED_QUESTIONS_KEY)
    if not isinstance(raw, list):
        return []
    questions: list[str] = []
    for item in raw:
        question = item.get("question") if isinstance(item, dict) else item
        if isinstance(question, str) and question.strip():
            questions.append(question.strip())
    return questions


def enriched_passage(result: SearchResult) -> str:
    """Clean content, then image caption/OCR and generated questions (joined by ``"; "``).

    An OCR or caption chunk's body is that same text and its image info repeats it; an image text equal
    to the body is skipped so the passage is not doubled.
    """
    passage = clean_passage(result.content)
    body = result.content.strip()
    enrichments = [text for text in _image_texts(result) if text.strip() != body]
    questions = generated_questions(result)
    if questions:
        enrichments.append(QUESTION_SEPARATOR.join(questions))
    if not enrichments:
        return passage
    prefix = passage + SECTION_SEPARATOR if passage else ""
    return prefix + ENRICHMENT_SEPARATOR.join(enrichments)


def model_passage(result: SearchResult, max_chars: int = 0) -> str:
    r"""``title \n\n header \n\n passage``, cut from the end to ``max_chars`` (0: no limit).

    FAQ entries carry their own question and get no prefix. An empty passage stays empty: a title alone is
    not evidence that the chunk answers anything. The cut keeps the beginning because title and heading
    say what the rest is about.
    """
    passage = enriched_passage(result)
    if passage.strip() and result.chunk_type != ChunkType.FAQ:
        for prefix in (result.header.strip(), result.knowledge_title.strip()):
            if prefix:
                passage = prefix + SECTION_SEPARATOR + passage
    if max_chars > 0 and len(passage) > max_chars:
        passage = passage[:max_chars].rstrip()
    return passage


def is_graph_hit(result: SearchResult) -> bool:
    """Graph hits come from entity lookups, not similarity search, and carry no retrieval score."""
    return result.match_type == MatchType.GRAPH


def select_candidates(results: Sequence[SearchResult], max_candidates: int) -> list[SearchResult]:
    """The best ``max_candidates`` by retrieval score plus every graph hit, in input order.

    Graph hits are always kept: their score is 0 by construction, so a score cut would drop all of them.
    """
    ranked = sorted(
        (i for i, r in enumerate(results) if not is_graph_hit(r)),
        key=lambda i: -results[i].score,
    )
    kept = set(ranked[:max_candidates])
    return [r for i, r in enumerate(results) if i in kept or is_graph_hit(r)]
