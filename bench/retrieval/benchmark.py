"""Retrieval quality on every set, through the real ingestion and search path, in one run.

For each set (SciFact, the Chinese CMRC 2018 set, SQuAD paragraphs) the documents are ingested through
IngestService into a knowledge base created without a model (language detection chooses it: MiniLM for
the English sets, multilingual e5 for the Chinese one) and searched through the knowledge-search service:
keyword only, vector only, hybrid with the default fusion, hybrid with the seed's weighted RRF, and the full
default path (query expansion, rerank/MMR stages). The Chinese set is also run with MiniLM forced (a model
that cannot read it), which is what fusion must not be dragged down by.

A second table compares fusion rules on the same two recalled lists per query (the engine's vector and
keyword lists with the default thresholds), so every rule sees identical candidates.

    .venv/bin/python bench/retrieval/benchmark.py                       # every set, default query samples
    .venv/bin/python bench/retrieval/benchmark.py --sets scifact --queries 100

Ingested databases are cached under bench/results/ (keyed by corpus, model and ingestion settings).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.retrieval import datasets  # noqa: E402
from bench.retrieval.scifact import SciFact, build, evaluate, ndcg_at, recall_at  # noqa: E402

# set name → (queries sampled by default, models to run: "" = chosen by language detection)
PLAN: dict[str, tuple[int | None, list[str]]] = {
    "scifact": (None, [""]),
    "cmrc2018-train": (600, ["", "local:all-MiniLM-L6-v2-int8"]),
    "squad-train-qa": (None, [""]),
}

VARIANTS: dict[str, dict[str, Any]] = {
    "keyword only (FTS5 BM25)": {"retrievers": "keyword", "enable_query_expansion": False},
    "vector only": {"retrievers": "vector", "enable_query_expansion": False},
    "hybrid, default fusion": {"retrievers": "hybrid", "enable_query_expansion": False},
    "hybrid, seed's weighted RRF 0.7/0.3": {"retrievers": "hybrid", "enable_query_expansion": False, "_fusion": "rrf"},
    "full default path (+ expansion, rerank/MMR)": {"retrievers": "hybrid"},
}


def workdir_for(name: str, data: SciFact, model: str, base: Path) -> Path:
    from ragline.config import load_config

    config, _ = load_config()
    fingerprint = hashlib.sha1(
        (",".join(sorted(d["_id"] for d in data.corpus)) + model + config.ingestion.model_dump_json()).encode()
    ).hexdigest()[:10]
    return base / f"{name}-{len(data.corpus)}-{fingerprint}"


async def run_variant(
    container: Any, tenant: Any, kb: Any, sources: dict[str, str], data: SciFact, variant: dict[str, Any]
) -> dict[str, float]:
    retrieval = container.config.retrieval
    fusion = variant.pop("_fusion", None)
    saved = retrieval.fusion
    if fusion:
        retrieval.fusion = fusion
    try:
        return await evaluate(container, tenant, kb, sources, data, variant)
    finally:
        retrieval.fusion = saved
        if fusion:
            variant["_fusion"] = fusion


def recalled_lists(container: Any, kb: Any, data: SciFact) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per query: the vector and keyword lists hybrid search fuses (default thresholds, a 500 pool)."""
    from ragline.retrieval.base import RetrieveParams
    from ragline.retrieval.hybrid import normalize_keyword_scores

    conversation = container.config.conversation
    embedder = container.models.embedder(kb.embedding_model)
    out = {}
    for query_id, text in data.queries.items():
        params = RetrieveParams(
            query=text,
            knowledge_base_ids=[kb.id],
            query_embedding=embedder.embed_query(text),
            embedding_model=kb.embedding_model,
        )
        vector = [h for h in container.engine.vector_search(params, 500) if h.score >= conversation.vector_threshold]
        keyword = [
            h
            for h in normalize_keyword_scores(container.engine.keyword_search(params, 500))
            if h.score >= conversation.keyword_threshold
        ]
        out[query_id] = (vector, keyword)
    return out


def score_ranked(results: list[Any], sources: dict[str, str], qrels: dict[str, int]) -> tuple[float, float]:
    ranked: list[str] = []
    for result in results:
        doc = sources.get(result.knowledge_id, "")
        if doc and doc not in ranked:
            ranked.append(doc)
    return ndcg_at(ranked, qrels), recall_at(ranked, qrels)


def fusion_rules(container: Any) -> dict[str, Callable[[list[Any], list[Any], str], list[Any]]]:
    from ragline.retrieval.hybrid import fuse

    base = container.config.retrieval

    def with_config(**changes: Any) -> Callable[[list[Any], list[Any], str], list[Any]]:
        config = base.model_copy(update=changes)
        return lambda vector, keyword, query: fuse(vector, keyword, config, query=query)

    return {
        "score 0.5/0.5 (step 6 default)": with_config(fusion="score", adaptive=False),
        "score 0.6/0.4, adaptive": with_config(fusion="score", score_vector_weight=0.6, score_keyword_weight=0.4),
        "score 0.4/0.6, adaptive": with_config(fusion="score", score_vector_weight=0.4, score_keyword_weight=0.6),
        "score min-max 0.5/0.5, adaptive": with_config(fusion="score", score_normalization="minmax"),
        "score min-max 0.6/0.4, adaptive": with_config(
            fusion="score", score_normalization="minmax", score_vector_weight=0.6, score_keyword_weight=0.4
        ),
        "RRF 1:1, k=60": with_config(fusion="rrf", vector_weight=1.0, keyword_weight=1.0, adaptive=False),
        "seed's weighted RRF 0.7/0.3": with_config(fusion="rrf", vector_weight=0.7, keyword_weight=0.3, adaptive=False),
        "score, adaptive weights (default)": with_config(fusion="score", adaptive=True),
        "RRF 1:1, adaptive weights": with_config(fusion="rrf", vector_weight=1.0, keyword_weight=1.0, adaptive=True),
        "vector list alone": lambda vector, keyword, query: vector,
        "keyword list alone": lambda vector, keyword, query: keyword,
    }


def study(container: Any, kb: Any, sources: dict[str, str], data: SciFact) -> dict[str, tuple[float, float]]:
    lists = recalled_lists(container, kb, data)
    out: dict[str, tuple[float, float]] = {}
    for name, rule in fusion_rules(container).items():
        scores = [score_ranked(rule(v, k, data.queries[q]), sources, data.qrels[q]) for q, (v, k) in lists.items()]
        out[name] = (statistics.fmean(s[0] for s in scores), statistics.fmean(s[1] for s in scores))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="*", default=list(PLAN))
    parser.add_argument("--queries", type=int, default=0, help="queries per set (0: the plan's sample)")
    parser.add_argument(
        "--extra-docs",
        type=int,
        default=-1,
        help="a subset: the sampled queries' relevant documents and this many others (default: whole corpora)",
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--no-study", action="store_true")
    args = parser.parse_args()
    print(f"cpu {os.cpu_count()}; load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    table: list[tuple[str, str, str, dict[str, float]]] = []
    studies: list[tuple[str, str, dict[str, tuple[float, float]]]] = []
    for name in args.sets:
        if not datasets.available(name):
            print(f"{name}: not found under {datasets.DATA}; skipped")
            continue
        sample, models = PLAN[name]
        if args.extra_docs >= 0:
            data = datasets.subset(datasets.load(name), args.queries or sample or 100, args.extra_docs)
        else:
            data = datasets.sample_queries(datasets.load(name), args.queries or sample)
        for model in models:
            started = time.perf_counter()
            workdir = workdir_for(name, data, model, args.workdir)
            container, tenant, kb, sources = build(data, workdir, name=name, model=model)
            label = kb.embedding_model.removeprefix("local:") + ("" if model else " (detected)")
            print(
                f"{name}: {len(data.corpus)} documents, {len(data.queries)} queries, model {label}, language {kb.language or '-'}; built in {time.perf_counter() - started:.0f} s"
            )
            for variant_name, variant in VARIANTS.items():
                figures = asyncio.run(run_variant(container, tenant, kb, sources, data, dict(variant)))
                table.append((name, label, variant_name, figures))
            if not args.no_study:
                studies.append((name, label, study(container, kb, sources, data)))
            container.close()
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n| set | model | configuration | nDCG@10 | Recall@100 | p50 ms | p95 ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, label, variant_name, f in table:
        print(
            f"| {name} | {label} | {variant_name} | {f['ndcg@10']:.3f} | {f['recall@100']:.3f} | {f['p50_ms']:.1f} | {f['p95_ms']:.1f} |"
        )
    if studies:
        print("\nFusion rules on the same recalled lists (nDCG@10 / Recall@100):")
        rules = list(studies[0][2])
        print("| rule | " + " | ".join(f"{n} ({m})" for n, m, _ in studies) + " |")
        print("|---|" + "---:|" * len(studies))
        for rule in rules:
            print(f"| {rule} | " + " | ".join(f"{s[rule][0]:.3f} / {s[rule][1]:.3f}" for _, _, s in studies) + " |")


if __name__ == "__main__":
    main()
