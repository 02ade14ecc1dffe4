"""Thread pools of a shared model, one per caller priority.

Linux keeps a nice value per thread, and a thread starts with its creator's: a pool's threads take the priority
of whoever first submitted to it. A model is shared by background work (indexing and enrichment run lowered,
``ingestion.background_nice``) and by requests (a search's query, an answer's sentences), so one pool would run
one of them at the other's priority: an answer's sentences behind every document, or documents beside the event
loop. Each caller priority gets a pool of its own, started by a caller at that priority. Off Linux there is one.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor


def _caller_nice() -> int:
    if sys.platform != "linux":
        return 0
    try:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    except OSError:
        return 0


class PoolsByPriority:
    """``get()`` is a pool whose threads run at the calling thread's priority."""

    def __init__(self, workers: int, name: str) -> None:
        """Pools of ``workers`` threads named ``name``, made on first use at each priority."""
        self._workers = workers
        self._name = name
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._lock = threading.Lock()

    def get(self) -> ThreadPoolExecutor:
        """The pool of the calling thread's priority (its threads start from callers at that priority)."""
        nice = _caller_nice()
        with self._lock:
            pool = self._pools.get(nice)
            if pool is None:
                pool = self._pools[nice] = ThreadPoolExecutor(self._workers, thread_name_prefix=f"{self._name}-n{nice}")
            return pool
