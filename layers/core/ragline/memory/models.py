"""The stored memory record, and how a request opts in to memory."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ragline.store.ids import new_id, utc_now


class Memory(BaseModel):
    """A durable fact about one user of one tenant, written as a sentence about "the user".

    ``vector`` and ``embedding_model`` are excluded from dumps: the API never exposes vectors, and a vector
    is only comparable with queries embedded by the same model.
    """

    id: str
    tenant_id: str
    user_id: str
    content: str
    source_session_id: str = ""
    source_message_id: str = ""
    created_at: str = Field(default_factory=utc_now)
    # Refreshed when the same fact is stated again: eviction drops the least recently confirmed first.
    updated_at: str = Field(default_factory=utc_now)
    embedding_model: str = Field(default="", exclude=True)
    vector: list[float] | None = Field(default=None, exclude=True, repr=False)


def new_memory(
    tenant_id: str,
    user_id: str,
    content: str,
    source_session_id: str = "",
    source_message_id: str = "",
) -> Memory:
    """A memory not stored yet, with a fresh id and both timestamps set to now."""
    now = utc_now()
    return Memory(
        id=new_id(),
        tenant_id=tenant_id,
        user_id=user_id,
        content=content,
        source_session_id=source_session_id,
        source_message_id=source_message_id,
        created_at=now,
        updated_at=now,
    )


def memory_enabled(request: object) -> bool:
    """Whether the turn opted in to memory. Memory is off unless the request says otherwise.

    Read by attribute so the flag can live on any request model (``PipelineRequest.memory_enabled``).
    """
    return getattr(request, "memory_enabled", False) is True
