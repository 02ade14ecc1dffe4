"""The request body of WeKnora's initialization routes: a knowledge base's models and chunking."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragline.server.schemas.fields import Separators
from ragline.server.schemas.knowledge_bases import MAX_CHUNK_SIZE


class DocumentSplitting(BaseModel):
    """WeKnora's chunking in the settings dialog's names (camelCase)."""

    model_config = ConfigDict(extra="allow")
    chunkSize: int = Field(default=0, ge=0, le=MAX_CHUNK_SIZE)
    chunkOverlap: int = Field(default=0, ge=0, le=MAX_CHUNK_SIZE)
    separators: Separators | None = None


class ModelConfigBody(BaseModel):
    """WeKnora's ``KBModelConfigRequest``: the models and chunking act, the rest is kept as sent."""

    model_config = ConfigDict(extra="allow")
    llmModelId: str = Field(default="", max_length=200)
    embeddingModelId: str = Field(default="", max_length=200)
    documentSplitting: DocumentSplitting | None = None
    vlm_config: dict[str, Any] | None = None
    asr_config: dict[str, Any] | None = None
