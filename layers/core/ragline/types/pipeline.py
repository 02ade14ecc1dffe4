"""Per-request stage lists.

The builder (the plan is assembled per request in :mod:`ragline.runtime.plan`; the seed's static presets had no caller
and are gone).
"""

from __future__ import annotations

from typing import Self

from ragline.types.events import EventType


class PipelineBuilder:
    """Builds the ordered stage list of one request: ``PipelineBuilder().add_if(c, E).add(E).build()``."""

    def __init__(self) -> None:
        """An empty stage list."""
        self._stages: list[EventType] = []

    def add(self, stage: EventType) -> Self:
        """Append ``stage``; the builder, for chaining."""
        self._stages.append(stage)
        return self

    def add_if(self, condition: bool, stage: EventType) -> Self:
        """Append ``stage`` when ``condition`` holds; the builder, for chaining."""
        if condition:
            self._stages.append(stage)
        return self

    def build(self) -> list[EventType]:
        """A copy: later changes to the builder never reach a list already handed out."""
        return list(self._stages)
