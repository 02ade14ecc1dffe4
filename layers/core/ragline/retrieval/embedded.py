"""The embedded engine: SQLite FTS5 (BM25, porter stemming) for keywords, exact numpy cosine for vectors."""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ragline.retrieval.base import RetrieveParams, keyword_divisor
from ragline.retrieval.keyword_index import KeywordIndex
from ragline.store.db import Database
from ragline.store.keyword_changes import ChangeKind, record_keyword_reset, record_keyword_rows
from ragline.store.knowledge import bump_index_version
from ragline.store.models import Chunk, Document
from ragline.text.segmentation import segment_for_index
from ragline.text.stopwords import SEARCH_STOPWORDS_EN
from ragline.types import SearchResult
from ragline.types.search import image_info_of

# The most question vectors a chunk has (EnrichmentConfig.questions_per_chunk's bound).
_MAX_QUESTIONS = 10

# BM25 column weights: (content, title). Equal weights measured best on SciFact (BM25 nDCG@10 0.692 with
# titles at 1.0, 0.683 at 0.5, 0.659 with titles ignored).
_BM25_WEIGHTS = (1.0, 1.0)
_FTS_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass
class _VectorBlock:
    """One knowledge base's vectors for one model, as loaded.

    ``version`` / ``appended`` are the counters of ``index_versions`` the block reflects (appends are read
    incrementally, anything else reloads).
    """

    version: int
    appended: int
    rowids: npt.NDArray[np.int64]
    knowledge_ids: npt.NDArray[np.object_]
    matrix: npt.NDArray[np.float32]
    size: int = 0  # rows in use; the arrays have room to grow
    total: npt.NDArray[np.float64] | None = None  # the sum of the rows in use (their mean is the centroid)
    # Some chunk has more than one row (its generated questions' vectors): hits are deduplicated by chunk.
    repeats: bool = False

    def view(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.object_], npt.NDArray[np.float32]]:
        return self.rowids[: self.size], self.knowledge_ids[: self.size], self.matrix[: self.size]


def _grown(array: np.ndarray, rows: int) -> np.ndarray:
    """``array`` with capacity for at least ``rows`` rows (doubling: appends cost amortised O(1))."""
    if len(array) >= rows:
        return array
    capacity = max(rows, 2 * len(array), 1024)
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype) if array.dtype != object else None
    if out is None:
        out = np.empty(capacity, dtype=object)
    out[: len(array)] = array
    return out


# Query terms kept for FTS5: the most informative by inverse document frequency. An OR of hundreds of
# terms costs a doclist merge per term, and common terms add little to BM25.
_MAX_QUERY_TERMS = 64
# Query terms the in-memory index ranks by (the rarest, as above). Its cost is one numpy update per term, so
# a long query keeps nearly all of its words: on 200 SciFact abstracts used as queries (median 98 terms),
# the top 10 documents equalled BM25 over the whole query's in 100% of places with 256 terms, 97% with 128
# and 68% with 64 (bench/retrieval/benchmark.py, "long queries"); ranking took 1.6 ms against 0.9 ms.
_MAX_INDEX_TERMS = 256
# Document frequencies are cached per term for this many index changes' worth of lookups.
_DF_CACHE_SIZE = 50_000


def query_terms(text: str) -> list[str]:
    """The keyword query's terms.

    Words (Chinese segmented by jieba), lower-cased, stop words dropped (unless nothing else is left), first occurrence
    order.
    """
    words = [w.lower() for w in _FTS_TOKEN.findall(segment_for_index(text))]
    terms = [w for w in dict.fromkeys(words) if w not in SEARCH_STOPWORDS_EN]
    return terms or list(dict.fromkeys(words))


def fts_match(terms: Sequence[str]) -> str:
    """An FTS5 OR-query of ``terms``, each quoted so no input is FTS syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


@cache
def single_threaded_blas() -> None:
    """BLAS (the exact vector search's matrix product) on one thread, for the whole process.

    A search's matrix-vector product over 50,000 × 384 floats is bound by memory, not arithmetic; OpenBLAS
    splits it over both cores of a 2-core machine anyway, and its threads spin while they wait. On the busy
    machine this runs on, one thread took 4.2 ms (p50) against 15.9 ms with two, and it leaves the other core
    to the query embedding and keyword search running beside it. Searches run side by side on their own
    threads instead. Without threadpoolctl installed, BLAS keeps its own setting.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=1, user_api="blas")


class EmbeddedEngine:
    """Keyword and vector retrieval over the chunks of one SQLite database."""

    engine_name = "sqlite"

    def __init__(self, db: Database) -> None:
        """An engine over the chunks, vectors and keyword rows of ``db``; vectors are held in memory per knowledge base."""
        single_threaded_blas()
        self._db = db
        self._lock = threading.Lock()
        self._blocks: dict[tuple[str, str], _VectorBlock] = {}
        self._df: dict[str, int] = {}
        self._df_rows = -1
        self._keywords = KeywordIndex(db, _BM25_WEIGHTS)
        self._hit_lock = threading.Lock()
        self._hit_cache: OrderedDict[int, SearchResult] = OrderedDict()
        self._hit_seq = -1

    # Indexing -------------------------------------------------------------------------------------------
    def index_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """Keyword rows for every searchable chunk and one vector per row of ``vectors`` (same order)."""
        searchable = [c for c in chunks if c.searchable]
        if len(searchable) != len(vectors):
            raise ValueError(f"{len(searchable)} searchable chunks but {len(vectors)} vectors")
        with self._db.transaction():
            self.index_keywords(knowledge_base_id, searchable, document=document)
            self.add_vectors(knowledge_base_id, embedding_model, searchable, vectors)

    def _rowids(self, conn: object, chunk_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        """Chunk id → (rowid, document id), in statements of at most 500 ids."""
        found: dict[str, tuple[int, str]] = {}
        ids = list(chunk_ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = conn.execute(  # type: ignore[attr-defined]
                f"SELECT rowid, id, knowledge_id FROM chunks WHERE id IN ({','.join('?' * len(part))})", part
            ).fetchall()
            found.update({row["id"]: (int(row["rowid"]), row["knowledge_id"]) for row in rows})
        return found

    def index_keywords(
        self, knowledge_base_id: str, chunks: Sequence[Chunk], *, document: Document | None = None
    ) -> None:
        """Keyword rows of the searchable ``chunks`` (stored already).

        Searchable by keyword at once, before any vector exists. One statement per batch, not per chunk.
        """
        searchable = [c for c in chunks if c.searchable]
        if not searchable:
            return
        with self._db.transaction() as conn:
            rowids = self._rowids(conn, [c.id for c in searchable])
            titles: dict[str, str] = {}
            if document is not None:
                titles[document.id] = document.title
            for knowledge_id in {rowids[c.id][1] for c in searchable if c.id in rowids} - set(titles):
                row = conn.execute("SELECT title FROM documents WHERE id = ?", (knowledge_id,)).fetchone()
                titles[knowledge_id] = row["title"] if row else ""
            segmented_titles = {k: segment_for_index(t) for k, t in titles.items()}
            record_keyword_rows(conn, [rowids[c.id][0] for c in searchable if c.id in rowids])
            conn.executemany(
                "INSERT OR REPLACE INTO chunks_fts (rowid, content, title) VALUES (?, ?, ?)",
                [
                    (
                        rowids[c.id][0],
                        segment_for_index(_index_text(c)),
                        segmented_titles.get(rowids[c.id][1], ""),
                    )
                    for c in searchable
                    if c.id in rowids
                ],
            )

    def add_vectors(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        """Vectors of stored chunks (row ``i`` for ``chunks[i]``); writing a chunk's vector again replaces it.

        Searches see them at their next call, reading only what was appended.
        """
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if not len(chunks):
            return
        with self._db.transaction() as conn:
            rowids = self._rowids(conn, [c.id for c in chunks])
            conn.execute(
                "INSERT INTO index_versions (knowledge_base_id, version, appended) VALUES (?, 0, ?)"
                " ON CONFLICT(knowledge_base_id) DO UPDATE SET appended = appended + excluded.appended",
                (knowledge_base_id, len(chunks)),
            )
            last = int(
                conn.execute(
                    "SELECT appended FROM index_versions WHERE knowledge_base_id = ?", (knowledge_base_id,)
                ).fetchone()["appended"]
            )
            first = last - len(chunks) + 1
            matrix = np.ascontiguousarray(vectors, dtype=np.float32)
            conn.executemany(
                "INSERT OR REPLACE INTO chunk_vectors (chunk_rowid, knowledge_base_id, model, vector, seq)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (rowids[c.id][0], knowledge_base_id, embedding_model, matrix[i].tobytes(), first + i)
                    for i, c in enumerate(chunks)
                    if c.id in rowids
                ],
            )

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

        Row ``i`` is its ``i``-th question; a vector search close to one of them finds the chunk. Nothing for
        a chunk no longer stored.
        """
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._db.transaction() as conn:
            rowids = self._rowids(conn, [chunk.id])
            if chunk.id not in rowids:
                return
            rowid = rowids[chunk.id][0]
            conn.execute("DELETE FROM question_vectors WHERE chunk_rowid = ?", (rowid,))
            conn.executemany(
                "INSERT INTO question_vectors (chunk_rowid, position, knowledge_base_id, model, vector)"
                " VALUES (?, ?, ?, ?, ?)",
                [(rowid, i, knowledge_base_id, embedding_model, matrix[i].tobytes()) for i in range(len(matrix))],
            )
            # Rare (background enrichment) and sharing rowids with chunk vectors: searches reload the block.
            bump_index_version(conn, knowledge_base_id)

    def delete_vectors(self, knowledge_base_id: str, keep_model: str) -> None:
        """Vectors of other models than ``keep_model`` (after a knowledge base changed its model)."""
        with self._db.transaction() as conn:
            for table in ("chunk_vectors", "question_vectors"):
                conn.execute(
                    f"DELETE FROM {table} WHERE knowledge_base_id = ? AND model != ?",
                    (knowledge_base_id, keep_model),
                )
            bump_index_version(conn, knowledge_base_id)

    def reindex_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """The chunks' keyword rows and vectors replaced (in one transaction with the new ones)."""
        with self._db.transaction() as conn:
            record_keyword_reset(conn)
            for chunk in chunks:
                conn.execute(
                    "DELETE FROM chunks_fts WHERE rowid = (SELECT rowid FROM chunks WHERE id = ?)", (chunk.id,)
                )
                # Generated questions were asked of the old text: they go with it.
                for table in ("chunk_vectors", "question_vectors"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE chunk_rowid = (SELECT rowid FROM chunks WHERE id = ?)", (chunk.id,)
                    )
            self.index_chunks(knowledge_base_id, embedding_model, chunks, vectors, document=document)

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """Nothing to do here: the store's ``delete_chunk`` removes the rows this engine reads."""
        return 0

    def delete_document(self, knowledge_id: str) -> int:
        """Nothing to do here.

        The keyword rows and vectors live in the knowledge store's database and its ``delete_document`` removes them
        with the chunks (and bumps the index version).
        """
        return 0

    def warm(self, knowledge_base_ids: Sequence[str], embedding_model: str, timeout: float | None = None) -> bool:
        """Load what the first searches of these knowledge bases would; True when all of it is in memory.

        Loads what the first searches of these knowledge bases would: their vectors, the keyword index and (waited for
        up to ``timeout``) its postings; True when all of it is in memory.
        """
        for kb_id in knowledge_base_ids:
            self._block(kb_id, embedding_model)
        self._keywords.rank(["warm"], list(knowledge_base_ids))
        return self._keywords.wait_preloaded(timeout)

    # Vector search --------------------------------------------------------------------------------------
    def _counters(self, kb_id: str) -> tuple[int, int]:
        row = self._db.query_one("SELECT version, appended FROM index_versions WHERE knowledge_base_id = ?", (kb_id,))
        return (int(row["version"]), int(row["appended"])) if row else (0, 0)

    _ROWS_SQL = (
        "SELECT v.chunk_rowid, v.vector, c.knowledge_id FROM chunk_vectors v JOIN chunks c ON c.rowid = v.chunk_rowid"
        " WHERE v.knowledge_base_id = ? AND v.model = ? AND c.enabled = 1 AND c.searchable = 1"
    )
    # A full load adds the chunks' question vectors (rows sharing their chunk's rowid); they are never appended
    # incrementally: writing them bumps the index version.
    _ALL_ROWS_SQL = (
        _ROWS_SQL + " UNION ALL SELECT q.chunk_rowid, q.vector, c.knowledge_id FROM question_vectors q"
        " JOIN chunks c ON c.rowid = q.chunk_rowid"
        " WHERE q.knowledge_base_id = ? AND q.model = ? AND c.enabled = 1 AND c.searchable = 1"
    )

    def _block(self, kb_id: str, model: str) -> _VectorBlock:
        version, appended = self._counters(kb_id)
        with self._lock:
            block = self._blocks.get((kb_id, model))
            if block is not None and block.version == version and block.appended == appended:
                return block
            if block is not None and block.version == version and block.appended < appended:
                rows = self._db.query(self._ROWS_SQL + " AND v.seq > ? ORDER BY v.seq", (kb_id, model, block.appended))
                new_rowids = np.array([r["chunk_rowid"] for r in rows], dtype=np.int64)
                rowids, _, _ = block.view()
                if not np.isin(new_rowids, rowids).any():  # a rewritten vector needs a full reload
                    self._append(block, rows, new_rowids)
                    block.appended = appended
                    return block
            rows = self._db.query(self._ALL_ROWS_SQL, (kb_id, model, kb_id, model))
            block = _VectorBlock(
                version=version,
                appended=appended,
                rowids=np.zeros(0, dtype=np.int64),
                knowledge_ids=np.empty(0, dtype=object),
                matrix=np.zeros((0, 0), dtype=np.float32),
            )
            self._append(block, rows, np.array([r["chunk_rowid"] for r in rows], dtype=np.int64))
            block.repeats = bool(block.size) and len(np.unique(block.rowids[: block.size])) < block.size
            self._blocks[(kb_id, model)] = block
            return block

    @staticmethod
    def _append(block: _VectorBlock, rows: list[Any], rowids: npt.NDArray[np.int64]) -> None:
        if not rows:
            return
        vectors = np.frombuffer(b"".join(r["vector"] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        if block.matrix.shape[1] != vectors.shape[1]:
            block.matrix = np.zeros((0, vectors.shape[1]), dtype=np.float32)
            block.size = 0
            block.total = None
        end = block.size + len(rows)
        block.matrix = _grown(block.matrix, end)
        block.rowids = _grown(block.rowids, end)
        block.knowledge_ids = _grown(block.knowledge_ids, end)
        block.matrix[block.size : end] = vectors
        block.rowids[block.size : end] = rowids
        block.knowledge_ids[block.size : end] = [r["knowledge_id"] for r in rows]
        block.size = end
        added = vectors.sum(axis=0, dtype=np.float64)
        block.total = added if block.total is None else block.total + added

    def _bases(self, params: RetrieveParams) -> list[str]:
        """The knowledge bases searched: those named, less any of another tenant when a tenant is given."""
        if not params.tenant_id or not params.knowledge_base_ids:
            return list(params.knowledge_base_ids)
        marks = ",".join("?" * len(params.knowledge_base_ids))
        rows = self._db.query(
            f"SELECT id FROM knowledge_bases WHERE tenant_id = ? AND id IN ({marks})",
            (params.tenant_id, *params.knowledge_base_ids),
        )
        own = {row["id"] for row in rows}
        return [kb_id for kb_id in params.knowledge_base_ids if kb_id in own]

    def vector_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The ``top_k`` nearest chunks by cosine over the in-memory vectors of the searched knowledge bases."""
        if params.query_embedding is None:
            return []
        query = np.asarray(params.query_embedding, dtype=np.float32)
        wanted = set(params.knowledge_ids)
        scored: list[tuple[float, int]] = []
        for kb_id in self._bases(params):
            block = self._block(kb_id, params.embedding_model)
            rowids, knowledge_ids, matrix = block.view()
            if not len(rowids):
                continue
            if matrix.shape[1] != query.shape[0]:
                raise ValueError(
                    f"query vector has {query.shape[0]} dimensions, knowledge base {kb_id} has {matrix.shape[1]}"
                )
            scores = matrix @ query
            if wanted:
                scores = np.where(np.isin(knowledge_ids, list(wanted)), scores, -np.inf)
            # A chunk with question vectors has several rows: take enough rows for top_k distinct chunks.
            factor = 1 + _MAX_QUESTIONS if block.repeats else 1
            take = min(top_k * factor, len(scores))
            best = np.argpartition(scores, len(scores) - take)[len(scores) - take :]
            found = np.isfinite(scores[best])
            scored.extend(zip(scores[best][found].tolist(), rowids[best][found].tolist(), strict=True))
        scored.sort(key=lambda pair: -pair[0])
        # A chunk scores as its best row (its text or one of its questions).
        best_per_chunk: dict[int, float] = {}
        for score, rowid in scored:
            best_per_chunk.setdefault(rowid, score)
        scored = [(score, rowid) for rowid, score in best_per_chunk.items()]
        # Hits hybrid search drops below its threshold are never built (see ``RetrieveEngine``).
        return self._results([pair for pair in scored[:top_k] if pair[0] >= params.vector_threshold])

    def vector_background(self, params: RetrieveParams) -> float | None:
        """The query's mean cosine with every chunk of the searched knowledge bases.

        The query's mean cosine with every chunk of the searched knowledge bases (the centroid's dot product with it):
        how similar this model finds unrelated text. None without vectors.
        """
        if params.query_embedding is None:
            return None
        query = np.asarray(params.query_embedding, dtype=np.float64)
        rows, total = 0, 0.0
        for kb_id in self._bases(params):
            block = self._block(kb_id, params.embedding_model)
            if block.total is None or not block.size or block.total.shape[0] != query.shape[0]:
                continue
            rows += block.size
            total += float(block.total @ query)
        return total / rows if rows else None

    # Keyword search -------------------------------------------------------------------------------------
    def _document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many keyword rows contain each term, cached until the index grows or shrinks.

        How many keyword rows contain each term (FTS5 applies its own stemming), cached until the index grows or
        shrinks.
        """
        rows = self._db.query_one("SELECT max(rowid) AS top, count(*) AS n FROM chunks_fts WHERE rowid > 0")
        key = hash((rows["top"], rows["n"])) if rows else 0
        with self._lock:
            if key != self._df_rows or len(self._df) > _DF_CACHE_SIZE:
                self._df, self._df_rows = {}, key
            missing = [t for t in terms if t not in self._df]
        for term in missing:
            row = self._db.query_one(
                "SELECT count(*) AS n FROM chunks_fts WHERE chunks_fts MATCH ?", (fts_match([term]),)
            )
            with self._lock:
                self._df[term] = int(row["n"]) if row else 0
        return {t: self._df.get(t, 0) for t in terms}

    def informative_terms(self, text: str, limit: int = _MAX_QUERY_TERMS) -> list[str]:
        """The query's terms; past ``limit``, the rarest ones (highest IDF) in query order."""
        return self._rarest(query_terms(text), limit)

    def _rarest(self, terms: list[str], limit: int) -> list[str]:
        if len(terms) <= limit:
            return terms
        df = self._keywords.term_rows(terms) or self._document_frequencies(terms)
        present = [t for t in terms if df[t] > 0]
        order = {t: i for i, t in enumerate(terms)}
        kept = set(sorted(present, key=lambda t: (df[t], order[t]))[:limit])
        return [t for t in terms if t in kept]

    def keyword_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """BM25 over the keyword rows, ranked in memory by the query's rarest terms.

        BM25 over the keyword rows, ranked in memory (:mod:`ragline.retrieval.keyword_index`) with FTS5's own scores, by
        the query's ``_MAX_INDEX_TERMS`` rarest terms; FTS5 itself answers what the in-memory index cannot, by the
        ``_MAX_QUERY_TERMS`` rarest.
        """
        terms = self.informative_terms(params.query, _MAX_INDEX_TERMS)
        bases = self._bases(params)
        if not terms or not bases or top_k <= 0:
            return []
        ranking = self._keywords.rank(terms, bases, params.knowledge_ids)
        if ranking is None:
            terms = self._rarest(terms, _MAX_QUERY_TERMS)
            by_fts5 = self._fts_ranking(terms, bases, params.knowledge_ids, top_k)
            return self._keyword_results(by_fts5, self._flags([rowid for _, rowid in by_fts5]), params)
        scored: list[tuple[float, int]] = []
        flags: dict[int, tuple[bool, bool]] = {}
        read = 0
        while len(scored) < top_k and read < len(ranking):
            # A disabled chunk does not take a place (as in the SQL filter); a chunk of a disabled document
            # does (as in the SQL filter, which never read documents). Blocks are rarely more than one.
            block = ranking.top(read + top_k - len(scored))[read:]
            read += len(block)
            flags.update(self._flags([rowid for _, rowid in block]))
            scored.extend(pair for pair in block if flags.get(pair[1], (False, False))[0])
        return self._keyword_results(scored[:top_k], flags, params)

    def _keyword_results(
        self, scored: list[tuple[float, int]], flags: dict[int, tuple[bool, bool]], params: RetrieveParams
    ) -> list[SearchResult]:
        """Hits of enabled documents.

        Those hybrid search drops below its keyword threshold are never built (the threshold is relative to the best hit
        returned: see ``RetrieveEngine``).
        """
        kept = [pair for pair in scored if flags.get(pair[1], (False, False))[1]]
        if kept and params.keyword_threshold > 0:
            divisor = keyword_divisor(kept[0][0])
            kept = [pair for pair in kept if pair[0] / divisor >= params.keyword_threshold]
        return self._results(kept, flags)

    def _flags(self, rowids: Sequence[int]) -> dict[int, tuple[bool, bool]]:
        """Row id → (the chunk is enabled and searchable, its document is enabled)."""
        if not rowids:
            return {}
        rows = self._db.query(
            "SELECT c.rowid, c.enabled AND c.searchable, d.enabled FROM chunks c JOIN documents d"
            f" ON d.id = c.knowledge_id WHERE c.rowid IN ({','.join('?' * len(rowids))})",
            list(rowids),
        )
        return {int(row[0]): (bool(row[1]), bool(row[2])) for row in rows}

    def keyword_search_fts5(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The same search answered by FTS5's ``bm25()`` in SQL.

        The same search answered by FTS5's ``bm25()`` in SQL (what :meth:`keyword_search` must equal for a query of at
        most ``_MAX_QUERY_TERMS`` terms; a longer one keeps more of them in memory).
        """
        terms = self.informative_terms(params.query)
        bases = self._bases(params)
        if not terms or not bases or top_k <= 0:
            return []
        scored = self._fts_ranking(terms, bases, params.knowledge_ids, top_k)
        return self._keyword_results(scored, self._flags([rowid for _, rowid in scored]), params)

    def _fts_ranking(
        self, terms: Sequence[str], bases: Sequence[str], knowledge_ids: Sequence[str], top_k: int
    ) -> list[tuple[float, int]]:
        kb_marks = ",".join("?" * len(bases))
        sql = (
            f"SELECT c.rowid AS rowid, -bm25(chunks_fts, {_BM25_WEIGHTS[0]}, {_BM25_WEIGHTS[1]}) AS score"
            " FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid"
            f" WHERE chunks_fts MATCH ? AND c.knowledge_base_id IN ({kb_marks}) AND c.enabled = 1 AND c.searchable = 1"
        )
        args: list[object] = [fts_match(terms), *bases]
        if knowledge_ids:
            sql += f" AND c.knowledge_id IN ({','.join('?' * len(knowledge_ids))})"
            args.extend(knowledge_ids)
        sql += " ORDER BY score DESC, c.rowid LIMIT ?"
        args.append(top_k)
        return [(float(r["score"]), int(r["rowid"])) for r in self._db.query(sql, args)]

    # Results --------------------------------------------------------------------------------------------
    def _rows(self, rowids: Sequence[int]) -> dict[int, Any]:
        """The chunks with these rowids, with their document's fields."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self._db.query(
            f"SELECT c.rowid AS rowid, {_RESULT_COLUMNS}, c.enabled, c.searchable, d.enabled AS doc_enabled,"
            " d.title AS doc_title, d.filename AS doc_filename, d.description AS doc_description"
            f" FROM chunks c JOIN documents d ON d.id = c.knowledge_id WHERE c.rowid IN ({marks})",
            list(rowids),
        )
        return {int(row["rowid"]): row for row in rows}

    def _results(
        self, scored: list[tuple[float, int]], flags: dict[int, tuple[bool, bool]] | None = None
    ) -> list[SearchResult]:
        """Hits in the order of ``scored``; chunks of a disabled document are left out."""
        if not scored:
            return []
        if flags is None:
            flags = self._flags([rowid for _, rowid in scored])
        wanted = [(score, rowid) for score, rowid in scored if flags.get(rowid, (False, False))[1]]
        hits = self._hits([rowid for _, rowid in wanted])
        return [_scored(hits[rowid], score) for score, rowid in wanted if rowid in hits]

    def _hits(self, rowids: Sequence[int]) -> dict[int, SearchResult]:
        """The hits of these chunk rows (score 0), remembered across searches.

        The hits of these chunk rows (score 0), remembered across searches until the change log says a row changed;
        never remembered from inside a transaction, which may yet roll back.
        """
        with self._hit_lock:
            usable = self._sync_hits()
            found: dict[int, SearchResult] = {}
            if usable:
                for rowid in rowids:
                    hit = self._hit_cache.get(rowid)
                    if hit is not None:
                        self._hit_cache.move_to_end(rowid)
                        found[rowid] = hit
        missing = [rowid for rowid in rowids if rowid not in found]
        if missing:
            built = {rowid: _search_result(row, 0.0) for rowid, row in self._rows(missing).items()}
            found.update(built)
            if usable:
                with self._hit_lock:
                    self._hit_cache.update(built)
                    while len(self._hit_cache) > _HIT_CACHE_SIZE:
                        self._hit_cache.popitem(last=False)
        return found

    def _sync_hits(self) -> bool:
        """Forget the remembered hits of rows changed since the last look at the change log.

        Forget the remembered hits of rows changed since the last look at the change log (all of them after a reset or a
        gap in the log); False inside a transaction.
        """
        with self._db.snapshot() as conn:
            if conn is None:
                return False
            changes = conn.execute(
                "SELECT seq, kind, rowids FROM keyword_changes WHERE seq > ? ORDER BY seq", (self._hit_seq,)
            ).fetchall()
            if self._hit_seq < 0:
                row = conn.execute("SELECT max(seq) FROM keyword_changes").fetchone()
                self._hit_cache.clear()
                self._hit_seq = int(row[0] or 0)
                return True
        if changes and int(changes[0][0]) != self._hit_seq + 1:
            self._hit_cache.clear()
        else:
            for _, kind, blob in changes:
                if kind in (ChangeKind.DELETE, ChangeKind.UPDATE):
                    for rowid in np.frombuffer(blob, dtype="<i8").tolist():
                        self._hit_cache.pop(rowid, None)
                elif kind == ChangeKind.RESET:
                    self._hit_cache.clear()
        if changes:
            self._hit_seq = int(changes[-1][0])
        return True


# Hits remembered by chunk row: building one (a row read, JSON, validation) took ~13 µs, 4 ms for a keyword
# pool of 300, and the same chunks come back search after search.
_HIT_CACHE_SIZE = 20_000


def _scored(hit: SearchResult, score: float) -> SearchResult:
    """A remembered hit with this search's score, and containers of its own (later stages fill them in place)."""
    return hit.model_copy(
        update={"score": score, "metadata": {}, "sub_chunk_id": [], "chunk_metadata": dict(hit.chunk_metadata)}
    )


_RESULT_COLUMNS = ", ".join(
    f"c.{column}"
    for column in (
        "id",
        "content",
        "knowledge_id",
        "knowledge_base_id",
        "header",
        "chunk_index",
        "chunk_type",
        "parent_chunk_id",
        "pre_chunk_id",
        "next_chunk_id",
        "start_at",
        "end_at",
        "metadata",
    )
)


def _search_result(row: Any, score: float) -> SearchResult:
    """A hit from a row of :meth:`EmbeddedEngine._rows`."""
    metadata = json.loads(row["metadata"] or "{}")
    return SearchResult(
        id=row["id"],
        content=row["content"],
        knowledge_id=row["knowledge_id"],
        knowledge_base_id=row["knowledge_base_id"],
        knowledge_title=row["doc_title"],
        knowledge_filename=row["doc_filename"],
        knowledge_description=row["doc_description"],
        header=row["header"],
        chunk_index=int(row["chunk_index"]),
        chunk_type=row["chunk_type"],
        parent_chunk_id=row["parent_chunk_id"],
        pre_chunk_id=row["pre_chunk_id"],
        next_chunk_id=row["next_chunk_id"],
        start_at=int(row["start_at"]),
        end_at=int(row["end_at"]),
        score=float(score),
        chunk_metadata=metadata,
        image_info=image_info_of(metadata),
    )


def _index_text(chunk: Chunk) -> str:
    """What the keyword index reads: the section header adds the words a passage leaves implicit."""
    return f"{chunk.header}\n{chunk.content}" if chunk.header else chunk.content
