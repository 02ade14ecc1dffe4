"""Why a knowledge search slows down while the event loop is busy: the GIL hand-offs of one search.

Under ``bench/mixed_load.py``'s load the event loop's thread holds the GIL most of the time, and a search running
on other threads gets it back, after each call that released it (an SQLite statement, a wait for another thread,
a numpy or onnxruntime call), only when the holder lets go: up to ``sys.getswitchinterval()`` (5 ms) each time.
This measures that cost in one process, without a server: the sample knowledge base, ``SearchService.search`` as
the route runs it, alone and beside one thread running pure Python (which holds the GIL like a busy loop), and
counts the SQLite statements one search issues, by thread.

Run from the repository root::

    .venv/bin/python bench/search_gil.py [--searches 60]

Printed: search p50 / p95 alone and beside the GIL-holding thread, their ratio, the extra time per search divided
by the switch interval (about how many times a search waited for the GIL), and the statements per search.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.stats import percentile  # noqa: E402

QUERIES = [
    "How do I resume a stream?",
    "stop a running answer",
    "what limits apply to uploads",
    "how are citations shown",
    "which models run offline",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searches", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragline-gil-") as data:
        os.environ["RAGLINE_DATA_DIR"] = data
        os.environ.setdefault("RAGLINE_LOG_LEVEL", "WARNING")
        run(args.searches)


def run(searches: int) -> None:
    import ragline.store.db as db_module
    from ragline.bootstrap import ensure_default_tenant, find_sample_dir, load_sample
    from ragline.cli import _container
    from ragline.config import Settings
    from ragline.runtime.search import SearchBody

    sample = find_sample_dir()
    if sample is None:
        raise SystemExit("no samples/kb found")
    container = _container(Settings())
    tenant, _ = ensure_default_tenant(container)
    kb = load_sample(container, tenant, sample)  # no indexing thread: indexed before it returns
    counter = iter(range(1_000_000))

    async def search_times(n: int) -> list[float]:
        times = []
        for _ in range(n):
            i = next(counter)
            body = SearchBody(query=f"{QUERIES[i % len(QUERIES)]} {i}", knowledge_base_ids=[kb.id])
            started = time.perf_counter()
            await container.search.search(tenant.id, body)
            times.append((time.perf_counter() - started) * 1000)
        return times

    asyncio.run(search_times(10))  # models loaded, indexes read
    alone = asyncio.run(search_times(searches))
    stop = threading.Event()

    def hold_the_gil() -> None:
        spins = 0
        while not stop.is_set():
            spins += 1

    holder = threading.Thread(target=hold_the_gil, daemon=True)
    holder.start()
    try:
        beside = asyncio.run(search_times(searches))
    finally:
        stop.set()
        holder.join()

    statements: Counter[tuple[str, str]] = Counter()

    def trace(sql: str) -> None:
        if not sql.startswith("--"):  # FTS5's own statements run inside one call: no GIL hand-off of their own
            name = re.sub(r"[-_]\d+$", "", threading.current_thread().name)
            statements[(name, re.sub(r"\s+", " ", sql)[:70])] += 1

    connect = db_module.Database._reader_connection

    def traced(self: db_module.Database) -> object:
        conn = connect(self)
        conn.set_trace_callback(trace)
        return conn

    db_module.Database._reader_connection = traced  # type: ignore[assignment,method-assign]
    for database in {id(d): d for d in _databases(db_module.Database)}.values():
        _trace_open(database, trace)
    asyncio.run(search_times(20))
    db_module.Database._reader_connection = connect  # type: ignore[method-assign]

    interval = sys.getswitchinterval() * 1000
    p50a, p95a, p50b, p95b = (
        percentile(alone, 50),
        percentile(alone, 95),
        percentile(beside, 50),
        percentile(beside, 95),
    )
    print(f"{searches} searches of the sample knowledge base each way; switch interval {interval:.0f} ms")
    print(f"{'':<44}{'p50 ms':>10}{'p95 ms':>10}")
    print(f"{'alone':<44}{p50a:>10.1f}{p95a:>10.1f}")
    print(f"{'beside a thread holding the GIL':<44}{p50b:>10.1f}{p95b:>10.1f}")
    print(f"{'ratio':<44}{p50b / p50a:>10.1f}{p95b / p95a:>10.1f}")
    print(f"extra time per search / switch interval (p50): {(p50b - p50a) / interval:.0f}")
    total = sum(statements.values()) / 20
    print(f"SQLite statements issued per search: {total:.1f}")
    by_thread: Counter[str] = Counter()
    for (thread, _), n in statements.items():
        by_thread[thread] += n
    for thread, n in by_thread.most_common():
        print(f"  {thread:<30}{n / 20:>6.1f}")
    for (thread, sql), n in statements.most_common(12):
        print(f"    {n / 20:>5.1f}  {thread:<16} {sql}")


def _databases(kind: type) -> list[object]:
    import gc

    return [o for o in gc.get_objects() if isinstance(o, kind)]


def _trace_open(database: object, trace: object) -> None:
    """Trace the connections a database has open already (its pooled readers, its snapshot, its writer)."""
    import queue

    readers = []
    pool = database._readers  # type: ignore[attr-defined]
    while True:
        try:
            readers.append(pool.get_nowait())
        except queue.Empty:
            break
    for conn in readers:
        conn.set_trace_callback(trace)
        pool.put(conn)
    for conn in (database._snapshot_conn, database._conn):  # type: ignore[attr-defined]
        if conn is not None:
            conn.set_trace_callback(trace)


if __name__ == "__main__":
    main()
