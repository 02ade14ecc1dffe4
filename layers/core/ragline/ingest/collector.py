"""Full garbage collections wait while documents are being ingested.

CPython's cyclic collector runs a full (generation 2) collection once enough objects have survived into the
oldest generation, and a full collection walks every tracked object of the process with the interpreter
lock held. Accepting or indexing a large document keeps tens of thousands of chunk objects alive for seconds
to minutes, so full collections come due repeatedly and each stalls every other thread — the API's requests
included — for as long as the walk takes: 100–275 ms for a 28,000-chunk document (measured in
``bench/ingestion_limits.py``). Young collections (generations 0 and 1) keep running: they touch only new
objects, take a few milliseconds, and collect the cycles that die young, which are nearly all of them.

:func:`full_collections_deferred` holds full collections off while any ingestion work runs (a count across
threads) and restores the collector's thresholds when the last one ends; the chunk objects are freed by
reference counting as the work drops them, so the next full collection walks a small heap again.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Young collections before a full one is considered: far more than any ingestion makes (the default is 10).
_DEFERRED_THRESHOLD = 10**9

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def full_collections_deferred(enabled: bool = True) -> Iterator[None]:
    """No full garbage collection starts on its own while the block runs.

    No full garbage collection starts on its own while the block runs (nested and concurrent blocks count: the
    thresholds come back when the last one ends). ``enabled=False`` leaves the collector as is.
    """
    global _active, _saved
    if not enabled:
        yield
        return
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], _DEFERRED_THRESHOLD)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
