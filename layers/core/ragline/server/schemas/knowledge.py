"""The request bodies of WeKnora's knowledge routes: documents from a URL or by hand, their updates and batches."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragline.server.schemas.fields import MAX_DESCRIPTION_CHARS
from ragline.types.text import MAX_DOCUMENT_CHARS, MAX_NAME_CHARS, Identifier, ItemName, PlainName, PlainText

MAX_BATCH_IDS = 200


class UrlKnowledgeBody(BaseModel):
    """WeKnora's ``CreateKnowledgeFromURLRequest``."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2048)
    file_name: PlainName | None = Field(default=None, max_length=MAX_NAME_CHARS)
    file_type: str | None = Field(default=None, max_length=20, pattern=r"^\.?[A-Za-z0-9]{1,10}$")
    title: PlainName | None = Field(default=None, max_length=MAX_NAME_CHARS)
    tag_id: PlainName | None = Field(default=None, max_length=200)
    enable_multimodel: bool | None = None
    channel: str | None = Field(default=None, max_length=40)
    process_config: dict[str, Any] | None = None


class ManualKnowledgeBody(BaseModel):
    """A document written by hand: title, Markdown content and an optional tag."""

    model_config = ConfigDict(extra="forbid")
    title: PlainName = Field(min_length=1, max_length=MAX_NAME_CHARS)
    content: str = Field(min_length=1, max_length=MAX_DOCUMENT_CHARS)
    tag_id: PlainName | None = Field(default=None, max_length=200)
    # Accepted and not acted on: a document is published (searchable) once stored.
    status: str | None = Field(default=None, max_length=40)
    channel: str | None = Field(default=None, max_length=40)


class TagUpdatesBody(BaseModel):
    """WeKnora's batch tag update: knowledge id → tag id (null clears the document's tag)."""

    model_config = ConfigDict(extra="forbid")
    updates: dict[str, ItemName | None] = Field(min_length=1, max_length=MAX_BATCH_IDS)
    kb_id: str | None = Field(default=None, max_length=200)


class KnowledgeUpdateBody(BaseModel):
    """WeKnora's partial update of a document's record: fields left out keep their value."""

    model_config = ConfigDict(extra="forbid")
    title: PlainName | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    description: PlainText | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    # Accepted and not acted on: ragline keeps no free-form metadata on a document.
    custom_metadata: dict[str, Any] | None = None


class BatchReparseBody(BaseModel):
    """Documents of one knowledge base to parse again."""

    model_config = ConfigDict(extra="forbid")
    kb_id: str = Field(min_length=1, max_length=200)
    ids: list[Identifier] = Field(min_length=1, max_length=MAX_BATCH_IDS)
    # Accepted and not acted on: ragline parses every document the same way.
    process_config: dict[str, Any] | None = None


class ManualUpdateBody(BaseModel):
    """WeKnora's manual knowledge body, every field optional."""

    model_config = ConfigDict(extra="forbid")
    title: PlainName | None = Field(default=None, min_length=1, max_length=MAX_NAME_CHARS)
    content: str | None = Field(default=None, min_length=1, max_length=MAX_DOCUMENT_CHARS)
    tag_id: PlainName | None = Field(default=None, max_length=200)
    status: str | None = Field(default=None, max_length=40)
    channel: str | None = Field(default=None, max_length=40)


class BatchDeleteBody(BaseModel):
    """Documents of one knowledge base to delete."""

    model_config = ConfigDict(extra="forbid")
    kb_id: str = Field(min_length=1, max_length=200)
    ids: list[Identifier] = Field(min_length=1, max_length=MAX_BATCH_IDS)
