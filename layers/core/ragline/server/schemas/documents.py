"""The request bodies of ragline's document routes: a text document and an FAQ import as JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.server.schemas.fields import MAX_DESCRIPTION_CHARS, MAX_TAGS
from ragline.types.text import MAX_DOCUMENT_CHARS, MAX_NAME_CHARS, ItemName, PlainName, PlainText

# FAQ entries one import takes.
MAX_FAQ_ENTRIES = 5000


class DocumentBody(BaseModel):
    """ragline's text document body: a title and Markdown or plain text."""

    model_config = ConfigDict(extra="forbid")
    title: PlainName = Field(default="", max_length=MAX_NAME_CHARS)
    content: str = Field(min_length=1, max_length=MAX_DOCUMENT_CHARS)
    file_type: Literal["markdown", "text"] = "markdown"
    description: PlainText = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    tags: list[ItemName] = Field(default_factory=list, max_length=MAX_TAGS)
    kind: Literal["document", "wiki"] = "document"


class FAQBody(BaseModel):
    """ragline's FAQ import body: the entries, the document's title and tags."""

    model_config = ConfigDict(extra="forbid")
    entries: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_FAQ_ENTRIES)
    title: PlainName = Field(default="FAQ", max_length=MAX_NAME_CHARS)
    tags: list[ItemName] = Field(default_factory=list, max_length=MAX_TAGS)
