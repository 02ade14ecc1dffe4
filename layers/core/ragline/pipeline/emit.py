"""Publishing to the turn's event bus, with ids that are stable per turn.

Ids derive from the request id, so a retried serverless step writes the same ids it wrote the first time.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ragline.event.bus import BusEvent, BusEventType
from ragline.types import ChatManage


def turn_hex(cm: ChatManage) -> str:
    """Eight hex digits derived from the request id: the stable prefix of a turn's event ids."""
    return hashlib.sha1(cm.request.request_id.encode("utf-8")).hexdigest()[:8]


def event_id(cm: ChatManage, kind: str) -> str:
    """``<8hex>-answer``, ``<8hex>-thinking``, ``<8hex>-references``, ``<8hex>-fallback``."""
    return f"{turn_hex(cm)}-{kind}"


async def emit(
    cm: ChatManage,
    type: BusEventType,
    id: str,
    content: str = "",
    *,
    done: bool = False,
    data: dict[str, Any] | None = None,
    references: list[dict[str, Any]] | None = None,
) -> None:
    """Put an event on the turn's bus; nothing happens without a bus (a stage run on its own)."""
    bus = cm.context.event_bus
    if bus is None:
        return
    await bus.emit(BusEvent(type=type, id=id, content=content, done=done, data=data or {}, references=references))
