"""Reply envelopes: WeKnora's ``{"success": true, "data": ...}`` around every JSON reply."""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import BaseModel

DataT = TypeVar("DataT")


class Envelope(BaseModel, Generic[DataT]):
    """A reply: ``{"success": true, "data": ...}``."""

    success: Literal[True] = True
    data: DataT


class Page(BaseModel, Generic[DataT]):
    """One page of a list: ``{"success": true, "data": [...], "total", "page", "page_size"}``."""

    success: Literal[True] = True
    data: list[DataT]
    total: int
    page: int
    page_size: int


class Done(BaseModel):
    """A reply that carries no record: ``{"success": true, "message": ...}``."""

    success: Literal[True] = True
    message: str


def page_of(items: list[DataT], page: int, page_size: int) -> Page[DataT]:
    """The ``page``-th slice (from 1) of ``items``, with the total."""
    start = (page - 1) * page_size
    return Page(data=items[start : start + page_size], total=len(items), page=page, page_size=page_size)
