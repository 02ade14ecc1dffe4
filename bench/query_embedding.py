"""What embedding one search query costs with each local English model, side by side in one run.

A query is embedded once per search (then remembered), so this is the part of a search's latency the model sets.
The two-model default (MiniLM + bge-small-en) embeds a query with both parts at once; its parts one after the
other are timed beside it. Models take turns query by query, so a change of machine load falls on all alike.

    .venv/bin/python bench/query_embedding.py --queries 200
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.retrieval import datasets  # noqa: E402

MINILM = "local:all-MiniLM-L6-v2-int8"
BGE_EN = "local:bge-small-en-v1.5-q"
ENSEMBLE_EN = "local:minilm+bge-small-en"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200, help="SciFact queries (each embedded once per way)")
    args = parser.parse_args()
    from ragline.config import Settings, load_config
    from ragline.container import build_models

    config, _ = load_config()
    models = build_models(Settings(), config)
    if not models.has_embedder(ENSEMBLE_EN):
        sys.exit("bge-small-en was not fetched (make install with Maven); nothing to compare")
    minilm, bge, ensemble = (models.embedder(m) for m in (MINILM, BGE_EN, ENSEMBLE_EN))
    queries = list(datasets.load("scifact").queries.values())[: args.queries]

    def parts_in_turn(text: str) -> None:
        minilm.embed_query(text)
        bge.embed_query(text)

    # Each way gets its own spelling of every query (a trailing mark), so no way reads another's cached vector.
    ways: dict[str, tuple[str, Callable[[str], object]]] = {
        "MiniLM": ("", minilm.embed_query),
        "bge-small-en": (" ", bge.embed_query),
        "MiniLM + bge-small-en (default: parts at once)": ("  ", ensemble.embed_query),
        "MiniLM + bge-small-en, parts one after the other": ("   ", parts_in_turn),
    }
    for _, call in ways.values():
        call("warm up")
    times: dict[str, list[float]] = {name: [] for name in ways}
    print(f"cpu {os.cpu_count()}; load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    for query in queries:
        for name, (mark, call) in ways.items():
            started = time.perf_counter()
            call(query + mark)
            times[name].append((time.perf_counter() - started) * 1000)
    print(f"load average at end: {os.getloadavg()[0]:.2f}; {len(queries)} queries\n")
    print("| query embedding | p50 ms | p95 ms | mean ms |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        values.sort()
        p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
        print(f"| {name} | {statistics.median(values):.1f} | {p95:.1f} | {statistics.fmean(values):.1f} |")


if __name__ == "__main__":
    main()
