"""A reader whose event loop died must not break appends for everyone else."""

from __future__ import annotations

import asyncio
import threading

from ragline.stream.base import AppendNotifier


def test_notify_survives_a_waiter_on_a_closed_loop():
    notifier = AppendNotifier()
    dead_loop = asyncio.new_event_loop()

    abandoned = []

    def run_and_abandon() -> None:
        asyncio.set_event_loop(dead_loop)
        abandoned.append(dead_loop.create_task(notifier.wait("k", -1, 10)))
        dead_loop.run_until_complete(asyncio.sleep(0.05))
        dead_loop.close()  # the waiting task is never cancelled

    thread = threading.Thread(target=run_and_abandon)
    thread.start()
    thread.join()

    async def live_waiter() -> bool:
        waiting = asyncio.ensure_future(notifier.wait("k", -1, 5))
        await asyncio.sleep(0.01)
        notifier.notify("k", 0)  # must not raise
        return await waiting

    assert asyncio.run(live_waiter()) is True
