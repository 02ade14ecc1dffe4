"""Cooperative cancellation of a turn (user stop)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

_T = TypeVar("_T")


class CancelToken:
    """Set once by a stop; checked by the orchestrator after every stage and by generation per chunk."""

    def __init__(self) -> None:
        """A token not cancelled yet; its asyncio event is made on first wait, in the waiter's loop."""
        self._cancelled = False
        self._event: asyncio.Event | None = None
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self, reason: str = "user_requested") -> None:
        """Cancel the turn and wake its waiters; the first ``reason`` is kept, later calls do nothing."""
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


async def until_cancelled(chunks: AsyncIterator[_T], token: CancelToken | None) -> AsyncIterator[_T]:
    """``chunks`` until they end or ``token`` is cancelled, whichever comes first, then close them.

    A stop does not wait for the model's next chunk (a slow model may take seconds): the pending read is
    cancelled and the source closed at once, which closes the model's HTTP stream (the stop reaches the
    model even with no reader attached and in a process the stop route cannot cancel directly). The same
    happens when the consuming task itself is cancelled.
    """
    iterator = chunks.__aiter__()
    pending: asyncio.Future[_T] | None = None
    stopped: asyncio.Future[None] | None = None
    try:
        if token is None:
            async for chunk in iterator:
                yield chunk
            return
        stopped = asyncio.ensure_future(token.wait())
        while not token.cancelled:
            pending = asyncio.ensure_future(iterator.__anext__())
            await asyncio.wait({pending, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not pending.done():
                return
            read, pending = pending, None
            try:
                chunk = read.result()
            except StopAsyncIteration:
                return
            yield chunk
    finally:
        if stopped is not None:
            stopped.cancel()
        if pending is not None and not pending.done():
            # The read in flight holds the source: cancelling it unwinds the source (its ``async with``
            # closes the HTTP stream); only then can it be closed.
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
