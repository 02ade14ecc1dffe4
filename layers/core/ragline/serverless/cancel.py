"""Stop in the serverless runtime: the ``stop`` event in the log is the flag a running step polls.

StopExecution does not interrupt a Lambda that is already running (and EXPRESS workflows have no
StopExecution at all), so the step that streams the model checks the log while it streams.
"""

from __future__ import annotations

import asyncio
import contextlib

from ragline.runtime.cancel import CancelToken
from ragline.stream.base import StreamManager
from ragline.types import ResponseType


class LogStopToken(CancelToken):
    def __init__(self, log: StreamManager, key: str, interval_s: float = 0.5) -> None:
        super().__init__()
        self._log = log
        self._key = key
        self._interval = interval_s
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> bool:
        if not self.cancelled:
            last = await self._log.last_event(self._key)
            if last is not None and last.type == ResponseType.STOP:
                self.cancel("user_requested")
        return self.cancelled

    def start(self) -> None:
        self._task = asyncio.create_task(self._poll())

    async def _poll(self) -> None:
        while not self.cancelled:
            await asyncio.sleep(self._interval)
            with contextlib.suppress(Exception):  # a failed poll is retried at the next interval
                await self.refresh()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
