"""OpenSearchEngine against the real OpenSearch 2.19 node (k-NN plugin) that the test run starts.

The node comes from tests/support/engines.py; the module works in a fresh index that is deleted afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragline.config import RetrievalConfig
from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.hybrid import hybrid_search
from ragline.store.models import Chunk, Document

KB = "kb-live"
OTHER_KB = "kb-other"
PASSAGES = {
    "c-hnsw": ("Vector search", "HNSW builds a layered proximity graph to find nearest neighbour vectors quickly."),
    "c-bm25": ("Keyword search", "BM25 ranks documents by term frequency and inverse document frequency."),
    "c-bread": ("Baking", "Knead the dough for ten minutes, then let the bread rise in a warm place."),
    "c-tide": ("Oceans", "Tides are caused by the gravitational pull of the moon on the oceans."),
}
CHINESE = ("c-zh", "检索", "倒排索引把每个词映射到包含它的文档列表。")


@pytest.fixture(scope="module")
def embedder() -> Any:
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def engine(embedder: Any, opensearch_client: Any, opensearch_index: str) -> Any:
    from ragline.retrieval.opensearch import OpenSearchEngine

    engine = OpenSearchEngine(opensearch_client, opensearch_index)
    engine.ensure_index(embedder.dimensions)
    document = Document(id="doc-1", tenant_id="t-1", knowledge_base_id=KB, title="Search notes")
    chunks = [
        Chunk(
            id=chunk_id,
            tenant_id="t-1",
            knowledge_base_id=KB,
            knowledge_id="doc-1",
            chunk_index=i,
            header=header,
            content=content,
        )
        for i, (chunk_id, (header, content)) in enumerate(PASSAGES.items())
    ]
    vectors = embedder.embed_documents([f"{c.header}\n{c.content}" for c in chunks])
    engine.index_chunks(KB, embedder.model_id, chunks, vectors, document=document)

    zh_id, zh_header, zh_content = CHINESE
    zh = Chunk(
        id=zh_id,
        tenant_id="t-1",
        knowledge_base_id=KB,
        knowledge_id="doc-zh",
        chunk_index=0,
        header=zh_header,
        content=zh_content,
        metadata={"title": "索引"},
    )
    engine.index_chunks(KB, embedder.model_id, [zh], embedder.embed_documents([zh_content]))

    # The same passage in another knowledge base, which the filters must keep out.
    stray = chunks[0].model_copy(update={"id": "c-stray", "knowledge_base_id": OTHER_KB})
    engine.index_chunks(OTHER_KB, embedder.model_id, [stray], vectors[:1])
    return engine


def params(embedder: Any, query: str, **kwargs: Any) -> RetrieveParams:
    return RetrieveParams(
        query=query,
        knowledge_base_ids=[KB],
        query_embedding=embedder.embed_query(query),
        embedding_model=embedder.model_id,
        match_count=3,
        **kwargs,
    )


def test_hybrid_search_ranks_the_right_chunk_first(engine: Any, embedder: Any) -> None:
    results = hybrid_search(
        engine, params(embedder, "how do nearest neighbour graphs find similar vectors"), RetrievalConfig()
    )
    assert results[0].id == "c-hnsw"
    assert results[0].knowledge_title == "Search notes"
    assert results[0].header == "Vector search"
    assert all(r.knowledge_base_id == KB for r in results)


def test_vector_scores_are_cosine_similarities(engine: Any, embedder: Any) -> None:
    query = "what makes the tide rise and fall"
    hits = engine.vector_search(params(embedder, query), top_k=4)
    assert hits[0].id == "c-tide"
    passage = embedder.embed_documents(["{}\n{}".format(*PASSAGES["c-tide"])])[0]
    expected = float(np.dot(passage, embedder.embed_query(query)))
    assert hits[0].score == pytest.approx(expected, abs=1e-3)


def test_the_header_is_searchable_by_keyword(engine: Any, embedder: Any) -> None:
    hits = engine.keyword_search(params(embedder, "baking"), top_k=5)
    assert [h.id for h in hits] == ["c-bread"]


def test_chinese_keyword_search_reads_jieba_words(engine: Any, embedder: Any) -> None:
    query = "倒排索引是什么"
    hits = engine.keyword_search(params(embedder, query), top_k=5)
    assert hits[0].id == CHINESE[0]
    assert hits[0].knowledge_title == "索引"
    fused = hybrid_search(engine, params(embedder, query, vector_enabled=False), RetrievalConfig())
    assert fused[0].id == CHINESE[0]


def test_other_embedding_models_are_filtered_out(engine: Any, embedder: Any) -> None:
    query = params(embedder, "nearest neighbour vectors")
    query.embedding_model = "local:another-model"
    assert engine.vector_search(query, top_k=5) == []


def test_delete_document_removes_its_chunks(engine: Any, embedder: Any) -> None:
    assert engine.delete_document("doc-zh") == 1
    assert engine.keyword_search(params(embedder, "倒排索引"), top_k=5) == []
