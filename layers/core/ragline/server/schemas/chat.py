"""The request bodies of the chat routes besides the question's (``QuestionBody``, which the runtime's TurnService takes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragline.types.text import MAX_ID_CHARS


class StopBody(BaseModel):
    """Which answer to stop: the assistant message's id."""

    model_config = ConfigDict(extra="forbid")
    message_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
