"""The OpenSearch engine: BM25 (English stemming, jieba-segmented Chinese) and HNSW k-NN in one index.

It answers the same port as the embedded engine and returns the same result fields, so the seed's
HybridSearch (``hybrid.py``) fuses its lists without knowing which engine produced them. Fusion, thresholds
and pool sizes stay there; this module only translates requests and hits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from opensearchpy import OpenSearch, RequestError, helpers

from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.text import has_han, segment_for_index
from ragline.store.models import Chunk, Document
from ragline.types import SearchResult

__all__ = ["OpenSearchEngine", "cosine_from_score", "index_body", "zh_search_text"]

# Lucene's HNSW rather than faiss: Lucene applies a k-NN query's `filter` while it walks the graph (and falls
# back to exact search when the filter is selective), so a small knowledge base inside a large shared index
# still gets k hits; faiss gained that only in 2.9. Lucene also scores cosine natively (its COSINE similarity
# is (1 + cos) / 2), so converting back to cosine does not depend on the k-NN plugin's version, and an index of
# a few thousand chunks per knowledge base gains nothing from faiss's native speed.
KNN_ENGINE = "lucene"
KNN_SPACE = "cosinesimil"
# OpenSearch's own defaults for Lucene HNSW, written out because a knn_vector mapping cannot change later.
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

# Lucene stores cosinesimil hits as (1 + cos) / 2 (OpenSearch's score = (2 - d) / 2 with d = 1 - cos), which
# maps [-1, 1] onto [0, 1]; hybrid search thresholds and reports cosine similarity, so undo it.
_COSINE_SCALE = 2.0
_COSINE_SHIFT = 1.0

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

_KEYWORD: dict[str, Any] = {"type": "keyword"}
_STORED_KEYWORD: dict[str, Any] = {"type": "keyword", "index": False}
_STORED_TEXT: dict[str, Any] = {"type": "text", "index": False}
_STORED_INTEGER: dict[str, Any] = {"type": "integer", "index": False}


def index_body(dimensions: int) -> dict[str, Any]:
    """Settings and mapping of the chunk index for vectors of ``dimensions`` components.

    ``dynamic: strict`` makes a misspelt field fail the bulk request instead of silently creating an
    unsearchable one.
    """
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
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimensions,
                    "method": {
                        "name": "hnsw",
                        "space_type": KNN_SPACE,
                        "engine": KNN_ENGINE,
                        "parameters": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
                    },
                },
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
    """Cosine similarity from Lucene's cosinesimil score ``(1 + cos) / 2``."""
    return _COSINE_SCALE * score - _COSINE_SHIFT


def _index_text(chunk: Chunk) -> str:
    """What the segmented content field reads: the header with the passage, as the embedded engine does."""
    return f"{chunk.header}\n{chunk.content}" if chunk.header else chunk.content


def _metadata_text(chunk: Chunk, key: str) -> str:
    value = chunk.metadata.get(key)
    return value if isinstance(value, str) else ""


class OpenSearchEngine:
    """Keyword and vector retrieval over one OpenSearch index shared by every knowledge base.

    The client is injected so wiring chooses its authentication (basic, SigV4) and tests its transport.
    Client errors propagate: hybrid search counts a failed group as a failed branch.
    """

    def __init__(self, client: OpenSearch, index: str) -> None:
        self._client = client
        self._index = index
        self._ensured_dimensions: int | None = None

    # Index ----------------------------------------------------------------------------------------------
    def ensure_index(self, dimensions: int) -> None:
        """Create the index for ``dimensions``-component vectors unless it exists."""
        if self._ensured_dimensions == dimensions:
            return
        if not self._client.indices.exists(index=self._index):
            try:
                self._client.indices.create(index=self._index, body=index_body(dimensions))
            except RequestError as error:
                # Another process created it between our check and our request: the index is there.
                if error.error != "resource_already_exists_exception":
                    raise
        self._ensured_dimensions = dimensions

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
        pass it get them from ``chunk.metadata`` (keys ``title``, ``filename``, ``description``). The bulk
        request waits for a refresh, so a search right after it sees the chunks.
        """
        searchable = [c for c in chunks if c.searchable]
        if len(searchable) != len(vectors):
            raise ValueError(f"{len(searchable)} searchable chunks but {len(vectors)} vectors")
        if not searchable:
            return
        self.ensure_index(int(vectors.shape[1]))
        actions = self._actions(knowledge_base_id, embedding_model, searchable, vectors, document)
        helpers.bulk(self._client, actions, refresh="wait_for")

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
        vector: npt.NDArray[np.float32],
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
            "vector": [float(x) for x in np.asarray(vector, dtype=np.float32)],
        }
        index_text = _index_text(chunk)
        if has_han(index_text):
            source["content_zh"] = zh_search_text(index_text)
        if has_han(title):
            source["title_zh"] = zh_search_text(title)
        return source

    def delete_document(self, knowledge_id: str) -> int:
        """Remove every chunk of one document; returns how many were deleted.

        Refreshes so the chunks stop matching at once; ``conflicts=proceed`` lets a concurrent re-index win
        rather than fail the deletion.
        """
        response = self._client.delete_by_query(
            index=self._index,
            body={"query": {"term": {"knowledge_id": knowledge_id}}},
            params={"refresh": "true", "conflicts": "proceed"},
        )
        return int(response.get("deleted", 0))

    # Search ---------------------------------------------------------------------------------------------
    def vector_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The ``top_k`` nearest chunks by cosine, within the filters and the query's embedding space.

        Vectors of another embedding model live in another space; their cosines mean nothing, so the model
        is a filter, never a preference.
        """
        if params.query_embedding is None or not params.knowledge_base_ids or top_k <= 0:
            return []
        vector = [float(x) for x in np.asarray(params.query_embedding, dtype=np.float32)]
        filters = [*self._filters(params), {"term": {"embedding_model": params.embedding_model}}]
        body = {
            "size": top_k,
            "_source": {"includes": list(_RESULT_FIELDS)},
            "query": {"knn": {"vector": {"vector": vector, "k": top_k, "filter": {"bool": {"filter": filters}}}}},
        }
        response = self._client.search(index=self._index, body=body)
        return [self._result(hit, cosine_from_score(float(hit["_score"]))) for hit in _hits(response)]

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
                }
            },
        }
        response = self._client.search(index=self._index, body=body)
        return [self._result(hit, float(hit["_score"])) for hit in _hits(response)]

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
        return SearchResult(**fields, score=score)


def _hits(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The hits in the server's order, which is best first."""
    hits: list[Mapping[str, Any]] = response.get("hits", {}).get("hits", [])
    return hits
