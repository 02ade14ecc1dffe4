"""The request body of the large-upload routes: the upload to prepare."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.server.schemas.fields import MAX_TAGS
from ragline.types.text import MAX_NAME_CHARS, PlainName


class UploadBody(BaseModel):
    """An upload to prepare: the file's name and exact size, and the document's title and tags."""

    model_config = ConfigDict(extra="forbid")
    filename: PlainName = Field(min_length=1, max_length=255)
    size_bytes: int = Field(gt=0, description="The file's exact size: the upload URL takes that many bytes")
    title: PlainName = Field(default="", max_length=MAX_NAME_CHARS)
    tags: list[PlainName] = Field(default_factory=list, max_length=MAX_TAGS)
    kind: Literal["document", "wiki"] = "document"
