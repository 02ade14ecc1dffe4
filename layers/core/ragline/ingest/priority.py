"""Background work's CPU priority: below the requests' and the streams', so documents take the CPU those leave.

Linux keeps a nice value per thread, and a thread starts with its creator's. The threads that accept, index and enrich
documents raise theirs (``ingestion.background_nice``), and so do the threads they start (the embedding model's
pool), so the event loop that serves every stream, and the threads that answer searches and turns, come first
whenever the cores are busy; idle cores still go to the documents. Elsewhere nothing changes (macOS's thread ids
are not process ids).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def lower_this_thread(step: int) -> bool:
    """Raise the calling thread's nice value by ``step`` (capped at 19); True when it changed."""
    if step <= 0 or sys.platform != "linux":
        return False
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, current + step))
    except OSError:
        return False
    return True


def thread_nice() -> int | None:
    """The calling thread's nice value (None off Linux)."""
    if sys.platform != "linux":
        return None
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class ForegroundWriter:
    """One thread at the priority of the thread that makes it, for the writes background threads must not hold.

    A background thread that holds the database's write lock holds up every writer of the API, and at its low
    priority it holds it longest when the cores are busiest: storing a 28,000-chunk upload holds it ~3.5 s on an
    idle core. Such a write runs here while the background thread waits for it. A caller must not hold the
    database's write transaction itself (the writer would wait for it, and it for the writer).
    """

    def __init__(self, name: str = "ragline-writer") -> None:
        """The thread starts now, from the calling thread, at its priority."""
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)
        self._ident = self._pool.submit(threading.get_ident).result()

    def run(self, call: Callable[[], _T]) -> _T:
        """``call()``'s result (or its exception), run on the writer's thread with the caller's context."""
        if threading.get_ident() == self._ident:
            return call()
        return self._pool.submit(contextvars.copy_context().run, call).result()

    def close(self) -> None:
        """Stops the thread once the writes given to it are done."""
        self._pool.shutdown(wait=False)
