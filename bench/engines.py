"""Start time and memory of the live test engines (OpenSearch with k-NN, Neo4j), as `make test` starts them.

    .venv/bin/python bench/engines.py                 # with the jars already in ~/.m2
    .venv/bin/python bench/engines.py --fresh-m2      # a first run: Maven downloads into an empty repository

Prints, per engine: jar size, prepare time (Maven resolution, unpacking, compiling the launcher), start time
to ready, and the JVM's RSS right after start and after a small workload (an index of 200 384-dimensional
vectors searched 50 times; 200 entities written and searched). Both engines start side by side, as in
`make test`; the machine's load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.engines import engines as launcher  # noqa: E402

DIMENSIONS = 384


def _request(method: str, url: str, body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read() or b"null")


def opensearch_workload(url: str) -> float:
    rng = random.Random(7)
    index = f"{url}/bench-{os.getpid()}"
    _request(
        "PUT",
        index,
        {
            "settings": {"index": {"knn": True, "number_of_replicas": 0}},
            "mappings": {
                "properties": {
                    "v": {
                        "type": "knn_vector",
                        "dimension": DIMENSIONS,
                        "method": {"name": "hnsw", "space_type": "innerproduct", "engine": "lucene"},
                    },
                    "t": {"type": "text", "analyzer": "english"},
                }
            },
        },
    )
    lines = []
    for i in range(200):
        lines.append(json.dumps({"index": {"_id": str(i)}}))
        lines.append(json.dumps({"v": [rng.uniform(-1, 1) for _ in range(DIMENSIONS)], "t": f"passage number {i}"}))
    request = urllib.request.Request(
        f"{index}/_bulk?refresh=true",
        data=("\n".join(lines) + "\n").encode(),
        method="POST",
        headers={"Content-Type": "application/x-ndjson"},
    )
    began = time.monotonic()
    with urllib.request.urlopen(request, timeout=120):
        pass
    for _ in range(50):
        vector = [rng.uniform(-1, 1) for _ in range(DIMENSIONS)]
        _request("POST", f"{index}/_search", {"size": 10, "query": {"knn": {"v": {"vector": vector, "k": 10}}}})
    elapsed = time.monotonic() - began
    _request("DELETE", index)
    return elapsed


def neo4j_workload(uri: str, user: str, password: str) -> float:
    from neo4j import GraphDatabase

    began = time.monotonic()
    with GraphDatabase.driver(uri, auth=(user, password)) as driver:
        rows = [{"name": f"entity {i}"} for i in range(200)]
        driver.execute_query("UNWIND $rows AS row MERGE (:BenchEntity {name: row.name})", rows=rows)
        for i in range(50):
            driver.execute_query("MATCH (n:BenchEntity) WHERE n.name CONTAINS $q RETURN n", q=str(i))
        driver.execute_query("MATCH (n:BenchEntity) DETACH DELETE n")
    return time.monotonic() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh-m2", action="store_true", help="resolve into an empty Maven repository")
    args = parser.parse_args()
    fresh = None
    if args.fresh_m2:
        fresh = tempfile.mkdtemp(prefix="ragline-m2-")
        os.environ[launcher.M2_ENV] = fresh
    try:
        began = time.monotonic()
        with launcher.Engines() as engines:
            ready = time.monotonic() - began
            rss_start = {name: r.rss_bytes() for name, r in engines.running.items()}
            work: dict[str, float] = {}
            if "opensearch" in engines.running:
                work["opensearch"] = opensearch_workload(engines.state["opensearch"]["url"])
            if "neo4j" in engines.running:
                state = engines.state["neo4j"]
                work["neo4j"] = neo4j_workload(state["uri"], state["user"], state["password"])
            rss_work = {name: r.rss_bytes() for name, r in engines.running.items()}
            stop_began = time.monotonic()
        stopped = time.monotonic() - stop_began
    finally:
        if fresh:
            shutil.rmtree(fresh, ignore_errors=True)
    print(
        f"load average before: {os.getloadavg()[0]:.2f} (2 cores shared); maven repository: {'fresh' if fresh else '~/.m2'}"
    )
    print(
        f"{'engine':<11} {'jars MiB':>8} {'prepare s':>9} {'start s':>7} {'RSS start MiB':>13} {'workload s':>10} {'RSS after MiB':>13}"
    )
    for name, state in engines.state.items():
        if name not in rss_start:
            print(f"{name:<11} {state}")
            continue
        print(
            f"{name:<11} {state['download_bytes'] / 2**20:>8.0f} {state['prepare_seconds']:>9.1f}"
            f" {state['start_seconds']:>7.1f} {rss_start[name] / 2**20:>13.0f} {work.get(name, 0):>10.2f}"
            f" {rss_work[name] / 2**20:>13.0f}"
        )
    print(f"both ready after {ready:.1f} s (prepared and started side by side); both stopped in {stopped:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
