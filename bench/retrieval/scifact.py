"""SciFact (BEIR test split) through ragline's real ingestion and search path.

Prints nDCG@10, Recall@100 and query latency (p50/p95) for keyword only (BM25), dense only, hybrid, and
the full chat search path (hybrid + rerank + MMR when those stages are wired), in one run, beside the
published and locally measured reference figures.

    .venv/bin/python bench/retrieval/scifact.py              # full: 5,183 documents, 300 queries
    .venv/bin/python bench/retrieval/scifact.py --queries 60 # a quick subset (relevant + sampled documents)
    .venv/bin/python bench/retrieval/scifact.py --scale 50000  # also: query latency at 50,000 chunks

The ingested database is cached under bench/results/ (keyed by the corpus subset and ingestion settings),
so a second run only searches. The data is read from ../shared/data/scifact and never copied.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
REFERENCE = [
    ("published BM25 (BEIR paper)", 0.665, None),
    ("published all-MiniLM-L6-v2", 0.645, None),
    ("measured here: FTS5 porter", 0.682, 0.929),
    ("measured here: MiniLM int8 dense", 0.647, 0.922),
    ("measured here: RRF FTS5-porter + MiniLM", 0.718, 0.955),
]


@dataclass
class SciFact:
    corpus: list[dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load(data: Path) -> SciFact:
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    queries = {}
    for line in (data / "queries.jsonl").read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            queries[str(item["_id"])] = item["text"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    return SciFact(corpus, {q: t for q, t in queries.items() if q in qrels}, qrels)


def subset(data: SciFact, queries: int | None, extra_docs: int, seed: int = 13) -> SciFact:
    """``queries`` test queries, their relevant documents, and ``extra_docs`` sampled others."""
    if queries is None:
        return data
    rng = random.Random(seed)
    chosen = sorted(data.queries, key=lambda q: (int(q) if q.isdigit() else 0, q))
    chosen = rng.sample(chosen, min(queries, len(chosen)))
    relevant = {d for q in chosen for d in data.qrels[q]}
    others = [d for d in data.corpus if d["_id"] not in relevant]
    picked = [d for d in data.corpus if d["_id"] in relevant] + rng.sample(others, min(extra_docs, len(others)))
    return SciFact(picked, {q: data.queries[q] for q in chosen}, {q: data.qrels[q] for q in chosen})


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    hits = {doc for doc in ranked[:k] if relevant.get(doc, 0) > 0}
    return len(hits) / len([d for d, r in relevant.items() if r > 0])


def build(
    data: SciFact, workdir: Path, progress: bool = True, name: str = "scifact", model: str = ""
) -> tuple[Any, Any, Any, dict[str, str]]:
    """The knowledge base, ingested through IngestService (cached on disk by the corpus it holds).

    ``model`` names the embedding model; by default the knowledge base chooses by language, as one created
    without a model does."""
    from ragline.bootstrap import ensure_default_tenant, ensure_knowledge_base
    from ragline.config import Settings
    from ragline.container import Container
    from ragline.ingest.service import DocumentInput
    from ragline.store.models import DocumentStatus

    container = Container.embedded(Settings(data_dir=workdir))
    tenant, _ = ensure_default_tenant(container)
    kb = container.knowledge.knowledge_base_by_name(tenant.id, name)
    if kb is None and model:
        kb = container.knowledge.create_knowledge_base(tenant.id, name, model)
    elif kb is None:
        kb = ensure_knowledge_base(container, tenant, name)
    have = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    if have < len(data.corpus):
        started = time.perf_counter()
        items = [
            DocumentInput(content=doc["text"], title=doc["title"], source=doc["_id"], file_type="text")
            for doc in data.corpus
        ]
        batch = 512
        for start in range(0, len(items), batch):
            container.ingest.ingest_many(kb, items[start : start + batch])
            if progress:
                print(f"  ingested {min(start + batch, len(items))}/{len(items)} documents", file=sys.stderr)
        elapsed = time.perf_counter() - started
        if progress:
            print(f"  ingestion: {len(items)} documents in {elapsed:.1f} s ({len(items) / elapsed:.1f} docs/s)")
    kb = container.knowledge.knowledge_base(tenant.id, kb.id)
    documents = container.knowledge.documents(tenant.id, kb.id, limit=1_000_000)
    # A cached database from an interrupted run (or a re-embedding cut short) has documents without their
    # vectors: searching it would measure a partial dense index. Finish them first.
    pending = [d for d in documents if d.status == DocumentStatus.PENDING]
    if pending:
        if progress:
            print(f"  embedding {len(pending)} pending documents", file=sys.stderr)
        container.ingest.index_documents(pending)
        kb = container.knowledge.knowledge_base(tenant.id, kb.id)
    return container, tenant, kb, {d.id: d.source for d in documents}


async def evaluate(
    container: Any, tenant: Any, kb: Any, sources: dict[str, str], data: SciFact, variant: dict[str, Any]
) -> dict[str, float]:
    from ragline.runtime.search import SearchBody

    ndcgs, recalls, latencies = [], [], []
    for query_id, text in data.queries.items():
        body = SearchBody(query=text, knowledge_base_ids=[kb.id], top_k=200, **variant)
        started = time.perf_counter()
        results = await container.search.search(tenant.id, body)
        latencies.append((time.perf_counter() - started) * 1000)
        best: dict[str, float] = {}
        for rank, result in enumerate(results):
            doc = sources.get(result.knowledge_id, "")
            # Document score: its best chunk (rank breaks score ties as the engine ordered them).
            key = -rank
            if doc and (doc not in best or key > best[doc]):
                best[doc] = key
        ranked = sorted(best, key=lambda d: -best[d])
        ndcgs.append(ndcg_at(ranked, data.qrels[query_id]))
        recalls.append(recall_at(ranked, data.qrels[query_id]))
    latencies.sort()
    return {
        "ndcg@10": statistics.fmean(ndcgs),
        "recall@100": statistics.fmean(recalls),
        "p50_ms": latencies[len(latencies) // 2],
        "p95_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))],
    }


# name -> (search request options, retrieval config overrides)
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "BM25 (FTS5 porter, keyword only)": ({"retrievers": "keyword", "enable_query_expansion": False}, {}),
    "dense (MiniLM int8 only)": ({"retrievers": "vector", "enable_query_expansion": False}, {}),
    "hybrid, seed's weighted RRF (0.7/0.3)": (
        {"retrievers": "hybrid", "enable_query_expansion": False},
        {"fusion": "rrf"},
    ),
    "hybrid, score fusion (default)": ({"retrievers": "hybrid", "enable_query_expansion": False}, {}),
    "full search path (defaults: + expansion, rerank/MMR)": ({"retrievers": "hybrid"}, {}),
}


def scale_latency(target_chunks: int, data: SciFact, workdir: Path) -> dict[str, float]:
    """Query latency at ``target_chunks`` chunks: real text for the keyword index, random unit vectors (the
    cost of exact vector search does not depend on what the vectors mean)."""
    import numpy as np

    from ragline.bootstrap import ensure_default_tenant, ensure_knowledge_base
    from ragline.config import Settings
    from ragline.container import Container
    from ragline.ingest.service import store_document
    from ragline.runtime.search import SearchBody
    from ragline.store.ids import new_id
    from ragline.store.models import Chunk, Document

    container = Container.embedded(Settings(data_dir=workdir))
    tenant, _ = ensure_default_tenant(container)
    kb = ensure_knowledge_base(container, tenant, f"scale-{target_chunks}")
    have = container.knowledge.document_counts([kb.id]).get(kb.id, 0)
    rng = np.random.default_rng(7)
    sentences = [s.strip() for d in data.corpus for s in d["text"].split(". ") if len(s.strip()) > 40]
    per_doc = 10
    needed_docs = target_chunks // per_doc
    if have < needed_docs:
        print(f"  building {target_chunks} chunks for the latency run ...", file=sys.stderr)
        for d in range(have, needed_docs):
            doc = Document(id=new_id(), tenant_id=tenant.id, knowledge_base_id=kb.id, title=f"synthetic {d}")
            chunks = [
                Chunk(
                    id=new_id(),
                    tenant_id=tenant.id,
                    knowledge_base_id=kb.id,
                    knowledge_id=doc.id,
                    chunk_index=i,
                    content=sentences[(d * per_doc + i) % len(sentences)],
                )
                for i in range(per_doc)
            ]
            vectors = rng.standard_normal((per_doc, 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store_document(container.knowledge, container.engine, kb, doc, chunks, chunks, vectors)
    latencies = []
    queries = list(data.queries.values())[:100]

    async def run() -> None:
        for text in queries:
            started = time.perf_counter()
            await container.search.search(tenant.id, SearchBody(query=text, knowledge_base_ids=[kb.id], top_k=10))
            latencies.append((time.perf_counter() - started) * 1000)

    asyncio.run(run())
    latencies.sort()
    return {
        "chunks": needed_docs * per_doc,
        "p50_ms": latencies[len(latencies) // 2],
        "p95_ms": latencies[int(len(latencies) * 0.95)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SCIFACT_DIR", DEFAULT_DATA)))
    parser.add_argument("--queries", type=int, default=None, help="a subset of the test queries")
    parser.add_argument("--extra-docs", type=int, default=500, help="non-relevant documents in a subset")
    parser.add_argument("--scale", type=int, default=0, help="also measure latency at this many chunks")
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        sys.exit(f"SciFact not found at {args.data} (set SCIFACT_DIR)")
    from ragline.config import load_config

    config, _ = load_config()
    data = subset(load(args.data), args.queries, args.extra_docs)
    fingerprint = hashlib.sha1(
        (",".join(sorted(d["_id"] for d in data.corpus)) + config.ingestion.model_dump_json()).encode()
    ).hexdigest()[:10]
    workdir = args.workdir / f"scifact-{len(data.corpus)}-{fingerprint}"
    print(f"SciFact: {len(data.corpus)} documents, {len(data.queries)} queries; cpu {os.cpu_count()}")
    container, tenant, kb, sources = build(data, workdir)
    rows = []
    retrieval = container.config.retrieval
    defaults = retrieval.model_dump()
    for name, (variant, overrides) in VARIANTS.items():
        for key, value in {**defaults, **overrides}.items():
            setattr(retrieval, key, value)  # the search plugin reads this same config object
        figures = asyncio.run(evaluate(container, tenant, kb, sources, data, variant))
        rows.append((name, figures))
    for key, value in defaults.items():
        setattr(retrieval, key, value)
    stages = sorted(stage.value for stage in container.events.events())
    print(f"\nstages wired: {', '.join(stages)}")
    print(f"\n| {'configuration':54} | nDCG@10 | Recall@100 | p50 ms | p95 ms |")
    print(f"|{'-' * 56}|--------:|-----------:|-------:|-------:|")
    for name, f in rows:
        print(
            f"| {name:54} | {f['ndcg@10']:7.3f} | {f['recall@100']:10.3f} | {f['p50_ms']:6.1f} | {f['p95_ms']:6.1f} |"
        )
    for name, ndcg, recall in REFERENCE:
        recall_text = f"{recall:10.3f}" if recall is not None else f"{'-':>10}"
        print(f"| {'reference: ' + name:54} | {ndcg:7.3f} | {recall_text} | {'-':>6} | {'-':>6} |")
    if args.scale:
        figures = scale_latency(args.scale, data, args.workdir / f"scale-{args.scale}")
        print(
            f"\nlatency at {figures['chunks']:.0f} chunks (full search path, top 10): p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms"
        )


if __name__ == "__main__":
    main()
