"""Knowledge-search latency at scale, and where it goes: query embedding, FTS5, numpy, the rest.

A knowledge base of ``--chunks`` chunks (default 50,000): real SciFact sentences for the keyword index,
random unit vectors for the dense index (exact search costs the same whatever the vectors mean). Then
distinct SciFact queries (no embedding cache hit) through the knowledge-search service, in one run:
- top 10 with the defaults (hybrid, query expansion, rerank stage with MMR), top 100, and top 10 with
  expansion off, so the cost of each is a ratio of the same run;
- the parts measured on the same queries: the query embedding (MiniLM), the keyword search (in memory, and
  the same search by FTS5's bm25() in SQL, with how many of the rankings are equal), the numpy vector search,
  and fusion.

    .venv/bin/python bench/query_latency.py                # 50,000 chunks, 200 queries
    .venv/bin/python bench/query_latency.py --chunks 10000

The database is cached under bench/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import percentile  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
PER_DOC = 10
# The pool hybrid search recalls for a top 10: match count 30 → max(30 × 5, 50).
POOL = 150


def build(target: int, data: Path, workdir: Path) -> tuple[Any, Any, Any]:
    import numpy as np

    from ragline.bootstrap import ensure_default_tenant
    from ragline.config import Settings
    from ragline.container import Container
    from ragline.ingest.service import store_document
    from ragline.store.ids import new_id
    from ragline.store.models import Chunk, Document

    container = Container.embedded(Settings(data_dir=workdir))
    tenant, _ = ensure_default_tenant(container)
    model = container.models.default_embedder_id
    kb = container.knowledge.knowledge_base_by_name(tenant.id, "scale") or container.knowledge.create_knowledge_base(
        tenant.id, "scale", model
    )
    have = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    sentences = [s.strip() for d in corpus for s in d["text"].split(". ") if len(s.strip()) > 40]
    rng = np.random.default_rng(7)
    for d in range(have, target // PER_DOC):
        if d % 500 == 0:
            print(f"  building: {d * PER_DOC}/{target} chunks", file=sys.stderr)
        doc = Document(id=new_id(), tenant_id=tenant.id, knowledge_base_id=kb.id, title=f"synthetic {d}")
        chunks = [
            Chunk(
                id=new_id(),
                tenant_id=tenant.id,
                knowledge_base_id=kb.id,
                knowledge_id=doc.id,
                chunk_index=i,
                content=". ".join(sentences[((d * PER_DOC + i) * 3 + j) % len(sentences)] for j in range(3)),
            )
            for i in range(PER_DOC)
        ]
        vectors = rng.standard_normal((PER_DOC, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store_document(container.knowledge, container.engine, kb, doc, chunks, chunks, vectors)
    return container, tenant, kb


def timed(samples: list[float], work: Any) -> Any:
    started = time.perf_counter()
    out = work()
    samples.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SCIFACT_DIR", DEFAULT_DATA)))
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    from ragline.retrieval.base import RetrieveParams
    from ragline.retrieval.hybrid import fuse, normalize_keyword_scores
    from ragline.runtime.search import SearchBody

    container, tenant, kb = build(args.chunks, args.data, args.workdir / f"latency-{args.chunks}")
    queries = [
        json.loads(line)["text"] for line in (args.data / "queries.jsonl").read_text().splitlines() if line.strip()
    ]
    queries = list(dict.fromkeys(queries))[: args.queries]
    embedder = container.models.embedder(kb.embedding_model)
    embedder.embed_query("warm up")
    config = container.config
    print(f"{args.chunks} chunks, {len(queries)} distinct queries; cpu {os.cpu_count()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    async def search(text: str, **options: Any) -> None:
        await container.search.search(tenant.id, SearchBody(query=text, knowledge_base_ids=[kb.id], **options))

    # Load the vector matrix, the keyword index and its postings once, outside the timed runs (and outside the
    # search timeout: on a busy machine the first load of 50,000 rows can take long), as a server that has
    # answered a few searches has them.
    warm = RetrieveParams(
        query="warm up",
        knowledge_base_ids=[kb.id],
        query_embedding=embedder.embed_query("warm up"),
        embedding_model=kb.embedding_model,
    )
    container.engine.warm([kb.id], kb.embedding_model)
    container.engine.vector_search(warm, 10)
    container.engine.keyword_search(warm, 10)
    runs: dict[str, list[float]] = {name: [] for name in ("top10", "top100", "top10_no_expansion")}
    parts: dict[str, list[float]] = {name: [] for name in ("embedding", "keyword", "fts5", "numpy", "fusion")}
    equal = 0
    # Distinct text per configuration, so no run reads another's cached query vector.
    configurations = {
        "top10": lambda text: search(text, top_k=10),
        "top100": lambda text: search(text + " ", top_k=100),
        "top10_no_expansion": lambda text: search(text + "  ", top_k=10, enable_query_expansion=False),
    }

    async def run_all() -> None:
        # One event loop for every search, as a server has (asyncio.run per search started an executor thread
        # per search).
        nonlocal equal
        await search("warm up the vector cache")
        for index, text in enumerate(queries):
            # The first configuration to meet a query reads its new terms' postings: take turns.
            names = list(configurations)
            names = names[index % 3 :] + names[: index % 3]
            for name in names:
                await _timed_async(runs[name], configurations[name](text))
            vector = timed(parts["embedding"], lambda t=text: embedder.embed_query(t + "   "))
            params = RetrieveParams(
                query=text, knowledge_base_ids=[kb.id], query_embedding=vector, embedding_model=kb.embedding_model
            )
            keyword = timed(parts["keyword"], lambda p=params: container.engine.keyword_search(p, POOL))
            by_fts5 = timed(parts["fts5"], lambda p=params: container.engine.keyword_search_fts5(p, POOL))
            equal += [(h.id, h.score) for h in keyword] == [(h.id, h.score) for h in by_fts5]
            dense = timed(parts["numpy"], lambda p=params: container.engine.vector_search(p, POOL))
            timed(
                parts["fusion"],
                lambda v=dense, k=keyword, t=text: fuse(
                    v, normalize_keyword_scores(k), config.retrieval, query=t, embedding_model=kb.embedding_model
                ),
            )
            if index == 0:
                for samples in (*runs.values(), *parts.values()):
                    samples.clear()  # the first query pays one-time costs

    asyncio.run(run_all())
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n| what | p50 ms | p95 ms | × top-10 p50 |")
    print("|---|---:|---:|---:|")
    base = percentile(runs["top10"], 50)
    labels = {
        "top10": "knowledge search, top 10 (defaults: hybrid + expansion + rerank/MMR)",
        "top100": "knowledge search, top 100",
        "top10_no_expansion": "knowledge search, top 10, expansion off",
        "embedding": "part: query embedding (MiniLM int8)",
        "keyword": "part: keyword search, BM25 in memory (pool 150)",
        "fts5": "part: the same keyword search by FTS5 bm25() in SQL (before)",
        "numpy": "part: numpy exact vector search (pool 150)",
        "fusion": "part: fusion",
    }
    for name, samples in (*runs.items(), *parts.items()):
        p50, p95 = percentile(samples, 50), percentile(samples, 95)
        print(f"| {labels[name]} | {p50:.1f} | {p95:.1f} | {p50 / base:.2f} |")
    print(f"\nkeyword rankings (ids and scores, top {POOL}) equal to FTS5's: {equal} of {len(queries)} queries")
    container.close()


async def _timed_async(samples: list[float], work: Any) -> None:
    started = time.perf_counter()
    await work
    samples.append((time.perf_counter() - started) * 1000)


if __name__ == "__main__":
    main()
