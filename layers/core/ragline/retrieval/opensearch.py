"""The OpenSearch engine: BM25 (English stemming, jieba-segmented Chinese) and HNSW k-NN in one shared index.

It answers the same port as the embedded engine and returns the same result fields, so the seed's
HybridSearch (``hybrid.py``) fuses its lists without knowing which engine produced them. Fusion, thresholds
and pool sizes stay there; this module only translates requests and hits.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from opensearchpy import NotFoundError, OpenSearch, RequestError, helpers

from ragline.retrieval.base import RetrieveParams
from ragline.store.models import Chunk, Document
from ragline.text.segmentation import has_han, segment_for_index
from ragline.types import SearchResult
from ragline.types.search import image_info_of

__all__ = [
    "DEFAULT_KNN_ENGINE",
    "KNN_ENGINES",
    "KnnMethod",
    "OpenSearchEngine",
    "cosine_from_score",
    "index_body",
    "vector_field",
    "zh_search_text",
]

# The k-NN engines a knn_vector field can name. faiss is the default because every managed OpenSearch takes
# it: Amazon OpenSearch Service domains and OpenSearch Serverless vector collections (whose documentation
# lists the Lucene engine as unsupported). A self-run node without the plugin's native libraries (such as
# the tests' node, built from Maven Central's k-NN zip) has Lucene's HNSW only: RAGLINE_OPENSEARCH_KNN_ENGINE.
KNN_ENGINES = ("faiss", "lucene", "nmslib")
DEFAULT_KNN_ENGINE = "faiss"
# Inner product on unit-length vectors is the cosine; every engine supports it (Lucene since OpenSearch 2.13),
# where cosinesimil came to faiss only in 2.19. The engine normalises vectors on both sides.
KNN_SPACE = "innerproduct"
# OpenSearch's own HNSW defaults, written out because a knn_vector mapping cannot change later.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100

# What `content` and `title` read: standard tokens, English stop words, possessives and Porter stemming —
# the counterpart of the embedded engine's FTS5 porter tokenizer and stop-word list.
ENGLISH_ANALYZER = "english"
# Chinese arrives pre-cut into space-separated lower-case words (jieba), so splitting on spaces is all that
# is left to do; the standard tokenizer would break Han text into single characters instead.
SEGMENTED_ANALYZER = "whitespace"

# BM25 field boosts, as the embedded engine's FTS5 column weights (content, title): a title match is strong
# evidence but titles are short.
CONTENT_BOOST = 1.0
TITLE_BOOST = 1.0  # as the embedded engine's BM25 column weights (measured on SciFact)
# A bool query with filters matches on filters alone unless one `should` clause is required.
MIN_SHOULD_MATCH = 1

# Every engine reports an innerproduct hit as ``1 + ip`` when ``ip >= 0`` and ``1 / (1 - ip)`` below: scores
# stay positive and ordered. Hybrid search thresholds and reports cosine similarity, so undo it.
_SCORE_BREAK = 1.0

_WORD = re.compile(r"\w+", re.UNICODE)

# Stored field -> SearchResult field: what a hit carries back. The vector and the segmented copies never
# leave the server.
_RESULT_FIELDS = {
    "id": "id",
    "content": "content",
    "knowledge_id": "knowledge_id",
    "knowledge_base_id": "knowledge_base_id",
    "title": "knowledge_title",
    "knowledge_filename": "knowledge_filename",
    "knowledge_description": "knowledge_description",
    "header": "header",
    "chunk_index": "chunk_index",
    "chunk_type": "chunk_type",
    "parent_chunk_id": "parent_chunk_id",
    "pre_chunk_id": "pre_chunk_id",
    "next_chunk_id": "next_chunk_id",
    "start_at": "start_at",
    "end_at": "end_at",
    "metadata": "chunk_metadata",
}

# A chunk's generated questions are extra OpenSearch documents: a copy of the chunk's stored fields with the
# question's vector, ``_id`` "<chunk id>#q<n>" and this field naming the chunk. Vector search keeps a chunk's
# best document; keyword search reads chunks only (a copy would count its words twice).
QUESTION_OF = "question_of"
# The field is mapped when the first questions are written, so an index without any costs searches nothing.
# Documents a vector search asks for per chunk wanted once it has: the chunk and its questions at the default
# of three per chunk (with more, a chunk whose questions all rank high can crowd out others).
_DOCUMENTS_PER_CHUNK = 4
# How long a process trusts that the index has no question documents before looking again.
_QUESTION_CHECK_S = 60.0

_KEYWORD: dict[str, Any] = {"type": "keyword"}
_STORED_KEYWORD: dict[str, Any] = {"type": "keyword", "index": False}
_STORED_TEXT: dict[str, Any] = {"type": "text", "index": False}
_STORED_INTEGER: dict[str, Any] = {"type": "integer", "index": False}


@dataclass(frozen=True)
class KnnMethod:
    """How vectors are indexed: the HNSW graph of one k-NN engine (see :data:`KNN_ENGINES`)."""

    engine: str = DEFAULT_KNN_ENGINE
    m: int = HNSW_M
    ef_construction: int = HNSW_EF_CONSTRUCTION

    def __post_init__(self) -> None:
        """Refuse an engine OpenSearch's k-NN plugin does not offer."""
        if self.engine not in KNN_ENGINES:
            raise ValueError(f"unknown k-NN engine {self.engine!r}: expected one of {', '.join(KNN_ENGINES)}")

    def field(self, dimensions: int) -> dict[str, Any]:
        """The mapping of a ``knn_vector`` field of ``dimensions`` components with this method."""
        return {
            "type": "knn_vector",
            "dimension": dimensions,
            "method": {
                "name": "hnsw",
                "space_type": KNN_SPACE,
                "engine": self.engine,
                "parameters": {"m": self.m, "ef_construction": self.ef_construction},
            },
        }


def vector_field(dimensions: int) -> str:
    """The field holding ``dimensions``-component vectors.

    Models of different widths share one index, each width in its own field (a knn_vector field has one dimension for
    life).
    """
    return f"vector_{dimensions}"


def index_body(dimensions: int | None, method: KnnMethod | None = None) -> dict[str, Any]:
    """Settings and mapping of the chunk index.

    First created for vectors of ``dimensions`` components (None: keywords first, no vector field yet).

    ``dynamic: strict`` makes a misspelt field fail the bulk request instead of silently creating an
    unsearchable one; a vector field of another width is added with :meth:`OpenSearchEngine.ensure_index`.
    """
    method = method or KnnMethod()
    vectors = {vector_field(dimensions): method.field(dimensions)} if dimensions else {}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                # Filters and identity.
                "id": _KEYWORD,
                "tenant_id": _KEYWORD,
                "knowledge_id": _KEYWORD,
                "knowledge_base_id": _KEYWORD,
                "chunk_type": _KEYWORD,
                "embedding_model": _KEYWORD,
                "enabled": {"type": "boolean"},
                "searchable": {"type": "boolean"},
                # Searched text. The section header adds the words a passage leaves implicit, so it is
                # searched as part of `content` (as the embedded engine indexes it), yet returned apart.
                "content": {"type": "text", "analyzer": ENGLISH_ANALYZER},
                "header": {"type": "text", "analyzer": ENGLISH_ANALYZER, "copy_to": ["content"]},
                "title": {"type": "text", "analyzer": ENGLISH_ANALYZER},
                "content_zh": {"type": "text", "analyzer": SEGMENTED_ANALYZER},
                "title_zh": {"type": "text", "analyzer": SEGMENTED_ANALYZER},
                **vectors,
                # Stored only: what a SearchResult carries back.
                "knowledge_filename": _STORED_KEYWORD,
                "knowledge_description": _STORED_TEXT,
                "chunk_index": _STORED_INTEGER,
                "parent_chunk_id": _STORED_KEYWORD,
                "pre_chunk_id": _STORED_KEYWORD,
                "next_chunk_id": _STORED_KEYWORD,
                "start_at": _STORED_INTEGER,
                "end_at": _STORED_INTEGER,
                # Free-form per chunk: kept in _source, never parsed, so its keys cannot grow the mapping.
                "metadata": {"type": "object", "enabled": False},
            },
        },
    }


def zh_search_text(text: str) -> str:
    """Lower-case words of ``text`` with Han runs cut by jieba, space-separated: the segmented fields' form.

    Index and query both go through here, so what the whitespace analyzer splits is the same on both sides;
    punctuation is dropped as FTS5's unicode61 tokenizer drops it.
    """
    return " ".join(word.lower() for word in _WORD.findall(segment_for_index(text)))


def _without_han(text: str) -> str:
    """The words an English analyzer can read: the text itself, or its non-Han words when it has Han.

    Han text is matched through the segmented fields only; the standard tokenizer would match it character
    by character, and every common character would add noise to the score.
    """
    if not has_han(text):
        return text
    return " ".join(_WORD.findall("".join(" " if has_han(ch) else ch for ch in text)))


def cosine_from_score(score: float) -> float:
    """Cosine similarity from an innerproduct hit's score on unit vectors (``1 + ip``, or ``1 / (1 - ip)``)."""
    if score >= _SCORE_BREAK:
        return score - _SCORE_BREAK
    return _SCORE_BREAK - 1.0 / score


def unit(vector: npt.ArrayLike) -> list[float]:
    """The vector scaled to length 1 (a zero vector stays zero), as JSON numbers."""
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    return [float(x) for x in array]


def _index_text(chunk: Chunk) -> str:
    """What the segmented content field reads: the header with the passage, as the embedded engine does."""
    return f"{chunk.header}\n{chunk.content}" if chunk.header else chunk.content


def _metadata_text(chunk: Chunk, key: str) -> str:
    value = chunk.metadata.get(key)
    return value if isinstance(value, str) else ""


class OpenSearchEngine:
    """Keyword and vector retrieval over one OpenSearch index shared by every knowledge base and tenant.

    The client is injected so wiring chooses its authentication (basic, SigV4 for ``es``) and tests their
    server. ``method`` is how a new vector field is indexed. ``refresh`` makes a bulk request wait until its
    chunks are searchable (``refresh=False`` leaves it to the index's refresh interval). Client errors
    propagate, except that a search before anything was ever indexed finds nothing: hybrid search counts a
    failed group as a failed branch.
    """

    engine_name = "opensearch"

    def __init__(
        self, client: OpenSearch, index: str, *, method: KnnMethod | None = None, refresh: bool = True
    ) -> None:
        """An engine over ``index`` through ``client``; ``refresh`` makes writes searchable before they return."""
        self._client = client
        self._index = index
        self._method = method or KnnMethod()
        self._refresh = refresh
        self._lock = threading.Lock()
        self._vector_fields: set[str] = set()
        self._index_exists = False
        self._question_field = False
        self._question_checked_at = -_QUESTION_CHECK_S

    @property
    def index(self) -> str:
        """The name of the chunk index."""
        return self._index

    # Index ----------------------------------------------------------------------------------------------
    def ensure_index(self, dimensions: int | None) -> None:
        """Create the index, or add the vector field for ``dimensions``-component vectors, unless it exists.

        Create the index, or add the vector field for ``dimensions``-component vectors, unless it exists (None: the
        index alone, for chunks indexed by keyword before their vectors).
        """
        field = vector_field(dimensions) if dimensions else ""
        with self._lock:
            if field in self._vector_fields or (not field and self._index_exists):
                return
        created = False
        if not self._client.indices.exists(index=self._index):
            try:
                self._client.indices.create(index=self._index, body=index_body(dimensions, self._method))
                created = True
            except RequestError as error:
                # Another process created it between our check and our request: the index is there.
                if error.error != "resource_already_exists_exception":
                    raise
        if field and not created and field not in self._mapped_vector_fields():
            self._client.indices.put_mapping(
                index=self._index, body={"properties": {field: self._method.field(dimensions or 0)}}
            )
        with self._lock:
            self._index_exists = True
            if field:
                self._vector_fields.add(field)
            if created:
                self._question_checked_at = time.monotonic()  # a new index holds no questions

    def _mapped_vector_fields(self) -> set[str]:
        """The knn_vector fields the index has now (none when there is no index yet)."""
        try:
            mapping = self._client.indices.get_mapping(index=self._index)
        except NotFoundError:
            return set()
        fields: set[str] = set()
        questions = False
        for entry in mapping.values():
            properties = entry.get("mappings", {}).get("properties", {})
            fields.update(name for name, spec in properties.items() if spec.get("type") == "knn_vector")
            questions = questions or QUESTION_OF in properties
        with self._lock:
            self._vector_fields.update(fields)
            self._question_field = self._question_field or questions
            self._question_checked_at = time.monotonic()
        return fields

    def index_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """One document per searchable chunk with the vector of the same row of ``vectors``.

        ``document`` supplies the title, filename and description shown with every hit; callers that do not
        pass it get them from ``chunk.metadata`` (keys ``title``, ``filename``, ``description``). With
        ``refresh`` the bulk request waits for a refresh, so a search right after it sees the chunks.
        """
        searchable = [c for c in chunks if c.searchable]
        if len(searchable) != len(vectors):
            raise ValueError(f"{len(searchable)} searchable chunks but {len(vectors)} vectors")
        if not searchable:
            return
        dimensions = int(vectors.shape[1])
        self.ensure_index(dimensions)
        actions = self._actions(knowledge_base_id, embedding_model, searchable, vectors, document)
        helpers.bulk(self._client, actions, refresh="wait_for" if self._refresh else "false")

    def _actions(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        document: Document | None,
    ) -> Iterator[dict[str, Any]]:
        for chunk, vector in zip(chunks, vectors, strict=True):
            yield {
                "_op_type": "index",
                "_index": self._index,
                "_id": chunk.id,
                "_source": self._source(knowledge_base_id, embedding_model, chunk, vector, document),
            }

    @staticmethod
    def _source(
        knowledge_base_id: str,
        embedding_model: str,
        chunk: Chunk,
        vector: npt.NDArray[np.float32] | None,
        document: Document | None,
    ) -> dict[str, Any]:
        if document is not None:
            title, filename, description = document.title, document.filename, document.description
        else:
            title = _metadata_text(chunk, "title")
            filename = _metadata_text(chunk, "filename")
            description = _metadata_text(chunk, "description")
        source: dict[str, Any] = {
            "id": chunk.id,
            "tenant_id": chunk.tenant_id,
            "knowledge_id": chunk.knowledge_id,
            "knowledge_base_id": knowledge_base_id,
            "chunk_type": chunk.chunk_type,
            "embedding_model": embedding_model,
            # A disabled document hides its chunks, as the embedded engine's join on documents does.
            "enabled": chunk.enabled and (document is None or document.enabled),
            "searchable": chunk.searchable,
            "content": chunk.content,
            "header": chunk.header,
            "title": title,
            "knowledge_filename": filename,
            "knowledge_description": description,
            "chunk_index": chunk.chunk_index,
            "parent_chunk_id": chunk.parent_chunk_id,
            "pre_chunk_id": chunk.pre_chunk_id,
            "next_chunk_id": chunk.next_chunk_id,
            "start_at": chunk.start_at,
            "end_at": chunk.end_at,
            "metadata": chunk.metadata,
        }
        if vector is not None:
            source[vector_field(len(vector))] = unit(vector)
        index_text = _index_text(chunk)
        if has_han(index_text):
            source["content_zh"] = zh_search_text(index_text)
        if has_han(title):
            source["title_zh"] = zh_search_text(title)
        return source

    def index_keywords(
        self, knowledge_base_id: str, chunks: Sequence[Chunk], *, document: Document | None = None
    ) -> None:
        """The searchable ``chunks`` of a document just accepted, indexed without vectors.

        The searchable ``chunks`` of a document just accepted, without vectors: found by keyword search at once (the
        bulk request waits for a refresh unless ``refresh`` is off), by vector search once :meth:`add_vectors` has given
        them theirs.
        """
        searchable = [c for c in chunks if c.searchable]
        if not searchable:
            return
        self.ensure_index(None)
        model = document.embedding_model if document is not None else ""
        actions = (
            {
                "_op_type": "index",
                "_index": self._index,
                "_id": chunk.id,
                "_source": self._source(knowledge_base_id, model, chunk, None, document),
            }
            for chunk in searchable
        )
        helpers.bulk(self._client, actions, refresh="wait_for" if self._refresh else "false")

    def add_vectors(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
    ) -> list[str]:
        """Write vectors into chunks already indexed by :meth:`index_keywords`.

        Vectors of chunks indexed by :meth:`index_keywords` (row ``i`` for ``chunks[i]``), written into their OpenSearch
        documents; writing a chunk's vector again replaces it. Returns the ids of the chunks the index does not hold:
        never created there by an upsert, since a chunk deleted while its vector was being computed (its document
        deleted or parsed again) must stay deleted.
        """
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if not len(chunks):
            return []
        self.ensure_index(int(vectors.shape[1]))
        field = vector_field(int(vectors.shape[1]))
        actions = (
            {
                "_op_type": "update",
                "_index": self._index,
                "_id": chunk.id,
                "doc": {field: unit(vector), "embedding_model": embedding_model},
            }
            for chunk, vector in zip(chunks, vectors, strict=True)
        )
        _, errors = helpers.bulk(
            self._client, actions, refresh="wait_for" if self._refresh else "false", raise_on_error=False
        )
        missing: list[str] = []
        for error in errors:
            failure = error.get("update", {})
            if failure.get("status") != 404:
                raise RuntimeError(f"OpenSearch refused a vector: {failure.get('error')}")
            missing.append(str(failure.get("_id")))
        return missing

    def index_questions(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunk: Chunk,
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """The vectors of the questions generated for ``chunk``, in place of any it had.

        Row ``i`` is its ``i``-th question (see :data:`QUESTION_OF`).
        """
        self._delete_questions([chunk.id])
        if not len(vectors):
            return
        self.ensure_index(int(vectors.shape[1]))
        self._ensure_question_field()
        actions = []
        for position, vector in enumerate(vectors):
            source = self._source(knowledge_base_id, embedding_model, chunk, vector, document)
            source[QUESTION_OF] = chunk.id
            source.pop("content_zh", None)
            source.pop("title_zh", None)
            actions.append(
                {"_op_type": "index", "_index": self._index, "_id": f"{chunk.id}#q{position}", "_source": source}
            )
        helpers.bulk(self._client, actions, refresh="wait_for" if self._refresh else "false")

    def _ensure_question_field(self) -> None:
        """An index created before questions existed gets their field (``dynamic: strict`` refuses it)."""
        with self._lock:
            if self._question_field:
                return
        self._client.indices.put_mapping(index=self._index, body={"properties": {QUESTION_OF: _KEYWORD}})
        with self._lock:
            self._question_field = True

    def _delete_questions(self, chunk_ids: Sequence[str]) -> int:
        if not chunk_ids:
            return 0
        return self._delete_where({"terms": {QUESTION_OF: list(chunk_ids)}})

    def _delete_where(self, query: dict[str, Any]) -> int:
        """Delete the documents ``query`` matches; how many went (none when nothing was ever indexed).

        Refreshes so they stop matching at once; ``conflicts=proceed`` lets a concurrent re-index win rather
        than fail the deletion.
        """
        try:
            response = self._client.delete_by_query(
                index=self._index, body={"query": query}, params={"refresh": "true", "conflicts": "proceed"}
            )
        except NotFoundError:
            return 0
        return int(response.get("deleted", 0))

    def reindex_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """Indexing a chunk again replaces it (its OpenSearch document id is the chunk id).

        Its generated questions were asked of the old text and go.
        """
        self._delete_questions([c.id for c in chunks])
        self.index_chunks(knowledge_base_id, embedding_model, chunks, vectors, document=document)

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """Remove these chunks and their question documents; returns how many chunks were deleted.

        Refreshed so they stop matching at once.
        """
        if not chunk_ids:
            return 0
        self._delete_questions(chunk_ids)
        return self._delete_where({"ids": {"values": list(chunk_ids)}})

    def delete_document(self, knowledge_id: str) -> int:
        """Remove every chunk of one document, and its chunks' question documents; returns how many went."""
        return self._delete_where({"term": {"knowledge_id": knowledge_id}})

    # Search ---------------------------------------------------------------------------------------------
    def vector_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The ``top_k`` nearest chunks by cosine, within the filters and the query's embedding space.

        Vectors of another embedding model live in another space; their cosines mean nothing, so the model
        is a filter, never a preference. A width no chunk was indexed with has no field yet: no hits.
        """
        if params.query_embedding is None or not params.knowledge_base_ids or top_k <= 0:
            return []
        vector = unit(params.query_embedding)
        field = vector_field(len(vector))
        with self._lock:
            known = field in self._vector_fields
        if not known and field not in self._mapped_vector_fields():
            return []
        filters = [*self._filters(params), {"term": {"embedding_model": params.embedding_model}}]
        # A chunk may come back once for its text and once per generated question: ask for enough documents
        # to keep top_k distinct chunks, each scored by its best document.
        k = top_k * _DOCUMENTS_PER_CHUNK if self._has_questions() else top_k
        body = {
            "size": k,
            "_source": {"includes": list(_RESULT_FIELDS)},
            "query": {"knn": {field: {"vector": vector, "k": k, "filter": {"bool": {"filter": filters}}}}},
        }
        response = self._search(body)
        results: dict[str, SearchResult] = {}
        for hit in _hits(response):
            result = self._result(hit, cosine_from_score(float(hit["_score"])))
            results.setdefault(result.id, result)
        return list(results.values())[:top_k]

    def _has_questions(self) -> bool:
        """Whether the index has the question field (mapped once any process wrote the first questions).

        Until then a vector search asks for top_k documents only.
        """
        with self._lock:
            if self._question_field:
                return True
            if time.monotonic() - self._question_checked_at < _QUESTION_CHECK_S:
                return False
        self._mapped_vector_fields()  # records whether the question field is mapped
        with self._lock:
            return self._question_field

    def keyword_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """BM25 over content and title, with their segmented copies when the query has Han characters.

        Scores are raw BM25 (fusion normalises them). The embedding model is not a filter here: keyword hits
        do not depend on the vector space, and the embedded engine does not filter them either.
        """
        if not params.query.strip() or not params.knowledge_base_ids or top_k <= 0:
            return []
        should = self._keyword_clauses(params.query)
        if not should:
            return []
        body = {
            "size": top_k,
            "_source": {"includes": list(_RESULT_FIELDS)},
            "query": {
                "bool": {
                    "should": should,
                    "minimum_should_match": MIN_SHOULD_MATCH,
                    "filter": self._filters(params),
                    "must_not": [{"exists": {"field": QUESTION_OF}}],
                }
            },
        }
        response = self._search(body)
        return [self._result(hit, float(hit["_score"])) for hit in _hits(response)]

    def _search(self, body: dict[str, Any]) -> Mapping[str, Any]:
        try:
            response: Mapping[str, Any] = self._client.search(index=self._index, body=body)
        except NotFoundError as error:
            if error.error != "index_not_found_exception":
                raise
            return {}
        return response

    @staticmethod
    def _keyword_clauses(query: str) -> list[dict[str, Any]]:
        clauses: list[dict[str, Any]] = []
        english = _without_han(query)
        if _WORD.search(english):
            clauses.append({"match": {"content": {"query": english, "boost": CONTENT_BOOST}}})
            clauses.append({"match": {"title": {"query": english, "boost": TITLE_BOOST}}})
        if has_han(query):
            segmented = zh_search_text(query)
            clauses.append({"match": {"content_zh": {"query": segmented, "boost": CONTENT_BOOST}}})
            clauses.append({"match": {"title_zh": {"query": segmented, "boost": TITLE_BOOST}}})
        return clauses

    @staticmethod
    def _filters(params: RetrieveParams) -> list[dict[str, Any]]:
        filters: list[dict[str, Any]] = [
            {"terms": {"knowledge_base_id": list(params.knowledge_base_ids)}},
            {"term": {"enabled": True}},
            {"term": {"searchable": True}},
        ]
        if params.tenant_id:
            # The index is shared by every tenant: a knowledge base id from another tenant finds nothing.
            filters.append({"term": {"tenant_id": params.tenant_id}})
        if params.knowledge_ids:
            filters.append({"terms": {"knowledge_id": list(params.knowledge_ids)}})
        return filters

    # Results --------------------------------------------------------------------------------------------
    @staticmethod
    def _result(hit: Mapping[str, Any], score: float) -> SearchResult:
        """A SearchResult with the fields the embedded engine fills; absent ones keep SearchResult's defaults."""
        source: Mapping[str, Any] = hit.get("_source") or {}
        fields = {result_field: source[field] for field, result_field in _RESULT_FIELDS.items() if field in source}
        fields.setdefault("id", hit["_id"])
        fields["chunk_metadata"] = dict(fields.get("chunk_metadata") or {})
        fields["image_info"] = image_info_of(fields["chunk_metadata"])
        return SearchResult(**fields, score=score)


def _hits(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The hits in the server's order, which is best first."""
    hits: list[Mapping[str, Any]] = response.get("hits", {}).get("hits", [])
    return hits
