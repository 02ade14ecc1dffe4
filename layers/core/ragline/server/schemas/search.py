"""The request bodies of the search routes: a knowledge search and a question to take keywords from."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ragline.runtime.search import SearchBody
from ragline.runtime.turns import MentionedItem
from ragline.server.schemas.fields import MAX_TAGS
from ragline.types.text import MAX_TEXT_CHARS, Identifier, IdList


class KnowledgeSearchBody(SearchBody):
    """ragline's search body with WeKnora's ways of naming what to search.

    One knowledge base, several, or documents only, and mentions.
    """

    knowledge_base_ids: IdList | None = None  # type: ignore[assignment]
    knowledge_base_id: Identifier | None = None
    mentioned_items: list[MentionedItem] | None = Field(default=None, max_length=100)
    tag_ids: list[Identifier] | None = Field(default=None, max_length=MAX_TAGS)


class KeywordsBody(BaseModel):
    """A question to extract search keywords from."""

    query: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
