"""The retrieval engines' contract, run against both: the embedded engine (SQLite FTS5 + numpy) and the
OpenSearchEngine on the real OpenSearch 2.19 node the test run starts (tests/support/engines.py).

One body of assertions proves they behave alike: documents go in through the real ingestion service, and
searches run both at the engine's port (hybrid search, its thresholds and filters) and through the
knowledge-search path a chat turn takes (search, rerank, top-k). The assertions are about behaviour — which
passages come back, in which scope, with which fields — never about fusion constants.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragline.config import Settings
from ragline.ingest.indexing import embed_passages, embedding_text
from ragline.ingest.service import DocumentInput, store_document
from ragline.retrieval.base import RetrieveEngine, RetrieveParams
from ragline.retrieval.config import RetrievalConfig
from ragline.retrieval.hybrid import hybrid_search
from ragline.runtime.search import SearchBody
from ragline.store.models import Chunk, Document, FAQEntry, KnowledgeBase
from ragline.types import ChunkType, SearchResult

BACKENDS = ["embedded", "opensearch"]

SEARCH_NOTES = {
    "Vector search": "HNSW builds a layered proximity graph to find nearest neighbour vectors quickly.",
    "Keyword search": "BM25 ranks documents by term frequency and inverse document frequency.",
}
BAKING = ("Baking", "Knead the dough for ten minutes, then let the bread rise in a warm place.")
TIDES = ("Oceans", "Tides are caused by the gravitational pull of the moon on the oceans.")
CHINESE = ("倒排索引", "倒排索引把每个词映射到包含它的文档列表，检索时只需读取查询词的列表。")
CHINESE_OTHER = ("天气", "今天北京天气晴朗，气温二十五度，适合户外散步。")
FAQ = FAQEntry(
    standard_question="How do I reset my password?",
    similar_questions=["I forgot my password", "change the login password"],
    negative_questions=["How do I reset my router?"],
    answers=["Open Settings, then Security, and choose Reset password."],
)


def markdown(sections: dict[str, str]) -> str:
    return "\n\n".join(f"## {header}\n\n{content}" for header, content in sections.items())


@dataclass
class Corpus:
    """Two tenants' knowledge bases, filled through the ingestion service; chunk ids by passage."""

    tenant: str
    other_tenant: str
    kb: KnowledgeBase
    kb_second: KnowledgeBase
    kb_other_tenant: KnowledgeBase
    kb_zh: KnowledgeBase
    kb_faq: KnowledgeBase
    chunk_of: dict[str, str]
    documents: dict[str, Document]


@dataclass
class Backend:
    name: str
    container: Any
    engine: RetrieveEngine
    corpus: Corpus

    @property
    def embedder(self) -> Any:
        return self.container.models.embedder(self.corpus.kb.embedding_model)

    def params(self, query: str, kb_ids: list[str] | None = None, **kwargs: Any) -> RetrieveParams:
        values: dict[str, Any] = {
            "query": query,
            "knowledge_base_ids": kb_ids if kb_ids is not None else [self.corpus.kb.id],
            "tenant_id": self.corpus.tenant,
            "query_embedding": self.embedder.embed_query(query),
            "embedding_model": self.corpus.kb.embedding_model,
            "match_count": 5,
        }
        values.update(kwargs)
        return RetrieveParams(**values)

    def hybrid(self, query: str, kb_ids: list[str] | None = None, **kwargs: Any) -> list[SearchResult]:
        return hybrid_search(self.engine, self.params(query, kb_ids, **kwargs), RetrievalConfig())

    def search(self, tenant: str, **body: Any) -> list[SearchResult]:
        """The knowledge-search path (search → rerank → top-k) a chat turn takes."""
        results: list[SearchResult] = asyncio.run(self.container.search.search(tenant, SearchBody(**body)))
        return results

    def delete(self, document: Document) -> None:
        """Delete a document as both runtimes do (ingest/removal.py: the index, then the records)."""
        assert self.container.removal.delete_document(document.tenant_id, document.id) is not None


def _ingest(container: Any) -> Corpus:
    tenant, _ = container.tenants.create("contract-a")
    other, _ = container.tenants.create("contract-b")
    model = container.models.default_embedder_id
    knowledge, ingest = container.knowledge, container.ingest
    kb = knowledge.create_knowledge_base(tenant.id, "notes", model)
    kb_second = knowledge.create_knowledge_base(tenant.id, "second", model)
    kb_other = knowledge.create_knowledge_base(other.id, "notes", model)
    kb_zh = knowledge.create_knowledge_base(tenant.id, "中文", model)
    kb_faq = knowledge.create_knowledge_base(tenant.id, "faq", model)
    documents: dict[str, Document] = {}
    results = ingest.ingest_many(
        kb,
        [
            DocumentInput(content=markdown(SEARCH_NOTES), title="Search notes", filename="search.md", tags=["search"]),
            DocumentInput(content=markdown(dict([BAKING])), title="Kitchen", filename="kitchen.md", tags=["food"]),
        ],
    )
    documents["search"], documents["kitchen"] = results[0].document, results[1].document
    documents["tides"] = ingest.ingest_text(kb_second, content=markdown(dict([TIDES])), title="Tides").document
    # The same passage in another tenant's knowledge base: no scope of the first tenant may reach it.
    documents["stray"] = ingest.ingest_text(kb_other, content=markdown(SEARCH_NOTES), title="Stray notes").document
    documents["zh"] = ingest.ingest_text(kb_zh, content=markdown(dict([CHINESE])), title="索引").document
    documents["zh_other"] = ingest.ingest_text(kb_zh, content=markdown(dict([CHINESE_OTHER])), title="天气").document
    documents["faq"] = ingest.ingest_faq(kb_faq, [FAQ], title="Account FAQ").document
    chunk_of: dict[str, str] = {}
    for name, document in documents.items():
        for chunk in knowledge.chunks_of_document(document.tenant_id, document.id):
            if chunk.searchable:
                # By header (the first document with it wins), and by document and header.
                chunk_of.setdefault(chunk.header or f"{name}:{chunk.chunk_index}", chunk.id)
                chunk_of[f"{name}:{chunk.header}"] = chunk.id
    return Corpus(tenant.id, other.id, kb, kb_second, kb_other, kb_zh, kb_faq, chunk_of, documents)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared_models: Any
) -> Iterator[Backend]:
    from ragline.container import Container

    engine = None
    if request.param == "opensearch":
        from ragline.retrieval.opensearch import KnnMethod, OpenSearchEngine

        live = request.getfixturevalue("opensearch")
        client = request.getfixturevalue("opensearch_client")
        engine = OpenSearchEngine(
            client, request.getfixturevalue("opensearch_index"), method=KnnMethod(live.knn_engine)
        )
    data_dir: Path = tmp_path_factory.mktemp(f"contract-{request.param}")
    container = Container.embedded(Settings(data_dir=data_dir), models=shared_models, engine=engine)
    try:
        yield Backend(request.param, container, container.engine, _ingest(container))
    finally:
        container.close()


def ids(results: list[SearchResult]) -> list[str]:
    return [r.id for r in results]


# Hybrid search -----------------------------------------------------------------------------------------
def test_hybrid_search_ranks_the_passage_that_answers_first(backend: Backend) -> None:
    c = backend.corpus
    results = backend.hybrid("how do nearest neighbour graphs find similar vectors")
    assert results[0].id == c.chunk_of["Vector search"]
    assert results[0].knowledge_title == "Search notes"
    assert results[0].knowledge_filename == "search.md"
    assert results[0].header == "Vector search"
    assert "HNSW" in results[0].content
    assert results[0].vector_score is not None
    assert results[0].keyword_score is not None
    assert {r.knowledge_base_id for r in results} == {c.kb.id}


def test_vector_scores_are_cosine_similarities(backend: Backend) -> None:
    query = "what makes the tide rise and fall"
    c = backend.corpus
    hits = backend.engine.vector_search(backend.params(query, [c.kb_second.id]), top_k=3)
    assert hits[0].id == c.chunk_of["Oceans"]
    passage = backend.embedder.embed_documents([embedding_text("Tides", *TIDES)])[0]
    assert hits[0].score == pytest.approx(float(np.dot(passage, backend.embedder.embed_query(query))), abs=1e-3)


def test_keyword_search_reads_headers_and_stems_words(backend: Backend) -> None:
    c = backend.corpus
    assert ids(backend.engine.keyword_search(backend.params("baking"), top_k=5)) == [c.chunk_of["Baking"]]
    # "ranks" and "ranking", "documents" and "document": the same stem on both sides.
    hits = backend.engine.keyword_search(backend.params("ranking a document"), top_k=5)
    assert hits[0].id == c.chunk_of["Keyword search"]
    assert all(h.score > 0 for h in hits)


def test_results_carry_the_chunk_and_its_neighbours(backend: Backend) -> None:
    c = backend.corpus
    stored = {ch.id: ch for ch in backend.container.knowledge.chunks_of_document(c.tenant, c.documents["search"].id)}
    for hit in backend.engine.keyword_search(backend.params("search"), top_k=5):
        chunk = stored[hit.id]
        assert (hit.knowledge_id, hit.chunk_index, hit.chunk_type) == (
            chunk.knowledge_id,
            chunk.chunk_index,
            chunk.chunk_type,
        )
        assert (hit.parent_chunk_id, hit.pre_chunk_id, hit.next_chunk_id) == (
            chunk.parent_chunk_id,
            chunk.pre_chunk_id,
            chunk.next_chunk_id,
        )
        assert (hit.start_at, hit.end_at) == (chunk.start_at, chunk.end_at)
        assert hit.chunk_metadata == chunk.metadata


# Thresholds --------------------------------------------------------------------------------------------
def test_a_vector_threshold_above_every_cosine_leaves_keyword_hits_only(backend: Backend) -> None:
    query = "nearest neighbour vectors"
    best = backend.engine.vector_search(backend.params(query), top_k=1)[0].score
    results = backend.hybrid(query, vector_threshold=best + 0.01)
    assert results, "the keyword list still answers"
    assert all(r.vector_score is None for r in results)
    just_below = backend.hybrid(query, vector_threshold=best - 0.001)
    assert any(r.vector_score is not None and r.vector_score >= best - 0.001 for r in just_below)


def test_a_keyword_threshold_drops_the_weaker_keyword_hits(backend: Backend) -> None:
    query = "search documents by frequency"
    unfiltered = backend.hybrid(query, vector_enabled=False)
    assert len(unfiltered) >= 2
    cut = (unfiltered[0].keyword_score or 0) - 1e-6
    filtered = backend.hybrid(query, vector_enabled=False, keyword_threshold=cut)
    assert ids(filtered) == [unfiltered[0].id]


# Scope -------------------------------------------------------------------------------------------------
def test_several_knowledge_bases_are_searched_together_and_only_those(backend: Backend) -> None:
    c = backend.corpus
    both = backend.hybrid("moon tides and bread dough", [c.kb.id, c.kb_second.id], match_count=10)
    assert {c.chunk_of["Oceans"], c.chunk_of["Baking"]} <= set(ids(both))
    assert {r.knowledge_base_id for r in both} == {c.kb.id, c.kb_second.id}
    only_first = backend.hybrid("moon tides and bread dough", [c.kb.id], match_count=10)
    assert c.chunk_of["Oceans"] not in ids(only_first)


def test_another_tenants_knowledge_base_finds_nothing(backend: Backend) -> None:
    c = backend.corpus
    query = "how do nearest neighbour graphs find similar vectors"
    assert backend.hybrid(query, [c.kb_other_tenant.id]) == []
    mixed = backend.hybrid(query, [c.kb.id, c.kb_other_tenant.id], match_count=10)
    assert mixed
    assert {r.knowledge_base_id for r in mixed} == {c.kb.id}
    # Its own tenant finds it.
    own = backend.hybrid(query, [c.kb_other_tenant.id], tenant_id=c.other_tenant)
    assert own
    assert {r.knowledge_base_id for r in own} == {c.kb_other_tenant.id}


def test_documents_narrow_the_scope(backend: Backend) -> None:
    c = backend.corpus
    results = backend.hybrid("bread and vectors", knowledge_ids=[c.documents["kitchen"].id], match_count=10)
    assert ids(results) == [c.chunk_of["Baking"]]


def test_tags_narrow_the_knowledge_search(backend: Backend) -> None:
    c = backend.corpus
    body = {"query": "how long to knead bread dough", "knowledge_base_ids": [c.kb.id], "top_k": 5}
    assert backend.search(c.tenant, **body)[0].id == c.chunk_of["Baking"]
    tagged = backend.search(c.tenant, **body, tags=["search"])
    assert tagged
    assert {r.knowledge_id for r in tagged} == {c.documents["search"].id}


def test_parent_chunks_are_never_returned(backend: Backend) -> None:
    c = backend.corpus
    long_text = "\n\n".join(f"Paragraph {i} about lighthouses and their keepers on rocky coasts." for i in range(40))
    document = backend.container.ingest.ingest_text(
        c.kb_second, content=f"## Lighthouses\n\n{long_text}", title="Coast"
    )
    stored = backend.container.knowledge.chunks_of_document(c.tenant, document.document.id)
    parents = {ch.id for ch in stored if not ch.searchable}
    assert parents, "a long section has a parent chunk"
    hits = backend.hybrid("lighthouse keepers on rocky coasts", [c.kb_second.id], match_count=50)
    assert hits
    assert not parents & set(ids(hits))
    backend.delete(document.document)


# Embedding models --------------------------------------------------------------------------------------
def test_vectors_of_another_embedding_model_are_never_compared(backend: Backend) -> None:
    """A knowledge base keeps one model; vectors another model wrote (e.g. during a re-embedding) live in
    another space, so a query vector never meets them, though keyword search still reads the text."""
    c = backend.corpus
    other_model = "test:another-384-model"
    kb = backend.container.knowledge.create_knowledge_base(c.tenant, "other-model", other_model)
    document = Document(id="doc-other-model", tenant_id=c.tenant, knowledge_base_id=kb.id, title="Tides again")
    chunk = Chunk(
        id="chunk-other-model",
        tenant_id=c.tenant,
        knowledge_base_id=kb.id,
        knowledge_id=document.id,
        chunk_index=0,
        header=TIDES[0],
        content=TIDES[1],
    )
    vectors = backend.embedder.embed_documents([embedding_text(document.title, chunk.header, chunk.content)])
    store_document(backend.container.knowledge, backend.engine, kb, document, [chunk], [chunk], vectors)
    query = "what makes the tide rise and fall"
    assert backend.engine.vector_search(backend.params(query, [kb.id]), top_k=5) == []
    same_space = backend.engine.vector_search(backend.params(query, [kb.id], embedding_model=other_model), top_k=5)
    assert ids(same_space) == [chunk.id]
    assert ids(backend.engine.keyword_search(backend.params(query, [kb.id]), top_k=5)) == [chunk.id]


# FAQ ---------------------------------------------------------------------------------------------------
def test_an_faq_entry_is_found_by_a_paraphrase_of_its_questions(backend: Backend) -> None:
    c = backend.corpus
    hits = backend.engine.vector_search(backend.params("I can't remember my password", [c.kb_faq.id]), top_k=3)
    assert hits[0].chunk_type == ChunkType.FAQ
    assert hits[0].chunk_metadata["answers"] == FAQ.answers
    assert hits[0].chunk_metadata["negative_questions"] == FAQ.negative_questions
    found = backend.search(c.tenant, query="I can't remember my password", knowledge_base_ids=[c.kb_faq.id])
    assert found[0].chunk_type == ChunkType.FAQ


def test_an_faq_entry_never_answers_its_negative_questions(backend: Backend) -> None:
    c = backend.corpus
    asked = backend.search(c.tenant, query="How do I reset my router?", knowledge_base_ids=[c.kb_faq.id])
    assert all(r.chunk_type != ChunkType.FAQ for r in asked)


# Deletion ----------------------------------------------------------------------------------------------
def test_a_deleted_document_is_no_longer_found(backend: Backend) -> None:
    c = backend.corpus
    text = "## Volcanoes\n\nMagma rises through the crust and erupts as lava from volcanic vents."
    document = backend.container.ingest.ingest_text(c.kb_second, content=text, title="Geology").document
    query = "magma erupting as lava"
    assert backend.hybrid(query, [c.kb_second.id])[0].knowledge_id == document.id
    backend.delete(document)
    gone = [*backend.engine.vector_search(backend.params(query, [c.kb_second.id]), top_k=10)]
    gone += backend.engine.keyword_search(backend.params(query, [c.kb_second.id]), top_k=10)
    assert document.id not in {r.knowledge_id for r in gone}


def test_an_accepted_document_is_found_by_keyword_before_its_vectors_exist(backend: Backend) -> None:
    """Ingestion in two steps, as both runtimes run it: accepted (chunks stored, keywords indexed) and found
    by keyword search at once; found by vector search once its vectors are written."""
    c = backend.corpus
    text = "## Lighthouses\n\nThe Fastnet lighthouse stands on a rock eleven kilometres off the coast of Cork."
    accepted = backend.container.ingest.accept_many(c.kb_second, [DocumentInput(content=text, title="Coasts")])[0]
    document = accepted.document
    assert document.status == "pending"
    query = "Fastnet lighthouse"
    params = backend.params(query, [c.kb_second.id])
    keyword = backend.engine.keyword_search(params, top_k=10)
    assert document.id in {r.knowledge_id for r in keyword}
    hit = next(r for r in keyword if r.knowledge_id == document.id)
    assert (hit.knowledge_title, hit.header) == ("Coasts", "Lighthouses")
    assert document.id not in {r.knowledge_id for r in backend.engine.vector_search(params, top_k=10)}
    indexed = backend.container.ingest.index_document(document.tenant_id, document.id)
    assert indexed is not None
    assert indexed.status == "indexed"
    vector = backend.engine.vector_search(backend.params(query, [c.kb_second.id]), top_k=10)
    assert vector[0].knowledge_id == document.id
    assert (vector[0].knowledge_title, vector[0].header) == ("Coasts", "Lighthouses")
    assert backend.hybrid(query, [c.kb_second.id])[0].knowledge_id == document.id
    backend.delete(document)


def test_a_document_deleted_while_its_vectors_are_computed_stays_deleted(backend: Backend) -> None:
    """The indexing of a document races its deletion (or its parsing again): vectors that arrive after the
    chunks are gone must not bring them back."""
    c = backend.corpus
    text = "## Glaciers\n\nA glacier carves a U-shaped valley as it grinds downhill over centuries."
    document = backend.container.ingest.accept_many(c.kb_second, [DocumentInput(content=text, title="Ice")])[0].document
    chunks = [ch for ch in backend.container.knowledge.chunks_of_document(c.tenant, document.id) if ch.searchable]
    vectors = backend.embedder.embed_documents([embedding_text("Ice", ch.header, ch.content) for ch in chunks])
    backend.delete(document)
    missing = backend.engine.add_vectors(c.kb_second.id, c.kb_second.embedding_model, chunks, vectors)  # type: ignore[attr-defined]
    assert set(missing or []) <= {ch.id for ch in chunks}
    query = "glacier carving a valley"
    found = [*backend.engine.vector_search(backend.params(query, [c.kb_second.id]), top_k=10)]
    found += backend.engine.keyword_search(backend.params(query, [c.kb_second.id]), top_k=10)
    assert document.id not in {r.knowledge_id for r in found}


def _ids(backend: Backend, query: str, kb_id: str) -> set[str]:
    params = backend.params(query, [kb_id])
    return {
        r.id
        for r in [*backend.engine.vector_search(params, top_k=10), *backend.engine.keyword_search(params, top_k=10)]
    }


def test_an_edited_chunk_is_found_by_its_new_text_only(backend: Backend) -> None:
    c = backend.corpus
    text = "## Rivers\n\nThe Nile flows north through eleven countries into the Mediterranean Sea."
    document = backend.container.ingest.ingest_text(c.kb_second, content=text, title="Rivers").document
    [chunk] = [ch for ch in backend.container.knowledge.chunks_of_document(c.tenant, document.id) if ch.searchable]
    assert chunk.id in _ids(backend, "Nile Mediterranean", c.kb_second.id)
    edited = backend.container.chunk_edits.update(
        c.tenant, chunk.id, content="Glaciers carve fjords as they retreat towards the mountains."
    )
    assert edited is not None
    assert chunk.id in _ids(backend, "glaciers carve fjords", c.kb_second.id)
    assert chunk.id not in {
        r.id for r in backend.engine.keyword_search(backend.params("Nile Mediterranean", [c.kb_second.id]), top_k=10)
    }
    backend.container.chunk_edits.update(c.tenant, chunk.id, enabled=False)
    assert chunk.id not in _ids(backend, "glaciers carve fjords", c.kb_second.id)
    backend.delete(document)


def test_a_deleted_chunk_is_no_longer_found(backend: Backend) -> None:
    c = backend.corpus
    text = "## Deserts\n\nThe Atacama desert is the driest non-polar place on Earth."
    document = backend.container.ingest.ingest_text(c.kb_second, content=text, title="Deserts").document
    [chunk] = [ch for ch in backend.container.knowledge.chunks_of_document(c.tenant, document.id) if ch.searchable]
    assert chunk.id in _ids(backend, "Atacama driest desert", c.kb_second.id)
    assert backend.container.removal.delete_chunk(c.tenant, chunk.id)
    assert chunk.id not in _ids(backend, "Atacama driest desert", c.kb_second.id)
    backend.delete(document)


# Generated questions (ingestion enrichment) ------------------------------------------------------------
def test_generated_questions_find_their_chunk_by_vector_until_its_text_changes(backend: Backend, scripted) -> None:
    from tests.support.scripted_model import Script

    c = backend.corpus
    text = "## Looms\n\nJacquard's loom read punched cards to weave patterns into silk in 1804."
    document = backend.container.ingest.ingest_text(c.kb_second, content=text, title="Looms").document
    [chunk] = [ch for ch in backend.container.knowledge.chunks_of_document(c.tenant, document.id) if ch.searchable]
    question = "Which machine first followed a stored program?"
    close = backend.params(question, [c.kb_second.id], vector_threshold=0.9)

    def near() -> list[SearchResult]:  # an engine may return hits below the threshold: hybrid search drops them
        return [h for h in backend.engine.vector_search(close, 10) if h.score >= close.vector_threshold]

    assert chunk.id not in ids(near())

    # Numbered, repeated and one too many: three questions are kept, in order.
    scripted.questions = Script.answer(f"1. {question}\n2. {question}\n3. What did the loom weave?\n4. When?\n5. Why?")
    try:
        result = asyncio.run(backend.container.enrichment.enrich(c.kb_second, document))
    finally:
        scripted.questions = Script.answer("")
    assert (result.status, result.chunks, result.questions, result.failed_calls) == ("completed", 1, 3, 0)
    [stored] = backend.container.knowledge.chunks(c.tenant, [chunk.id])
    assert [q["question"] for q in stored.metadata["generated_questions"]] == [
        question,
        "What did the loom weave?",
        "When?",
    ]
    hits = near()
    assert ids(hits) == [chunk.id]  # once, scored by its best vector: the question's
    embedder = backend.container.models.embedder(c.kb_second.embedding_model)
    asked = embedder.embed_query(question)
    assert hits[0].score == pytest.approx(float(embed_passages(embedder, [question])[0] @ asked), abs=1e-3)
    assert hits[0].score > close.vector_threshold
    assert hits[0].chunk_metadata["generated_questions"][0]["question"] == question
    # Keyword search reads the passage only: the question's words are not in it.
    assert chunk.id not in ids(backend.engine.keyword_search(backend.params("stored program", [c.kb_second.id]), 10))

    backend.container.chunk_edits.update(c.tenant, chunk.id, content="Jacquard's loom wove silk from punched cards.")
    [edited] = backend.container.knowledge.chunks(c.tenant, [chunk.id])
    assert "generated_questions" not in edited.metadata  # asked of the old text
    assert chunk.id not in ids(near())

    # Asked again, then the document deleted: its question vectors go with it.
    scripted.questions = Script.answer(question)
    try:
        asyncio.run(backend.container.enrichment.enrich(c.kb_second, document))
    finally:
        scripted.questions = Script.answer("")
    assert ids(near()) == [chunk.id]
    backend.delete(document)
    assert near() == []


# Chinese -----------------------------------------------------------------------------------------------
def test_chinese_keyword_search_reads_jieba_words(backend: Backend) -> None:
    c = backend.corpus
    hits = backend.engine.keyword_search(backend.params("倒排索引是什么", [c.kb_zh.id]), top_k=5)
    assert ids(hits) == [c.chunk_of["倒排索引"]]
    assert hits[0].knowledge_title == "索引"
    # A word inside the passage, not at its start, and a word of the title.
    assert ids(backend.engine.keyword_search(backend.params("查询词", [c.kb_zh.id]), top_k=5)) == [
        c.chunk_of["倒排索引"]
    ]
    assert (
        ids(backend.engine.keyword_search(backend.params("北京的天气", [c.kb_zh.id]), top_k=5))[0] == c.chunk_of["天气"]
    )


def test_chinese_questions_find_chinese_passages_through_the_search_path(backend: Backend) -> None:
    c = backend.corpus
    found = backend.search(c.tenant, query="检索时怎么读取文档列表？", knowledge_base_ids=[c.kb_zh.id], top_k=2)
    assert found[0].id == c.chunk_of["倒排索引"]
    weather = backend.search(c.tenant, query="今天北京气温多少度", knowledge_base_ids=[c.kb_zh.id], top_k=2)
    assert weather[0].id == c.chunk_of["天气"]


def test_a_mixed_query_reads_both_scripts(backend: Backend) -> None:
    c = backend.corpus
    hits = backend.engine.keyword_search(backend.params("HNSW 和 倒排索引", [c.kb.id, c.kb_zh.id]), top_k=5)
    assert {c.chunk_of["Vector search"], c.chunk_of["倒排索引"]} <= set(ids(hits))


def test_a_query_of_punctuation_only_finds_nothing(backend: Backend) -> None:
    assert backend.engine.keyword_search(backend.params("?!。，"), top_k=5) == []
