"""Cooperative cancellation of a turn (user stop)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class CancelToken:
    """Set once by a stop; checked by the orchestrator after every stage and by generation per chunk."""

    def __init__(self) -> None:
        """A token not cancelled yet; its asyncio event is made on first wait, in the waiter's loop."""
        self._cancelled = False
        self._event: asyncio.Event | None = None
        self._callbacks: list[Callable[[], None]] = []
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
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one waiter's failure is not the stop's
                logger.exception("a stop callback failed")

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` from :meth:`cancel` (on the loop that cancels); returns what removes it.

        Not called when the token is already cancelled: the caller checks :attr:`cancelled` first.
        """
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

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

    A stop does not wait for the model's next chunk (a slow model may take seconds): the read in flight is
    cancelled and the source closed at once, which closes the model's HTTP stream (the stop reaches the
    model even with no reader attached and in a process the stop route cannot cancel directly). The same
    happens when the consuming task itself is cancelled.

    Chunks are read in the consuming task itself: a stop cancels that task's read (only while it is reading,
    and that cancellation alone is taken back), so a chunk costs no task and no wait of its own — with 50
    answers streaming, a task and an ``asyncio.wait`` per chunk were a fifth of the loop's time in generation.
    """
    iterator = chunks.__aiter__()
    task = asyncio.current_task()
    reading = interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        if reading and not interrupted and task is not None:
            interrupted = True
            task.cancel()

    remove = token.on_cancel(interrupt) if token is not None else None
    try:
        while token is None or not token.cancelled:
            reading = True
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if interrupted:
                    interrupted = False
                    assert task is not None
                    if task.uncancel() == 0:  # the stop's cancellation alone: the turn goes on to settle it
                        return
                raise  # any other cancellation stands
            finally:
                reading = False
            yield chunk
    finally:
        if remove is not None:
            remove()
        if interrupted and task is not None:  # the source swallowed the stop's cancellation: take it back
            task.uncancel()
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
