"""How long the API's writes wait while a background thread stores a large upload, with the cores busy.

The embedded server accepts documents on threads ten steps below the API's priority (``ingestion.background_nice``).
Storing a 28,000-chunk document holds the database's write lock for seconds; held by such a thread while other
processes keep both cores busy, every write of the API (a turn's message, its lease) waits for a thread the
scheduler serves last. ``ForegroundWriter`` runs that transaction on a thread at the API's priority instead.

Run from the repository root::

    .venv/bin/python bench/background_writes.py [--mb 19.9 --busy 2 --rounds 2]

Each round, for each way (the accepting thread at the API's priority, as before; ten steps down with the write on
it; ten steps down with the write on the foreground writer), in one process: ``--busy`` processes spin at the
default priority, the thread accepts the document, and this thread writes a row every 20 ms meanwhile; the last way
stores the document in parts (``ingestion.store_part_chunks``, shipped), the others in one transaction. Printed: the
accept's duration and the writes' wait p50 / p99 / max, side by side.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.mixed_load import Words, fit_large  # noqa: E402
from bench.stats import percentile  # noqa: E402
from ragline.config import Settings  # noqa: E402
from ragline.container import Container  # noqa: E402
from ragline.ingest.priority import lower_this_thread  # noqa: E402

WRITE_INTERVAL_S = 0.02


def spin() -> None:
    while True:
        pass


# (the accepting thread lowered, its writes on the foreground writer, the document stored in parts)
WAYS = {
    "as before: not lowered": (False, False, False),
    "lowered, the write on it": (True, False, False),
    "lowered, the foreground writer": (True, True, False),
    "lowered, foreground, in parts": (True, True, True),
}


def one(text: bytes, lowered: bool, foreground: bool, parts: bool) -> tuple[float, list[float]]:
    """The accept's seconds and the waits (ms) of the writes made meanwhile."""
    with tempfile.TemporaryDirectory() as data:
        container = Container.embedded(Settings(data_dir=Path(data)))
        if not foreground:
            container.ingest.set_writes(None)
        if not parts:  # one transaction for the whole document, as before ingestion.store_part_chunks
            container.config.ingestion.store_part_chunks = 10**9
        tenant, _ = container.tenants.create("t")
        kb = container.knowledge.create_knowledge_base(tenant.id, "kb", "local:all-MiniLM-L6-v2-int8")
        done = threading.Event()
        took: list[float] = []

        def accept() -> None:
            if lowered:
                lower_this_thread(container.config.ingestion.background_nice)
            start = time.monotonic()
            container.ingest.accept_bytes(kb, "large.md", text)
            took.append(time.monotonic() - start)
            done.set()

        thread = threading.Thread(target=accept)
        thread.start()
        waits: list[float] = []
        while not done.is_set():
            start = time.monotonic()
            container.sessions.create_session(tenant.id, [kb.id])
            waits.append((time.monotonic() - start) * 1000)
            done.wait(WRITE_INTERVAL_S)
        thread.join()
        container.close()
        return took[0], waits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=19.9)
    parser.add_argument("--busy", type=int, default=2, help="processes spinning at the default priority")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    text = fit_large(Words(1), int(args.mb * 1024 * 1024)).encode()
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for process in spinners:
        process.start()
    try:
        print(f"{len(text):,} bytes; {args.busy} busy processes; a write every {WRITE_INTERVAL_S * 1000:.0f} ms")
        print(
            f"{'round / the accepting thread':<38}{'accept s':>10}{'writes':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        )
        for round_ in range(1, args.rounds + 1):
            for where, (lowered, foreground, parts) in WAYS.items():
                took, waits = one(text, lowered, foreground, parts)
                print(
                    f"{f'{round_} / {where}':<38}{took:>10.1f}{len(waits):>8}"
                    f"{percentile(waits, 50):>9.1f}{percentile(waits, 99):>9.1f}{max(waits):>9.0f}"
                )
    finally:
        for process in spinners:
            process.terminate()


if __name__ == "__main__":
    main()
