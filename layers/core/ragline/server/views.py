"""Reply shapes shared by several resources."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel

ItemT = TypeVar("ItemT")


class Items(BaseModel, Generic[ItemT]):
    """A list reply: ``{"items": [...]}``."""

    items: list[ItemT]
