"""Stop in the serverless runtime: a flag item the stop route writes and a running step polls.

StopExecution does not interrupt a Lambda that is already running (and EXPRESS workflows have no
StopExecution at all), so the step that streams the model checks the flag while it streams. (The log's
last event is no flag: a step still writing after the stop would push the ``stop`` event down.)
"""

from __future__ import annotations

import asyncio
import contextlib

from ragline.event.cancel import CancelToken
from ragline.serverless.state_store import StateStore


class StopFlagToken(CancelToken):
    """A cancel token that also reads the turn's stop flag in the state table (a stop from another function)."""

    def __init__(self, state: StateStore, turn: str, interval_s: float = 0.5) -> None:
        """A token for ``turn``, polling ``state`` every ``interval_s`` once started."""
        super().__init__()
        self._state = state
        self._turn = turn
        self._interval = interval_s
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> bool:
        """Read the stop flag now; True once the turn is stopped."""
        if not self.cancelled and await asyncio.to_thread(self._state.stop_requested, self._turn):
            self.cancel("user_requested")
        return self.cancelled

    def start(self) -> None:
        """Start polling the stop flag in the background."""
        self._task = asyncio.create_task(self._poll())

    async def _poll(self) -> None:
        while not self.cancelled:
            await asyncio.sleep(self._interval)
            with contextlib.suppress(Exception):  # a failed poll is retried at the next interval
                await self.refresh()

    async def close(self) -> None:
        """Stop polling."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
