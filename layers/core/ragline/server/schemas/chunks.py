"""The request body of the chunk routes: WeKnora's chunk update."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragline.types.text import MAX_TEXT_CHARS

# A vector a client sends with a chunk (the largest embedding models have 4,096 dimensions).
MAX_EMBEDDING_DIMENSIONS = 8192


class ChunkUpdateBody(BaseModel):
    """WeKnora's update.

    The text and the enabled flag are honoured (absent: unchanged); its Go client also sends the position, the image
    information and an embedding, which ragline computes itself.
    """

    model_config = ConfigDict(extra="forbid")
    content: str | None = Field(default=None, max_length=200_000)
    is_enabled: bool | None = None
    chunk_index: int | None = None
    start_at: int | None = None
    end_at: int | None = None
    image_info: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    embedding: list[float] | None = Field(default=None, max_length=MAX_EMBEDDING_DIMENSIONS)
    expected_revision: int | None = None
