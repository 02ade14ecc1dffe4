"""Search results as every stage after search reads them."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MatchType(StrEnum):
    """How a result reached the candidate list."""

    EMBEDDING = "embedding"
    KEYWORD = "keyword"
    HYBRID = "hybrid"
    NEARBY_CHUNK = "nearby_chunk"
    HISTORY = "history"
    PARENT_CHUNK = "parent_chunk"
    RELATION_CHUNK = "relation_chunk"
    GRAPH = "graph"
    WEB_SEARCH = "web_search"
    DIRECT_LOAD = "direct_load"
    DATA_ANALYSIS = "data_analysis"


class ChunkType(StrEnum):
    """What a chunk holds (the seed's chunk types); only some are searchable on their own."""

    TEXT = "text"
    PARENT_TEXT = "parent_text"
    FAQ = "faq"
    IMAGE_OCR = "image_ocr"
    IMAGE_CAPTION = "image_caption"
    SUMMARY = "summary"
    TABLE_SUMMARY = "table_summary"
    TABLE_COLUMN = "table_column"
    WIKI_PAGE = "wiki_page"
    WEB_SEARCH = "web_search"
    ENTITY = "entity"
    RELATIONSHIP = "relationship"


def image_info_of(chunk_metadata: dict[str, object]) -> str:
    """A chunk's images (the JSON list ingestion writes under ``image_info``), "" for a chunk without any."""
    value = chunk_metadata.get("image_info")
    return value if isinstance(value, str) else ""


def image_entries(image_info: object) -> list[dict[str, Any]]:
    """The entries of an ``image_info`` JSON list (``url``, ``ocr_text``, ``caption`` …); [] when unreadable."""
    if not isinstance(image_info, str) or not image_info:
        return []
    try:
        value = json.loads(image_info)
    except ValueError:
        return []
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


class SearchResult(BaseModel):
    """One candidate passage. ``score`` is the current stage's score; earlier scores live in ``metadata``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    content: str
    knowledge_id: str = ""
    knowledge_base_id: str = ""
    knowledge_title: str = ""
    knowledge_filename: str = ""
    knowledge_description: str = ""
    knowledge_source: str = ""
    header: str = ""
    chunk_index: int = 0
    chunk_type: str = ChunkType.TEXT
    parent_chunk_id: str = ""
    pre_chunk_id: str = ""
    next_chunk_id: str = ""
    start_at: int = 0
    end_at: int = 0
    score: float = 0.0
    vector_score: float | None = None
    keyword_score: float | None = None
    match_type: str = MatchType.EMBEDDING
    sub_chunk_id: list[str] = Field(default_factory=list)
    tag_id: str = ""
    image_info: str = ""
    chunk_metadata: dict[str, object] = Field(default_factory=dict)
    metadata: dict[str, str] = Field(default_factory=dict)
    url: str = ""

    @property
    def is_web(self) -> bool:
        """True for a web search hit (by its source or its match type), not a knowledge-base chunk."""
        return self.knowledge_source == "web_search" or self.match_type == MatchType.WEB_SEARCH


def deterministic_key(result: SearchResult) -> tuple[float, str, str, int, str]:
    """Score descending, then knowledge id, chunk type, chunk index, id ascending.

    Chunk index rather than character offsets: offsets stop matching the source once a chunk is edited.
    """
    return (-result.score, result.knowledge_id, result.chunk_type, result.chunk_index, result.id)


def sort_deterministically(results: list[SearchResult]) -> list[SearchResult]:
    """``results`` sorted by score, then by a stable key, so equal scores rank the same in every run."""
    return sorted(results, key=deterministic_key)


# Chunks that stand for an image: its OCR text or its caption.
IMAGE_CHUNK_TYPES = frozenset({ChunkType.IMAGE_OCR, ChunkType.IMAGE_CAPTION})


def is_image_hit(result: SearchResult) -> bool:
    """An image's chunk (its OCR text or caption), as a text rerank model reads it."""
    return result.chunk_type in IMAGE_CHUNK_TYPES
