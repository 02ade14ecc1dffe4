"""Cooperative cancellation of a turn (user stop)."""

from __future__ import annotations

import asyncio


class CancelToken:
    """Set once by a stop; checked by the orchestrator after every stage and by generation per chunk."""

    def __init__(self) -> None:
        self._cancelled = False
        self._event: asyncio.Event | None = None
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str = "user_requested") -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self.reason = reason
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Returns once cancelled; must be awaited on the loop that will cancel it."""
        if self._cancelled:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    async def refresh(self) -> bool:
        """Re-read an external stop signal; the in-process token has none. Returns ``cancelled``."""
        return self._cancelled
