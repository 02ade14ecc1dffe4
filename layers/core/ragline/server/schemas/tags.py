"""The request bodies of the tag routes: a new tag and a tag's update."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragline.types.text import PlainName


class TagBody(BaseModel):
    """A new tag: its name, colour and order."""

    model_config = ConfigDict(extra="forbid")
    name: PlainName = Field(min_length=1, max_length=100)
    color: str = Field(default="", max_length=40)
    sort_order: int = Field(default=0, ge=-1_000_000, le=1_000_000)


class TagUpdateBody(BaseModel):
    """A tag's new name, colour or order (absent: unchanged)."""

    model_config = ConfigDict(extra="forbid")
    name: PlainName | None = Field(default=None, min_length=1, max_length=100)
    color: str | None = Field(default=None, max_length=40)
    sort_order: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)
