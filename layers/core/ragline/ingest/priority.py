"""Background work's CPU priority: below the requests' and the streams', so documents take the CPU those leave.

Linux keeps a nice value per thread, and a thread starts with its creator's. The threads that accept, index and enrich
documents raise theirs (``ingestion.background_nice``), and so do the threads they start (the embedding model's
pool), so the event loop that serves every stream, and the threads that answer searches and turns, come first
whenever the cores are busy; idle cores still go to the documents. Elsewhere nothing changes (macOS's thread ids
are not process ids).
"""

from __future__ import annotations

import os
import sys
import threading


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
