"""OpenSearchEngine against a recording fake connection: the exact requests sent and the hits read back.

What the engine finds is proven on a real OpenSearch node by tests/integration/test_engine_contract.py; this
file pins what that node cannot show: the default (faiss) mapping, request shapes, error handling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from opensearchpy import Connection, OpenSearch, TransportError
from opensearchpy.helpers import BulkIndexError

from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.opensearch import (
    KnnMethod,
    OpenSearchEngine,
    cosine_from_score,
    index_body,
    zh_search_text,
)
from ragline.store.models import Chunk, Document
from ragline.types import SearchResult

INDEX = "ragline-chunks"
RESULT_FIELDS = [
    "id",
    "content",
    "knowledge_id",
    "knowledge_base_id",
    "title",
    "knowledge_filename",
    "knowledge_description",
    "header",
    "chunk_index",
    "chunk_type",
    "parent_chunk_id",
    "pre_chunk_id",
    "next_chunk_id",
    "start_at",
    "end_at",
    "metadata",
]


# The fake wire -----------------------------------------------------------------------------------------
@dataclass
class Sent:
    method: str
    path: str
    params: dict[str, Any]
    body: bytes | None

    def json(self) -> Any:
        assert self.body is not None
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        assert self.body is not None
        text = self.body.decode("utf-8")
        assert text.endswith("\n")
        return [json.loads(line) for line in text.splitlines()]


Reply = tuple[int, Any]


@dataclass
class Wire:
    """What the fake server received, and how it answers: queued replies first, then a default per path."""

    sent: list[Sent] = field(default_factory=list)
    queued: list[Reply] = field(default_factory=list)
    index_exists: bool = False
    # The knn_vector fields the index's mapping has.
    vector_fields: set[str] = field(default_factory=lambda: {"vector_3"})

    def answer(self, request: Sent) -> Reply:
        if self.queued:
            return self.queued.pop(0)
        if request.method == "HEAD":
            return (200 if self.index_exists else 404), None
        if request.path.endswith("/_mapping"):
            if request.method == "GET":
                properties = {name: {"type": "knn_vector"} for name in self.vector_fields}
                return 200, {INDEX: {"mappings": {"properties": {"id": {"type": "keyword"}, **properties}}}}
            return 200, {"acknowledged": True}
        if request.path.endswith("/_bulk"):
            actions = request.ndjson()[::2]
            items = [{"index": {"_id": a["index"]["_id"], "status": 201}} for a in actions]
            return 200, {"took": 1, "errors": False, "items": items}
        if request.method == "PUT":
            return 200, {"acknowledged": True, "index": INDEX}
        return 200, {"hits": {"hits": []}}


class RecordingConnection(Connection):
    """An opensearch-py Connection that records every request and never opens a socket."""

    def __init__(self, wire: Wire, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wire = wire

    def perform_request(
        self,
        method: str,
        url: str,
        params: Any = None,
        body: bytes | None = None,
        timeout: Any = None,
        ignore: Any = (),
        headers: Any = None,
    ) -> Any:
        # opensearch-py escapes some query parameters to bytes; the server sees text either way.
        decoded = {k: v.decode() if isinstance(v, bytes) else v for k, v in (params or {}).items()}
        request = Sent(method, url, decoded, body)
        self.wire.sent.append(request)
        status, payload = self.wire.answer(request)
        raw = "" if payload is None else json.dumps(payload)
        if not 200 <= status < 300 and status not in ignore:
            self._raise_error(status, raw, "application/json")
        return status, {"content-type": "application/json"}, raw


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
def engine(wire: Wire) -> OpenSearchEngine:
    client = OpenSearch(hosts=[{"host": "fake", "port": 9200}], connection_class=RecordingConnection, wire=wire)
    return OpenSearchEngine(client, INDEX)


def chunk(id: str, content: str, **kwargs: Any) -> Chunk:
    values: dict[str, Any] = {
        "id": id,
        "tenant_id": "t-1",
        "knowledge_base_id": "kb-1",
        "knowledge_id": "doc-1",
        "chunk_index": 0,
        "content": content,
    }
    values.update(kwargs)
    return Chunk(**values)


def hit(id: str, score: float, **source: Any) -> dict[str, Any]:
    return {"_index": INDEX, "_id": id, "_score": score, "_source": {"id": id, **source}}


def search_reply(*hits: dict[str, Any]) -> Reply:
    return 200, {"took": 1, "timed_out": False, "hits": {"total": {"value": len(hits)}, "hits": list(hits)}}


def params(**kwargs: Any) -> RetrieveParams:
    values: dict[str, Any] = {
        "query": "vector databases",
        "knowledge_base_ids": ["kb-1", "kb-2"],
        "query_embedding": np.array([0.5, -0.25, 0.0], dtype=np.float32),
        "embedding_model": "local:all-MiniLM-L6-v2-int8",
    }
    values.update(kwargs)
    return RetrieveParams(**values)


BASE_FILTERS = [
    {"terms": {"knowledge_base_id": ["kb-1", "kb-2"]}},
    {"term": {"enabled": True}},
    {"term": {"searchable": True}},
]
UNIT_QUERY = [0.894427, -0.447214, 0.0]  # the query vector [0.5, -0.25, 0] at length 1


# ensure_index ------------------------------------------------------------------------------------------
def test_ensure_index_creates_the_mapping_when_missing(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.ensure_index(384)

    head, put = wire.sent
    assert (head.method, head.path) == ("HEAD", f"/{INDEX}")
    assert (put.method, put.path) == ("PUT", f"/{INDEX}")
    assert put.json() == {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "id": {"type": "keyword"},
                "tenant_id": {"type": "keyword"},
                "knowledge_id": {"type": "keyword"},
                "knowledge_base_id": {"type": "keyword"},
                "chunk_type": {"type": "keyword"},
                "embedding_model": {"type": "keyword"},
                "enabled": {"type": "boolean"},
                "searchable": {"type": "boolean"},
                "content": {"type": "text", "analyzer": "english"},
                "header": {"type": "text", "analyzer": "english", "copy_to": ["content"]},
                "title": {"type": "text", "analyzer": "english"},
                "content_zh": {"type": "text", "analyzer": "whitespace"},
                "title_zh": {"type": "text", "analyzer": "whitespace"},
                "vector_384": {
                    "type": "knn_vector",
                    "dimension": 384,
                    "method": {
                        "name": "hnsw",
                        "space_type": "innerproduct",
                        "engine": "faiss",
                        "parameters": {"m": 16, "ef_construction": 100},
                    },
                },
                "knowledge_filename": {"type": "keyword", "index": False},
                "knowledge_description": {"type": "text", "index": False},
                "chunk_index": {"type": "integer", "index": False},
                "parent_chunk_id": {"type": "keyword", "index": False},
                "pre_chunk_id": {"type": "keyword", "index": False},
                "next_chunk_id": {"type": "keyword", "index": False},
                "start_at": {"type": "integer", "index": False},
                "end_at": {"type": "integer", "index": False},
                "metadata": {"type": "object", "enabled": False},
            },
        },
    }
    assert index_body(384) == put.json()
    engine.ensure_index(384)
    assert len(wire.sent) == 2  # known from now on


def test_the_knn_engine_is_configurable_and_checked() -> None:
    lucene = index_body(384, KnnMethod("lucene"))["mappings"]["properties"]["vector_384"]["method"]
    assert (lucene["engine"], lucene["space_type"]) == ("lucene", "innerproduct")
    with pytest.raises(ValueError, match="unknown k-NN engine 'annoy'"):
        KnnMethod("annoy")


def test_ensure_index_leaves_an_existing_index_alone_and_checks_once(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.index_exists = True
    wire.vector_fields = {"vector_384"}
    engine.ensure_index(384)
    engine.ensure_index(384)
    assert [(s.method, s.path) for s in wire.sent] == [("HEAD", f"/{INDEX}"), ("GET", f"/{INDEX}/_mapping")]


def test_a_model_of_another_width_gets_its_own_vector_field(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.index_exists = True
    wire.vector_fields = {"vector_384"}
    engine.ensure_index(1024)
    put = wire.sent[-1]
    assert (put.method, put.path) == ("PUT", f"/{INDEX}/_mapping")
    assert put.json() == {"properties": {"vector_1024": KnnMethod().field(1024)}}


def test_ensure_index_tolerates_a_concurrent_creation(engine: OpenSearchEngine, wire: Wire) -> None:
    already = {"error": {"type": "resource_already_exists_exception", "reason": "exists"}, "status": 400}
    wire.queued = [(404, None), (400, already)]
    wire.vector_fields = {"vector_384"}
    engine.ensure_index(384)
    assert [s.method for s in wire.sent] == ["HEAD", "PUT", "GET"]


def test_ensure_index_propagates_other_creation_errors(engine: OpenSearchEngine, wire: Wire) -> None:
    bad = {"error": {"type": "mapper_parsing_exception", "reason": "no knn plugin"}, "status": 400}
    wire.queued = [(404, None), (400, bad)]
    with pytest.raises(TransportError):
        engine.ensure_index(384)


# index_chunks ------------------------------------------------------------------------------------------
def test_index_chunks_bulk_payload(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.index_exists = True
    parent = chunk("p1", "the whole section", chunk_type="parent_text", searchable=False)
    first = chunk(
        "c1",
        "HNSW graphs index vectors.",
        header="Vector search",
        parent_chunk_id="p1",
        next_chunk_id="c2",
        start_at=0,
        end_at=26,
        metadata={"page": 3},
    )
    second = chunk("c2", "BM25 ranks words.", chunk_index=1, pre_chunk_id="c1", start_at=27, end_at=44)
    vectors = np.array([[0.5, 0.25, 0.0], [0.0, -0.5, 1.0]], dtype=np.float32)
    document = Document(
        id="doc-1",
        tenant_id="t-1",
        knowledge_base_id="kb-1",
        title="Search engines",
        filename="search.md",
        description="How search works",
    )

    engine.index_chunks("kb-1", "local:minilm", [parent, first, second], vectors, document=document)

    head, mapping, bulk = wire.sent
    assert (head.method, mapping.method) == ("HEAD", "GET")
    assert (bulk.method, bulk.path) == ("POST", "/_bulk")
    assert bulk.params == {"refresh": "wait_for"}
    common = {
        "tenant_id": "t-1",
        "knowledge_id": "doc-1",
        "knowledge_base_id": "kb-1",
        "chunk_type": "text",
        "embedding_model": "local:minilm",
        "enabled": True,
        "searchable": True,
        "title": "Search engines",
        "knowledge_filename": "search.md",
        "knowledge_description": "How search works",
    }
    assert bulk.ndjson() == [
        {"index": {"_index": INDEX, "_id": "c1"}},
        {
            **common,
            "id": "c1",
            "content": "HNSW graphs index vectors.",
            "header": "Vector search",
            "chunk_index": 0,
            "parent_chunk_id": "p1",
            "pre_chunk_id": "",
            "next_chunk_id": "c2",
            "start_at": 0,
            "end_at": 26,
            "metadata": {"page": 3},
            "vector_3": pytest.approx([0.894427, 0.447214, 0.0], abs=1e-6),  # stored at length 1
        },
        {"index": {"_index": INDEX, "_id": "c2"}},
        {
            **common,
            "id": "c2",
            "content": "BM25 ranks words.",
            "header": "",
            "chunk_index": 1,
            "parent_chunk_id": "",
            "pre_chunk_id": "c1",
            "next_chunk_id": "",
            "start_at": 27,
            "end_at": 44,
            "metadata": {},
            "vector_3": pytest.approx([0.0, -0.447214, 0.894427], abs=1e-6),
        },
    ]


def test_index_chunks_adds_segmented_chinese_and_reads_title_from_metadata(
    engine: OpenSearchEngine, wire: Wire
) -> None:
    wire.index_exists = True
    zh = chunk("c1", "向量检索使用HNSW图。", header="检索", metadata={"title": "搜索引擎"})
    engine.index_chunks("kb-1", "local:e5", [zh], np.array([[1.0, 0.0, 0.0]], dtype=np.float32))

    _, source = wire.sent[-1].ndjson()
    assert source["title"] == "搜索引擎"
    assert source["content"] == "向量检索使用HNSW图。"  # returned as stored, unsegmented
    assert source["content_zh"] == zh_search_text("检索\n向量检索使用HNSW图。")
    assert source["title_zh"] == zh_search_text("搜索引擎")
    words = source["content_zh"].split(" ")
    assert {"检索", "向量", "hnsw"} <= set(words)  # jieba words, lower-cased
    assert "。" not in source["content_zh"]  # punctuation dropped as FTS5 drops it


def test_english_chunks_carry_no_segmented_fields(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.index_exists = True
    engine.index_chunks("kb-1", "m", [chunk("c1", "plain English")], np.array([[1.0, 0.0, 0.0]], dtype=np.float32))
    _, source = wire.sent[-1].ndjson()
    assert "content_zh" not in source
    assert "title_zh" not in source
    assert source["title"] == ""


def test_index_chunks_creates_the_index_from_the_vector_width(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.index_chunks("kb-1", "m", [chunk("c1", "text")], np.ones((1, 5), dtype=np.float32))
    assert [s.method for s in wire.sent] == ["HEAD", "PUT", "POST"]
    assert wire.sent[1].json()["mappings"]["properties"]["vector_5"]["dimension"] == 5


def test_a_disabled_document_indexes_its_chunks_disabled(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.index_exists = True
    document = Document(id="doc-1", tenant_id="t-1", knowledge_base_id="kb-1", title="T", enabled=False)
    engine.index_chunks("kb-1", "m", [chunk("c1", "x")], np.ones((1, 3), dtype=np.float32), document=document)
    _, source = wire.sent[-1].ndjson()
    assert source["enabled"] is False


def test_index_chunks_rejects_a_vector_count_mismatch(engine: OpenSearchEngine, wire: Wire) -> None:
    with pytest.raises(ValueError, match="2 searchable chunks but 1 vectors"):
        engine.index_chunks("kb-1", "m", [chunk("a", "x"), chunk("b", "y")], np.ones((1, 2), dtype=np.float32))
    assert wire.sent == []


def test_index_chunks_without_searchable_chunks_sends_nothing(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.index_chunks("kb-1", "m", [chunk("p", "x", searchable=False)], np.zeros((0, 2), dtype=np.float32))
    assert wire.sent == []


def test_bulk_item_failures_propagate(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.index_exists = True
    failed = {"index": {"_id": "c1", "status": 400, "error": {"type": "mapper_parsing_exception"}}}
    engine.ensure_index(3)
    wire.queued = [(200, {"took": 1, "errors": True, "items": [failed]})]
    with pytest.raises(BulkIndexError):
        engine.index_chunks("kb-1", "m", [chunk("c1", "x")], np.ones((1, 3), dtype=np.float32))


def test_the_ingest_call_shape_still_works(engine: OpenSearchEngine, wire: Wire) -> None:
    """IngestService calls index_chunks(kb_id, model, children, matrix) positionally, without a document."""
    wire.index_exists = True
    engine.index_chunks("kb-1", "m", [chunk("c1", "x")], np.ones((1, 3), dtype=np.float32))
    assert wire.sent[-1].path == "/_bulk"


def test_without_refresh_a_bulk_request_does_not_wait(wire: Wire) -> None:
    """OpenSearch Serverless refreshes on its own schedule."""
    client = OpenSearch(hosts=[{"host": "fake", "port": 9200}], connection_class=RecordingConnection, wire=wire)
    engine = OpenSearchEngine(client, INDEX, refresh=False)
    wire.index_exists = True
    engine.index_chunks("kb-1", "m", [chunk("c1", "x")], np.ones((1, 3), dtype=np.float32))
    assert wire.sent[-1].params == {"refresh": "false"}


# delete_document ---------------------------------------------------------------------------------------
def test_delete_document_deletes_by_query(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.queued = [(200, {"took": 3, "deleted": 4, "failures": []})]
    assert engine.delete_document("doc-9") == 4
    (request,) = wire.sent
    assert (request.method, request.path) == ("POST", f"/{INDEX}/_delete_by_query")
    assert request.params == {"refresh": "true", "conflicts": "proceed"}
    assert request.json() == {"query": {"term": {"knowledge_id": "doc-9"}}}


def test_deleting_from_an_index_never_created_deletes_nothing(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.queued = [(404, {"error": {"type": "index_not_found_exception"}, "status": 404})]
    assert engine.delete_document("doc-9") == 0


# vector_search -----------------------------------------------------------------------------------------
def test_vector_search_sends_a_filtered_knn_query(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.vector_search(params(tenant_id="t-1"), top_k=50)

    mapping, request = wire.sent
    assert (mapping.method, mapping.path) == ("GET", f"/{INDEX}/_mapping")
    assert (request.method, request.path) == ("POST", f"/{INDEX}/_search")
    assert request.json() == {
        "size": 50,
        "_source": {"includes": RESULT_FIELDS},
        "query": {
            "knn": {
                "vector_3": {
                    "vector": pytest.approx(UNIT_QUERY, abs=1e-6),
                    "k": 50,
                    "filter": {
                        "bool": {
                            "filter": [
                                *BASE_FILTERS,
                                {"term": {"tenant_id": "t-1"}},
                                {"term": {"embedding_model": "local:all-MiniLM-L6-v2-int8"}},
                            ]
                        }
                    },
                }
            }
        },
    }
    engine.vector_search(params(), top_k=5)
    assert [s.method for s in wire.sent] == ["GET", "POST", "POST"]  # the field is known from now on


def test_a_vector_width_never_indexed_finds_nothing(engine: OpenSearchEngine, wire: Wire) -> None:
    assert engine.vector_search(params(query_embedding=np.ones(8, dtype=np.float32)), top_k=5) == []
    assert [s.method for s in wire.sent] == ["GET"]


def test_vector_search_filters_documents_and_refuses_other_embedding_spaces(
    engine: OpenSearchEngine, wire: Wire
) -> None:
    engine.vector_search(params(knowledge_ids=["doc-1", "doc-2"], embedding_model="local:e5"), top_k=5)
    filters = wire.sent[-1].json()["query"]["knn"]["vector_3"]["filter"]["bool"]["filter"]
    assert filters == [
        *BASE_FILTERS,
        {"terms": {"knowledge_id": ["doc-1", "doc-2"]}},
        {"term": {"embedding_model": "local:e5"}},
    ]


def test_vector_search_converts_scores_to_cosine_and_keeps_order(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.ensure_index(3)
    wire.queued = [
        search_reply(
            hit(
                "c1",
                1.9,
                content="HNSW graphs index vectors.",
                knowledge_id="doc-1",
                knowledge_base_id="kb-1",
                title="Search engines",
                knowledge_filename="search.md",
                knowledge_description="How search works",
                header="Vector search",
                chunk_index=2,
                chunk_type="text",
                parent_chunk_id="p1",
                pre_chunk_id="c0",
                next_chunk_id="c2",
                start_at=10,
                end_at=36,
                metadata={"page": 3},
            ),
            hit("c7", 1.0, content="unrelated", knowledge_id="doc-2", knowledge_base_id="kb-2"),
            hit("c9", 2 / 3, content="opposite", knowledge_id="doc-2", knowledge_base_id="kb-2"),
        )
    ]
    results = engine.vector_search(params(), top_k=3)

    assert [r.id for r in results] == ["c1", "c7", "c9"]
    assert [r.score for r in results] == pytest.approx([0.9, 0.0, -0.5])
    assert results[0] == SearchResult(
        id="c1",
        content="HNSW graphs index vectors.",
        knowledge_id="doc-1",
        knowledge_base_id="kb-1",
        knowledge_title="Search engines",
        knowledge_filename="search.md",
        knowledge_description="How search works",
        header="Vector search",
        chunk_index=2,
        chunk_type="text",
        parent_chunk_id="p1",
        pre_chunk_id="c0",
        next_chunk_id="c2",
        start_at=10,
        end_at=36,
        score=results[0].score,
        chunk_metadata={"page": 3},
    )
    # Fields the hit did not carry keep SearchResult's defaults.
    assert results[1].chunk_type == "text"
    assert results[1].knowledge_title == ""
    assert results[1].chunk_metadata == {}


def test_cosine_from_score_inverts_the_innerproduct_score() -> None:
    for cosine in (-1.0, -0.3, 0.0, 0.42, 1.0):
        score = 1 + cosine if cosine >= 0 else 1 / (1 - cosine)
        assert cosine_from_score(score) == pytest.approx(cosine)


def test_vector_search_without_an_embedding_or_bases_sends_nothing(engine: OpenSearchEngine, wire: Wire) -> None:
    assert engine.vector_search(params(query_embedding=None), top_k=5) == []
    assert engine.vector_search(params(knowledge_base_ids=[]), top_k=5) == []
    assert wire.sent == []


def test_search_errors_propagate(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.ensure_index(3)
    wire.queued = [(500, {"error": {"type": "search_phase_execution_exception"}, "status": 500})]
    with pytest.raises(TransportError):
        engine.vector_search(params(), top_k=5)
    wire.queued = [(400, {"error": {"type": "parsing_exception"}, "status": 400})]
    with pytest.raises(TransportError):
        engine.keyword_search(params(), top_k=5)


def test_searching_before_anything_was_indexed_finds_nothing(engine: OpenSearchEngine, wire: Wire) -> None:
    missing = (404, {"error": {"type": "index_not_found_exception"}, "status": 404})
    wire.queued = [missing, missing]
    assert engine.keyword_search(params(), top_k=5) == []
    assert engine.vector_search(params(), top_k=5) == []


# keyword_search ----------------------------------------------------------------------------------------
def test_keyword_search_sends_a_bm25_bool_query(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.keyword_search(params(query="How do vector databases work?"), top_k=20)

    (request,) = wire.sent
    assert (request.method, request.path) == ("POST", f"/{INDEX}/_search")
    assert request.json() == {
        "size": 20,
        "_source": {"includes": RESULT_FIELDS},
        "query": {
            "bool": {
                "should": [
                    {"match": {"content": {"query": "How do vector databases work?", "boost": 1.0}}},
                    {"match": {"title": {"query": "How do vector databases work?", "boost": 1.0}}},
                ],
                "minimum_should_match": 1,
                # No embedding-model filter: keyword hits do not live in a vector space.
                "filter": BASE_FILTERS,
                # A chunk's generated questions are documents of their own: never read by keyword.
                "must_not": [{"exists": {"field": "question_of"}}],
            }
        },
    }


def test_keyword_search_adds_segmented_fields_for_chinese(engine: OpenSearchEngine, wire: Wire) -> None:
    query = "OpenSearch 的向量检索怎么用？"
    engine.keyword_search(params(query=query, knowledge_ids=["doc-1"]), top_k=20)

    body = wire.sent[0].json()["query"]["bool"]
    segmented = zh_search_text(query)
    assert {"opensearch", "向量", "检索"} <= set(segmented.split(" "))
    assert body["should"] == [
        # Han characters are blanked for the English analyzer, which would read them one by one.
        {"match": {"content": {"query": "OpenSearch", "boost": 1.0}}},
        {"match": {"title": {"query": "OpenSearch", "boost": 1.0}}},
        {"match": {"content_zh": {"query": segmented, "boost": 1.0}}},
        {"match": {"title_zh": {"query": segmented, "boost": 1.0}}},
    ]
    assert body["filter"] == [*BASE_FILTERS, {"terms": {"knowledge_id": ["doc-1"]}}]


def test_an_all_chinese_query_searches_only_the_segmented_fields(engine: OpenSearchEngine, wire: Wire) -> None:
    engine.keyword_search(params(query="向量检索"), top_k=5)
    fields = [next(iter(clause["match"])) for clause in wire.sent[0].json()["query"]["bool"]["should"]]
    assert fields == ["content_zh", "title_zh"]


def test_keyword_search_returns_raw_scores_best_first(engine: OpenSearchEngine, wire: Wire) -> None:
    wire.queued = [
        search_reply(
            hit("c3", 12.5, content="BM25 ranks words.", knowledge_id="doc-1", title="Search engines"),
            hit("c1", 3.25, content="HNSW graphs.", knowledge_id="doc-1"),
        )
    ]
    results = engine.keyword_search(params(query="bm25"), top_k=10)
    assert [(r.id, r.score) for r in results] == [("c3", 12.5), ("c1", 3.25)]
    assert results[0].knowledge_title == "Search engines"
    assert results[0].content == "BM25 ranks words."


def test_keyword_search_with_nothing_to_match_sends_nothing(engine: OpenSearchEngine, wire: Wire) -> None:
    assert engine.keyword_search(params(query="   "), top_k=5) == []
    assert engine.keyword_search(params(query="?!"), top_k=5) == []
    assert engine.keyword_search(params(knowledge_base_ids=[]), top_k=5) == []
    assert wire.sent == []


# With hybrid search ------------------------------------------------------------------------------------
def test_hybrid_search_fuses_the_engines_lists(engine: OpenSearchEngine, wire: Wire) -> None:
    from ragline.retrieval.config import RetrievalConfig
    from ragline.retrieval.hybrid import hybrid_search

    engine.ensure_index(3)
    wire.queued = [
        search_reply(hit("a", 1.8, content="a"), hit("b", 1.6, content="b")),
        search_reply(hit("a", 7.0, content="a"), hit("c", 3.5, content="c")),
    ]
    fused = hybrid_search(engine, params(match_count=3), RetrievalConfig())
    assert [r.id for r in fused] == ["a", "b", "c"]
    assert fused[0].score == pytest.approx(1.0)
    assert fused[0].vector_score == pytest.approx(0.8)  # cosine, converted from 0.9
    assert fused[0].keyword_score == pytest.approx(1.0)  # normalised by the list's best
    # pool: max(3 * 5, 50) per base, two bases
    assert [s.json()["size"] for s in wire.sent if s.path.endswith("/_search")] == [100, 100]


# generated questions -----------------------------------------------------------------------------------
def test_question_vectors_are_documents_of_their_own_and_a_search_keeps_each_chunk_once(
    engine: OpenSearchEngine, wire: Wire
) -> None:
    engine.index_questions("kb-1", "m", chunk("c1", "Looms read punched cards."), np.ones((2, 3), dtype=np.float32))
    delete, *_, put_field, bulk = wire.sent
    assert delete.path == f"/{INDEX}/_delete_by_query"
    assert delete.json() == {"query": {"terms": {"question_of": ["c1"]}}}
    assert (put_field.method, put_field.path, put_field.json()) == (
        "PUT",
        f"/{INDEX}/_mapping",
        {"properties": {"question_of": {"type": "keyword"}}},
    )
    actions = bulk.ndjson()
    assert [a["index"]["_id"] for a in actions[::2]] == ["c1#q0", "c1#q1"]
    assert {(s["id"], s["question_of"], s["content"]) for s in actions[1::2]} == {
        ("c1", "c1", "Looms read punched cards.")
    }

    # Four documents per chunk wanted (the chunk and three questions); the chunk once, at its best score.
    wire.sent.clear()
    wire.queued = [
        search_reply(
            hit("c1", 1.9, content="a"),
            hit("c1", 1.5, content="a"),
            hit("c2", 1.4, content="b"),
            hit("c1", 1.2, content="a"),
        )
    ]
    found = engine.vector_search(params(), top_k=5)
    (request,) = wire.sent
    assert request.json()["size"] == 20
    assert [(r.id, round(r.score, 2)) for r in found] == [("c1", 0.9), ("c2", 0.4)]
