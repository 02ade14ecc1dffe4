"""Blocking calls off the event loop, on a given pool; the search path's reads on threads of their own.

SQLite has one writer at a time. While an upload stores its parts, the chat turns' writes (a new turn, a finished
message) wait for the writer's lock on the default pool's threads: six on two cores, all of them waiting at once under
the mixed load (``bench/mixed_load.py``), and a knowledge search queued behind them waited 4-8 s. Reads never wait for
that lock (WAL: they see the last committed state), so the search path's reads run on threads no write holds.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

# Reads are short (milliseconds) and mostly wait for SQLite or numpy with the GIL released: a few more threads
# than cores, as the default pool has.
READ_THREADS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="ragline-read")


async def run_in(executor: Executor, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``call(*args, **kwargs)`` on ``executor``, in this task's context (as ``asyncio.to_thread`` runs it)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(executor, functools.partial(context.run, call, *args, **kwargs))


async def read_off_loop(call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``call(*args, **kwargs)`` on a read thread, in this task's context.

    Only for calls that never write: a write would wait for the writer's lock on a thread reads need.
    """
    return await run_in(READ_THREADS, call, *args, **kwargs)
