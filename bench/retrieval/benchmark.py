"""Retrieval quality on every set, through the real ingestion and search path, every candidate model in one run.

For each set (SciFact, the Chinese CMRC 2018 set, SQuAD paragraphs) the documents are ingested through
IngestService into a knowledge base of each model of the set's plan (today's and yesterday's defaults and the
candidates side by side, so their ratios are comparable) and searched through the knowledge-search service:
keyword only, vector only, hybrid with the default fusion, and the full default path (query expansion,
rerank/MMR stages). Ingestion is timed (chunks/s) beside the model's raw throughput on the same chunks.
``--models`` runs other models on every set (MiniLM forced on the Chinese set: a model that cannot read it, which
fusion must not be dragged down by).

SciFact also gets a long-query table: 200 abstracts as keyword queries, the terms each rule keeps against
BM25 over the whole query. A last table compares fusion rules on the same two recalled lists per query (the
engine's vector and keyword lists with the default thresholds), so every rule sees identical candidates, among
them the first pass (both lists divided by their best) and the seed's weighted RRF.

    .venv/bin/python bench/retrieval/benchmark.py --no-long              # every set, every model of the plan
    .venv/bin/python bench/retrieval/benchmark.py --sets scifact --queries 100 --models local:bge-small-en-v1.5-q

The Maven candidates must be installed (``make install MODELS=all``). Ingested databases are cached under
bench/results/ (keyed by corpus, model and ingestion settings): ingestion is timed only where it ran.
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

MINILM = "local:all-MiniLM-L6-v2-int8"
E5_MULTILINGUAL = "local:multilingual-e5-small-q4"
BGE_EN = "local:bge-small-en-v1.5-q"
BGE_ZH = "local:bge-small-zh-v1.5-q"
E5_EN = "local:e5-small-v2-q"
ENSEMBLE_EN = "local:minilm+bge-small-en"  # MiniLM and bge-small-en read as one model (ragline.models.ensemble)

# set name → (queries sampled by default, other documents beside their relevant ones (None: the whole corpus),
# models to run side by side: "" = chosen by language detection). The subsets keep a run of every candidate near
# ~15 minutes on 2 cores shared with other work (at load 15, MiniLM ingested ~3 chunks/s and multilingual e5
# less). --queries and --extra-docs choose other sizes for every set.
PLAN: dict[str, tuple[int | None, int | None, list[str]]] = {
    "scifact": (100, 200, [MINILM, ENSEMBLE_EN, BGE_EN, E5_EN]),
    "cmrc2018-train": (100, 100, [E5_MULTILINGUAL, BGE_ZH]),
    "squad-train-qa": (150, 100, [MINILM, ENSEMBLE_EN, BGE_EN]),
}

# name → (search request options, retrieval configuration overrides). "before" is the fusion of step 9's
# first pass (both lists' scores divided by their best), to show what the default changes in the same run.
BEFORE: dict[str, Any] = {"score_normalization": "max"}
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "keyword only (BM25)": ({"retrievers": "keyword", "enable_query_expansion": False}, {}),
    "vector only": ({"retrievers": "vector", "enable_query_expansion": False}, {}),
    "full default path (+ expansion, rerank/MMR)": ({"retrievers": "hybrid"}, {}),
}


def select(name: str, queries: int = 0, extra_docs: int = -1) -> SciFact:
    """The set's corpus and queries as the plan samples them: ``queries`` (0: the plan's sample) and a subset of
    their relevant documents plus ``extra_docs`` others (-1: the plan's choice; a plan without one keeps the
    whole corpus)."""
    sample, extra, _models = PLAN[name]
    whole = datasets.load(name)
    if extra_docs >= 0 or extra is not None:
        return datasets.subset(whole, queries or sample or 100, extra_docs if extra_docs >= 0 else extra or 0)
    return datasets.sample_queries(whole, queries or sample)


def workdir_for(name: str, data: SciFact, model: str, base: Path) -> Path:
    from ragline.config import load_config

    config, _ = load_config()
    fingerprint = hashlib.sha1(
        (",".join(sorted(d["_id"] for d in data.corpus)) + model + config.ingestion.model_dump_json()).encode()
    ).hexdigest()[:10]
    return base / f"{name}-{len(data.corpus)}-{fingerprint}"


async def run_variant(
    container: Any,
    tenant: Any,
    kb: Any,
    sources: dict[str, str],
    data: SciFact,
    options: dict[str, Any],
    overrides: dict[str, Any],
) -> dict[str, float]:
    """The search options with these retrieval settings (on the configuration object the search reads)."""
    retrieval = container.config.retrieval
    saved = {key: getattr(retrieval, key) for key in overrides}
    for key, value in overrides.items():
        setattr(retrieval, key, value)
    try:
        return await evaluate(container, tenant, kb, sources, data, dict(options))
    finally:
        for key, value in saved.items():
            setattr(retrieval, key, value)


def recalled_lists(container: Any, kb: Any, data: SciFact) -> dict[str, tuple[list[Any], list[Any], float | None]]:
    """Per query: the vector and keyword lists hybrid search fuses (default thresholds, a 500 pool), and the
    query's mean cosine with the knowledge base."""
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
        out[query_id] = (vector, keyword, container.engine.vector_background(params))
    return out


def score_ranked(results: list[Any], sources: dict[str, str], qrels: dict[str, int]) -> tuple[float, float]:
    ranked: list[str] = []
    for result in results:
        doc = sources.get(result.knowledge_id, "")
        if doc and doc not in ranked:
            ranked.append(doc)
    return ndcg_at(ranked, qrels), recall_at(ranked, qrels)


Rule = Callable[[list[Any], list[Any], str, "float | None"], list[Any]]


def fusion_rules(container: Any, embedding_model: str) -> dict[str, Rule]:
    from ragline.retrieval.hybrid import fuse

    base = container.config.retrieval

    def with_config(**changes: Any) -> Rule:
        config = base.model_copy(update=changes)
        return lambda vector, keyword, query, background: fuse(
            vector, keyword, config, query=query, embedding_model=embedding_model, vector_background=background
        )

    return {
        "score, cosines from the KB's background (default)": with_config(),
        "score, max-normalised (step 9's first pass)": with_config(score_normalization="max"),
        "score, min-max": with_config(score_normalization="minmax"),
        "score 0.6/0.4, background": with_config(score_vector_weight=0.6, score_keyword_weight=0.4),
        "score 0.4/0.6, background": with_config(score_vector_weight=0.4, score_keyword_weight=0.6),
        "score, background, not adaptive": with_config(adaptive=False),
        "RRF 1:1, k=60": with_config(fusion="rrf", vector_weight=1.0, keyword_weight=1.0),
        "seed's weighted RRF 0.7/0.3": with_config(fusion="rrf", vector_weight=0.7, keyword_weight=0.3),
        "vector list alone": lambda vector, keyword, query, background: vector,
        "keyword list alone": lambda vector, keyword, query, background: keyword,
    }


def study(container: Any, kb: Any, sources: dict[str, str], data: SciFact) -> dict[str, tuple[float, float]]:
    lists = recalled_lists(container, kb, data)
    out: dict[str, tuple[float, float]] = {}
    for name, rule in fusion_rules(container, kb.embedding_model).items():
        scores = [
            score_ranked(rule(v, k, data.queries[q], bg), sources, data.qrels[q]) for q, (v, k, bg) in lists.items()
        ]
        out[name] = (statistics.fmean(s[0] for s in scores), statistics.fmean(s[1] for s in scores))
    return out


def long_queries(container: Any, kb: Any, data: SciFact, count: int = 200) -> dict[str, tuple[float, float, float]]:
    """Keyword search of long queries (documents' own text) by the terms each rule keeps, against BM25 over
    every term of the query: the share of its top 10 documents found, how often the document itself comes
    first, and the ranking time."""
    import random

    from ragline.retrieval.embedded import _MAX_INDEX_TERMS, _MAX_QUERY_TERMS, query_terms

    engine = container.engine
    keywords = engine._keywords
    long_docs = [d for d in data.corpus if len(query_terms(d["text"])) > _MAX_QUERY_TERMS]
    chosen = random.Random(5).sample(long_docs, min(count, len(long_docs)))
    row_doc = {int(r["rowid"]): r["knowledge_id"] for r in container.db.query("SELECT rowid, knowledge_id FROM chunks")}
    sources = {d.id: d.source for d in container.knowledge.documents(kb.tenant_id, kb.id, limit=1_000_000)}

    def ranked(terms: list[str]) -> tuple[list[str], float] | None:
        started = time.perf_counter()
        ranking = keywords.rank(terms, [kb.id])
        if ranking is None:
            return None
        pairs = ranking.top(200)
        elapsed = (time.perf_counter() - started) * 1000
        docs: list[str] = []
        for _, rowid in pairs:
            doc = sources.get(row_doc.get(rowid, ""), "")
            if doc and doc not in docs:
                docs.append(doc)
        return docs[:10], elapsed

    rules: dict[str, Callable[[str, list[str]], list[str]]] = {
        f"first {_MAX_QUERY_TERMS} (step 9's first pass)": lambda text, terms: terms[:_MAX_QUERY_TERMS],
        f"rarest {_MAX_QUERY_TERMS} (FTS5 fallback)": lambda text, terms: engine.informative_terms(text),
        f"rarest {_MAX_INDEX_TERMS} (default, in memory)": lambda text, terms: engine.informative_terms(
            text, _MAX_INDEX_TERMS
        ),
    }
    figures: dict[str, list[tuple[float, float, float]]] = {rule: [] for rule in rules}
    for doc in chosen:
        terms = query_terms(doc["text"])
        whole = ranked(terms)
        kept = {rule: ranked(pick(doc["text"], terms)) for rule, pick in rules.items()}
        if whole is None or any(v is None for v in kept.values()):
            continue  # a word FTS5 reads as a phrase: the in-memory index does not rank it
        for rule, result in kept.items():
            assert result is not None
            docs, ms = result
            figures[rule].append((len(set(docs) & set(whole[0])) / 10, float(docs[:1] == [doc["_id"]]), ms))
    return {
        rule: (
            statistics.fmean(f[0] for f in rows),
            statistics.fmean(f[1] for f in rows),
            statistics.median(f[2] for f in rows),
        )
        for rule, rows in figures.items()
        if rows
    }


def registered(model: str) -> bool:
    """True when this process offers ``model`` (the Maven models only after make install fetched them)."""
    from ragline.config import Settings, load_config
    from ragline.container import build_models

    config, _ = load_config()
    return build_models(Settings(), config).has_embedder(model)


def ingestion_rates(container: Any, kb: Any, seconds: float | None, sample: int = 256) -> tuple[int, float, float]:
    """(chunks, chunks/s of the whole ingestion, chunks/s of the raw model on ``sample`` of the same chunk texts,
    embedded right after with the same embedder in one call)."""
    rows = container.db.query("SELECT content FROM chunks WHERE knowledge_base_id = ? AND searchable = 1", (kb.id,))
    texts = [r["content"] for r in rows]
    embedder = container.models.embedder(kb.embedding_model)
    chosen = texts[:: max(1, len(texts) // sample)][:sample]
    started = time.perf_counter()
    embedder.embed_documents(chosen)
    raw = len(chosen) / (time.perf_counter() - started)
    return len(texts), len(texts) / seconds if seconds else float("nan"), raw


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
    parser.add_argument("--models", nargs="*", default=[], help="these models on every set (default: the plan's)")
    parser.add_argument("--no-study", action="store_true")
    parser.add_argument("--no-long", action="store_true", help="skip the long-query table (SciFact)")
    args = parser.parse_args()
    print(f"cpu {os.cpu_count()}; load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    table: list[tuple[str, str, str, dict[str, float]]] = []
    ingestion: list[tuple[str, str, int, float, float]] = []
    long_rows: dict[str, tuple[float, float, float]] = {}
    studies: list[tuple[str, str, dict[str, tuple[float, float]]]] = []
    for name in args.sets:
        if not datasets.available(name):
            print(f"{name}: not found under {datasets.DATA}; skipped")
            continue
        models = PLAN[name][2]
        data = select(name, args.queries, args.extra_docs)
        for model in args.models or models:
            if model and not registered(model):
                print(f"{name}: {model} is not installed here (make install MODELS=all); skipped")
                continue
            started = time.perf_counter()
            workdir = workdir_for(name, data, model, args.workdir)
            fresh = not workdir.exists()
            container, tenant, kb, sources = build(data, workdir, name=name, model=model)
            built_s = time.perf_counter() - started
            label = kb.embedding_model.removeprefix("local:") + ("" if model else " (detected)")
            print(
                f"{name}: {len(data.corpus)} documents, {len(data.queries)} queries, model {label}, language {kb.language or '-'}; built in {built_s:.0f} s"
            )
            # Timed where it ran; a cached knowledge base still gets its raw model rate, measured now.
            ingestion.append((name, label, *ingestion_rates(container, kb, built_s if fresh else None)))
            print(f"  ingestion: {ingestion[-1][2]} chunks; chunks/s ingested, raw: {ingestion[-1][3:]}", flush=True)
            for variant_name, (options, overrides) in VARIANTS.items():
                figures = asyncio.run(run_variant(container, tenant, kb, sources, data, options, overrides))
                table.append((name, label, variant_name, figures))
                print(f"  {variant_name}: {figures}", flush=True)
            if name == "scifact" and not args.no_long:
                long_rows = long_queries(container, kb, data)
            if not args.no_study:
                studies.append((name, label, study(container, kb, sources, data)))
            container.close()
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for set_name, label in dict.fromkeys((n, m) for n, m, _, _ in table):
        print(f"\n{set_name}, {label}:")
        print("| configuration | nDCG@10 | Recall@100 | p50 ms | p95 ms |")
        print("|---|---:|---:|---:|---:|")
        for name, model_label, variant_name, f in table:
            if (name, model_label) == (set_name, label):
                print(
                    f"| {variant_name} | {f['ndcg@10']:.3f} | {f['recall@100']:.3f} | {f['p50_ms']:.1f} | {f['p95_ms']:.1f} |"
                )
    if ingestion:
        print("\nIngestion (IngestService, chunks/s) against the model's raw throughput on 256 of the same chunks:")
        print("| set | model | chunks | ingestion chunks/s | raw model chunks/s | × raw |")
        print("|---|---|---:|---:|---:|---:|")
        for set_name, label, chunks, rate, raw in ingestion:
            print(f"| {set_name} | {label} | {chunks} | {rate:.1f} | {raw:.1f} | {rate / raw:.2f} |")
    if long_rows:
        print(
            "\nLong queries: 200 SciFact abstracts (over 64 terms) as keyword queries; the share of the top 10"
            " documents of BM25 over the whole query that each rule finds, and its ranking time:"
        )
        print("| terms kept | top-10 overlap with the whole query | known item first | rank p50 ms |")
        print("|---|---:|---:|---:|")
        for rule, (overlap, known, ms) in long_rows.items():
            print(f"| {rule} | {overlap:.3f} | {known:.3f} | {ms:.2f} |")
    if studies:
        print("\nFusion rules on the same recalled lists (nDCG@10 / Recall@100):")
        rules = list(studies[0][2])
        print("| rule | " + " | ".join(f"{n} ({m})" for n, m, _ in studies) + " |")
        print("|---|" + "---:|" * len(studies))
        for rule in rules:
            print(f"| {rule} | " + " | ".join(f"{s[rule][0]:.3f} / {s[rule][1]:.3f}" for _, _, s in studies) + " |")


if __name__ == "__main__":
    main()
