"""How long an answer's sentence scoring takes while documents embed, when both share one model's thread pool.

The extractive answerer scores up to ~20 sentences with the registry's MiniLM, the very instance that embeds
documents. A model's pool threads take the priority of the thread that started them, so with one pool per model
whichever came first set the priority of both: started by the indexer (ten steps down), an answer's sentences ran
behind every document whenever the cores were busy. ``ragline.models.pools.PoolsByPriority`` gives each caller
priority a pool of its own.

Run from the repository root::

    .venv/bin/python bench/shared_model_priority.py [--busy 1 --calls 40 --rounds 2]

Each round, for each way (one pool, started by the indexer first, as before; a pool per priority, shipped), in one
process: a thread ten steps down embeds documents without pause (batches of 8 on the model's two threads), ``--busy``
processes spin at the default priority, and this thread (the default priority, as a turn's) embeds 20 sentences
``--calls`` times. Printed: the sentence scoring's p50 / p95 / max in ms, side by side.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.background_writes import spin  # noqa: E402
from bench.stats import percentile  # noqa: E402
from ragline.ingest.priority import lower_this_thread  # noqa: E402
from ragline.models.onnx_minilm import OnnxMiniLMEmbedder  # noqa: E402
from ragline.models.pools import PoolsByPriority  # noqa: E402

STEP = 10
SENTENCES = [f"Sentence {i} of the passage says something about the river's length and its delta." for i in range(20)]
DOCUMENTS = [
    f"Chunk {i}: " + "a paragraph of an uploaded report about river basins and their floods. " * 6 for i in range(64)
]


class OnePool(PoolsByPriority):
    """As before: one pool, its threads at the priority of whoever submitted first."""

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if not self._pools:
                self._pools[0] = ThreadPoolExecutor(self._workers, thread_name_prefix=self._name)
            return self._pools[0]


def measure(shared: bool, calls: int) -> list[float]:
    embedder = OnnxMiniLMEmbedder(batch_size=8, threads=2)
    if shared:
        embedder._pools = OnePool(2, "embed")
    stop = threading.Event()
    started = threading.Event()

    def index() -> None:
        lower_this_thread(STEP)
        while not stop.is_set():
            embedder.embed_documents(DOCUMENTS)
            started.set()

    indexer = threading.Thread(target=index, daemon=True)
    indexer.start()
    started.wait()
    times = []
    for _ in range(calls):
        begin = time.perf_counter()
        embedder.embed_documents(SENTENCES)
        times.append((time.perf_counter() - begin) * 1000)
    stop.set()
    indexer.join()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=1, help="processes spinning at the default priority")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for process in spinners:
        process.start()
    ways = {"one pool, started by the indexer (before)": True, "a pool per priority (shipped)": False}
    rows: dict[str, list[list[float]]] = {way: [] for way in ways}
    try:
        for _ in range(args.rounds):
            for way, shared in ways.items():
                rows[way].append(measure(shared, args.calls))
    finally:
        for process in spinners:
            process.terminate()
    print(f"20 sentences embedded by a default-priority thread, {args.calls} calls, {args.busy} busy processes")
    print(f"{'way':<45} {'round':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for way, rounds in rows.items():
        for i, times in enumerate(rounds, 1):
            print(f"{way:<45} {i:>5} {percentile(times, 50):8.1f} {percentile(times, 95):8.1f} {max(times):8.1f}")


if __name__ == "__main__":
    main()
