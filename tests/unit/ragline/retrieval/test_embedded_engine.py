"""The embedded engine's staged indexing (keywords first, vectors appended) and long keyword queries."""

from __future__ import annotations

import numpy as np
import pytest

from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.embedded import _MAX_QUERY_TERMS, EmbeddedEngine
from ragline.store.db import Database
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Chunk, Document, DocumentStatus


@pytest.fixture
def stores(tmp_path):
    db = Database(tmp_path / "r.db")
    knowledge = SqliteKnowledgeStore(db)
    engine = EmbeddedEngine(db)
    db.execute("INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', 'now')")
    kb = knowledge.create_knowledge_base("t", "kb", "m")
    yield knowledge, engine, kb
    db.close()


def add(knowledge, kb, doc_id: str, texts: list[str]) -> list[Chunk]:
    document = Document(id=doc_id, tenant_id="t", knowledge_base_id=kb.id, title=doc_id, status=DocumentStatus.PENDING)
    chunks = [
        Chunk(id=f"{doc_id}-{i}", tenant_id="t", knowledge_base_id=kb.id, knowledge_id=doc_id, chunk_index=i, content=t)
        for i, t in enumerate(texts)
    ]
    knowledge.insert_document(document, chunks)
    return chunks


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def vector_ids(engine, kb, query) -> list[str]:
    params = RetrieveParams(query="", knowledge_base_ids=[kb.id], query_embedding=query, embedding_model="m")
    return [h.id for h in engine.vector_search(params, 10)]


def test_keywords_first_then_vectors_appended_are_searched_without_a_reload(stores):
    knowledge, engine, kb = stores
    chunks = add(knowledge, kb, "d1", ["red apples", "green pears"])
    engine.index_keywords(kb.id, chunks)
    found = engine.keyword_search(RetrieveParams(query="pears", knowledge_base_ids=[kb.id]), 10)
    assert [h.id for h in found] == ["d1-1"]
    assert vector_ids(engine, kb, unit(1, 0)) == []
    engine.add_vectors(kb.id, "m", chunks[:1], np.stack([unit(1, 0)]))
    assert vector_ids(engine, kb, unit(1, 0)) == ["d1-0"]
    block = engine._blocks[(kb.id, "m")]
    engine.add_vectors(kb.id, "m", chunks[1:], np.stack([unit(0, 1)]))
    assert vector_ids(engine, kb, unit(0, 1)) == ["d1-1", "d1-0"]
    assert engine._blocks[(kb.id, "m")] is block  # appended in place
    assert block.size == 2


def test_a_rewritten_vector_replaces_the_old_one(stores):
    knowledge, engine, kb = stores
    chunks = add(knowledge, kb, "d1", ["one", "two"])
    engine.add_vectors(kb.id, "m", chunks, np.stack([unit(1, 0), unit(0, 1)]))
    assert vector_ids(engine, kb, unit(1, 0))[0] == "d1-0"
    engine.add_vectors(kb.id, "m", chunks[:1], np.stack([unit(0, 1)]))
    hits = vector_ids(engine, kb, unit(1, 0))
    assert sorted(hits) == ["d1-0", "d1-1"]  # no duplicate row for d1-0
    params = RetrieveParams(query="", knowledge_base_ids=[kb.id], query_embedding=unit(0, 1), embedding_model="m")
    scores = {h.id: h.score for h in engine.vector_search(params, 10)}
    assert scores["d1-0"] == pytest.approx(1.0)


def test_deleting_a_document_and_dropping_another_models_vectors(stores):
    knowledge, engine, kb = stores
    first, second = add(knowledge, kb, "d1", ["one"]), add(knowledge, kb, "d2", ["two"])
    third = add(knowledge, kb, "d3", ["three"])
    engine.add_vectors(kb.id, "m", first + second, np.stack([unit(1, 0), unit(1, 1)]))
    engine.add_vectors(kb.id, "old", third, np.stack([unit(1, 0)]))
    assert len(vector_ids(engine, kb, unit(1, 0))) == 2  # model m only
    knowledge.delete_document("t", "d1")
    assert vector_ids(engine, kb, unit(1, 0)) == ["d2-0"]
    engine.delete_vectors(kb.id, keep_model="m")
    rows = knowledge._db.query("SELECT DISTINCT model FROM chunk_vectors")
    assert [r["model"] for r in rows] == ["m"]


def test_a_long_query_keeps_its_rarest_terms_not_its_first_ones(stores):
    knowledge, engine, kb = stores
    common = [f"common{i}" for i in range(_MAX_QUERY_TERMS + 20)]
    filler = [add(knowledge, kb, f"f{i}", [" ".join(common)]) for i in range(5)]
    target = add(knowledge, kb, "target", ["zanzibar is where the answer lives"])
    for chunks in [*filler, target]:
        engine.index_keywords(kb.id, chunks)
    query = " ".join([*common, "zanzibar"])  # the informative word comes last, past the first 64
    kept = engine.informative_terms(query)
    assert len(kept) == _MAX_QUERY_TERMS
    assert "zanzibar" in kept
    hits = engine.keyword_search(RetrieveParams(query=query, knowledge_base_ids=[kb.id]), 10)
    assert hits[0].knowledge_id == "target"
    # A query within the limit keeps every term, in order.
    assert engine.informative_terms("zanzibar answer lives") == ["zanzibar", "answer", "lives"]


def test_hits_below_the_hybrid_thresholds_are_left_out_as_hybrid_search_would(stores):
    from ragline.retrieval.hybrid import normalize_keyword_scores

    knowledge, engine, kb = stores
    texts = ["apple apple apple pie", "apple pie", "apple", "pear pie", "apple crumble with pear"]
    chunks = add(knowledge, kb, "d1", texts)
    engine.index_keywords(kb.id, chunks)
    engine.add_vectors(kb.id, "m", chunks, np.stack([unit(1, i / 4) for i in range(len(texts))]))
    for threshold in (0.0, 0.3, 0.6, 0.9, 1.0):
        params = RetrieveParams(query="apple pie", knowledge_base_ids=[kb.id], keyword_threshold=threshold)
        every = normalize_keyword_scores(engine.keyword_search(RetrieveParams("apple pie", [kb.id]), 10))
        kept = engine.keyword_search(params, 10)
        assert [h.id for h in kept] == [h.id for h in every if h.score >= threshold]
    query = unit(1, 0)
    for threshold in (0.0, 0.8, 0.95, 1.0):
        params = RetrieveParams(
            query="", knowledge_base_ids=[kb.id], query_embedding=query, embedding_model="m", vector_threshold=threshold
        )
        every = engine.vector_search(RetrieveParams("", [kb.id], query_embedding=query, embedding_model="m"), 10)
        assert [h.id for h in engine.vector_search(params, 10)] == [h.id for h in every if h.score >= threshold]
    assert len(engine.vector_search(RetrieveParams("", [kb.id], query_embedding=query, embedding_model="m"), 10)) == 5


def test_warming_loads_the_vectors_and_the_keyword_index(stores):
    knowledge, engine, kb = stores
    chunks = add(knowledge, kb, "d1", ["red apples", "green pears"])
    engine.index_keywords(kb.id, chunks)
    engine.add_vectors(kb.id, "m", chunks, np.stack([unit(1, 0), unit(0, 1)]))
    assert engine.warm([kb.id], "m", timeout=30)
    assert engine._blocks[(kb.id, "m")].size == 2
    assert engine._keywords._state is not None
    assert engine._keywords._state.rows == 2
