"""A CI-sized SciFact run through the real ingestion and search path: a floor under the measured quality,
so a real regression in chunking, indexing, fusion or ranking fails the suite.

The full benchmark (5,183 documents, 300 queries) is bench/retrieval/scifact.py; this subset (40 queries,
their relevant documents and 200 others) keeps `make test` fast. Floors sit a little under the figures this
subset measured (see the constants); a data set that is absent skips with a clear message.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.retrieval.scifact import build, evaluate, load, subset

# Indexing ~700 chunks dominates; on a shared, busy machine it passes the suite's 300 s hang guard.
pytestmark = pytest.mark.timeout(1800)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"
QUERIES, EXTRA_DOCS = 40, 200
# Measured on this subset: hybrid nDCG@10 0.902 (Recall@100 1.0), BM25 0.878 (0.975), dense 0.889 (1.0).
# (Step 9's first-pass fusion, both lists divided by their best, scored 0.923 here; on all 300 queries the
# default scores 0.733 against its 0.735, a paired difference of -0.002 ± 0.003: see the README.)
HYBRID_FLOOR = 0.88
SINGLE_LIST_FLOOR = 0.85


@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    if not (DATA / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact not found at {DATA}: the retrieval regression guard needs ../shared/data/scifact")
    data = subset(load(DATA), QUERIES, EXTRA_DOCS)
    container, tenant, kb, sources = build(data, tmp_path_factory.mktemp("scifact"), progress=False)
    yield container, tenant, kb, sources, data
    container.close()


def run(scifact, **variant):
    container, tenant, kb, sources, data = scifact
    return asyncio.run(evaluate(container, tenant, kb, sources, data, variant))


def test_hybrid_search_quality_floor(scifact):
    hybrid = run(scifact, retrievers="hybrid")
    bm25 = run(scifact, retrievers="keyword", enable_query_expansion=False)
    dense = run(scifact, retrievers="vector", enable_query_expansion=False)
    assert bm25["ndcg@10"] >= SINGLE_LIST_FLOOR, bm25
    assert dense["ndcg@10"] >= SINGLE_LIST_FLOOR, dense
    assert hybrid["ndcg@10"] >= HYBRID_FLOOR, hybrid
    # Fusion earns its keep: better than either list alone.
    assert hybrid["ndcg@10"] > max(bm25["ndcg@10"], dense["ndcg@10"]), (hybrid, bm25, dense)
    assert hybrid["recall@100"] >= max(bm25["recall@100"], dense["recall@100"]), (hybrid, bm25, dense)
