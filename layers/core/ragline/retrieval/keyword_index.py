"""FTS5's BM25, computed in memory from FTS5's own postings.

SQLite's ``bm25()`` scores every row an OR query matches — a common term matches half of a knowledge base —
and the engine then joined each row to ``chunks`` before its LIMIT: most of a search's time. This index keeps,
per term, the rows that hold it and how often (read once from an ``fts5vocab`` table over ``chunks_fts``),
each row's length (``chunks_fts_docsize``) and knowledge base, and scores a query with numpy using FTS5's
formula on the same figures, so scores equal SQLite's (to the last bit: the same operations in the same
order) and rankings are unchanged.

It follows the keyword rows through the change log (:mod:`ragline.store.keyword_changes`): appended rows are
read incrementally, deleted rows are dropped, anything else rebuilds it. Query words that FTS5 does not cut
into exactly one term return None, and the caller asks FTS5.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ragline.store.db import FTS_TOKENIZER, Database
from ragline.store.keyword_changes import ChangeKind

# FTS5's bm25() constants (fts5_aux.c).
K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
# The keyword table's columns, in order; their weights are the engine's.
COLUMNS = ("content", "title")
# Postings kept in memory (row, frequency pairs over all cached terms); least recently used terms go first.
MAX_POSTINGS = 4_000_000
# Query words whose terms are remembered (tokenising is deterministic: never stale).
MAX_WORDS = 100_000
# From this many keyword rows on, a (re)built index reads every term's postings in the background, on a
# connection of its own, so the first search of a word does not (a common term cost 7-20 ms to read at
# 50,000 rows; all of them, 2-3 s in the background). Smaller indexes read terms as queries meet them.
PRELOAD_MIN_ROWS = 5_000

logger = logging.getLogger(__name__)

_INSTANCES = "temp.ragline_fts_instances"
_WORDS = "temp.ragline_query_words"
_WORD_TERMS = "temp.ragline_query_word_terms"


@dataclass
class _Postings:
    rowids: npt.NDArray[np.int64]  # ascending
    freq: npt.NDArray[np.float64]  # FTS5's phrase frequency: the column weights of the term's instances
    covered: int  # rows up to this rowid are included
    deletes: int  # the deletes applied (``_State.deletes``) when last pruned


@dataclass
class _State:
    seq: int = 0  # the last change-log entry reflected
    covered: int = 0  # rows up to this rowid are loaded
    doclen: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))  # tokens per row, all columns
    present: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))  # has a keyword row
    kb_code: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # -1: no chunk
    kb_codes: dict[str, int] = field(default_factory=dict)
    rows: int = 0  # FTS5's row count
    tokens: int = 0  # FTS5's total token count, all columns
    deletes: int = 0
    postings: OrderedDict[str, _Postings] = field(default_factory=OrderedDict)
    postings_size: int = 0


class Ranking:
    """The rows a query matched in the searched scope with their scores; read best first, in blocks."""

    def __init__(self, scores: npt.NDArray[np.float64], rowids: npt.NDArray[np.int64]) -> None:
        """A ranking of ``rowids`` by ``scores`` (same order), sorted lazily as it is read."""
        self._scores = scores
        self._rowids = rowids
        self._order: npt.NDArray[np.intp] | None = None
        self._ranked = 0

    def __len__(self) -> int:
        """How many rows matched."""
        return len(self._rowids)

    def top(self, count: int) -> list[tuple[float, int]]:
        """The first ``count`` (score, rowid) pairs: best score first, ties by rowid."""
        count = min(count, len(self._rowids))
        if count <= 0:
            return []
        if self._order is None or count > self._ranked:
            if count < len(self._scores):
                # Every row scoring at least the count-th best (ties at the boundary included), then sorted.
                kth = np.partition(self._scores, len(self._scores) - count)[len(self._scores) - count]
                chosen = np.flatnonzero(self._scores >= kth)
            else:
                chosen = np.arange(len(self._scores))
            self._order = chosen[np.lexsort((self._rowids[chosen], -self._scores[chosen]))]
            self._ranked = count
        order = self._order[:count]
        return list(zip(self._scores[order].tolist(), self._rowids[order].tolist(), strict=True))


def _varint_sums(blob: bytes, columns: int) -> npt.NDArray[np.float64]:
    """Each docsize record's column sizes (SQLite varints, ``columns`` per record) added up."""
    data = np.frombuffer(blob, dtype=np.uint8)
    if not len(data):
        return np.zeros(0)
    last = data < 0x80  # the last byte of each varint
    ends = np.flatnonzero(last)
    index: npt.NDArray[np.intp] = np.cumsum(last) - last  # which varint each byte belongs to
    shift = ends[index] - np.arange(len(data))  # bytes after this one in its varint
    values = np.bincount(index, weights=(data & 0x7F).astype(np.float64) * np.exp2(7.0 * shift))
    return values.reshape(-1, columns).sum(axis=1)


def _grown(array: np.ndarray, size: int, fill: object) -> np.ndarray:
    if len(array) >= size:
        return array
    out = np.full(max(size, 2 * len(array), 1024), fill, dtype=array.dtype)
    out[: len(array)] = array
    return out


class KeywordIndex:
    """One database's keyword index in memory (see the module docstring). Thread-safe."""

    def __init__(self, db: Database, weights: Sequence[float], k1: float = K1, b: float = B) -> None:
        """An empty index with BM25's ``k1`` (saturation) and ``b`` (length normalisation).

        ``k1``/``b``: BM25's term-frequency saturation and length normalisation (FTS5's by default, so scores equal
        ``bm25()``'s; other values rank by BM25 all the same, without that equality).
        """
        self._db = db
        self._weights = tuple(float(w) for w in weights)
        self._k1 = float(k1)
        self._b = float(b)
        self._lock = threading.Lock()
        self._state: _State | None = None
        self._word_terms: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._tables_ready = False
        self._preloaded = threading.Event()
        self._preloaded.set()

    def rank(self, words: Sequence[str], kb_ids: Sequence[str], knowledge_ids: Sequence[str] = ()) -> Ranking | None:
        """The rows matching any of ``words``, scored exactly as FTS5's ``bm25()``.

        The rows of ``kb_ids`` (and of ``knowledge_ids``, when given) matching any of ``words``, scored as FTS5's
        ``bm25()`` with the engine's column weights scores an OR of the quoted words. None when the index cannot answer
        exactly (a word that is not one term, or a read inside a transaction).
        """
        with self._lock, self._db.snapshot() as conn:
            if conn is None:
                return None
            self._prepare(conn)
            terms = self._terms(conn, words)
            if terms is None:
                return None
            state = self._refresh(conn)
            postings = [self._postings(conn, state, term) for term in terms]
            allowed = None
            if knowledge_ids:
                marks = ",".join("?" * len(knowledge_ids))
                rows = conn.execute(f"SELECT rowid FROM chunks WHERE knowledge_id IN ({marks})", list(knowledge_ids))
                allowed = np.fromiter((r[0] for r in rows), dtype=np.int64)
            codes = [state.kb_codes[k] for k in kb_ids if k in state.kb_codes]
            return self._score(state, postings, codes, allowed)

    def term_rows(self, words: Sequence[str]) -> dict[str, int] | None:
        """How many keyword rows hold each word (its document frequency), or None as :meth:`rank`."""
        with self._lock, self._db.snapshot() as conn:
            if conn is None:
                return None
            self._prepare(conn)
            terms = self._terms(conn, words)
            if terms is None:
                return None
            state = self._refresh(conn)
            return {w: len(self._postings(conn, state, t).rowids) for w, t in zip(words, terms, strict=True)}

    # Scoring ---------------------------------------------------------------------------------------------
    def _score(
        self,
        state: _State,
        postings: Sequence[_Postings],
        codes: Sequence[int],
        allowed: npt.NDArray[np.int64] | None,
    ) -> Ranking:
        empty = Ranking(np.zeros(0), np.zeros(0, dtype=np.int64))
        if not codes or state.rows == 0:
            return empty
        avgdl = state.tokens / state.rows
        k1, b = self._k1, self._b
        scores = np.zeros(len(state.doclen))
        # FTS5 adds each phrase's term to the row's score in query order; so does this loop, so the sums
        # are the same to the last bit.
        for posting in postings:
            hits = len(posting.rowids)
            if not hits:
                continue
            idf = math.log((state.rows - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            freq = posting.freq
            length = state.doclen[posting.rowids]
            scores[posting.rowids] += idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * length / avgdl)))
        matched = np.flatnonzero(scores)  # every term adds a positive amount to the rows that hold it
        in_scope = state.kb_code[matched] == codes[0] if len(codes) == 1 else np.isin(state.kb_code[matched], codes)
        if allowed is not None:
            in_scope &= np.isin(matched, allowed)
        matched = matched[in_scope]
        return Ranking(scores[matched], matched.astype(np.int64))

    # Query words → index terms ---------------------------------------------------------------------------
    def _prepare(self, conn: sqlite3.Connection) -> None:
        if self._tables_ready:
            return
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {_INSTANCES} USING fts5vocab(main, chunks_fts, instance)")
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {_WORDS} USING fts5(word, tokenize = '{FTS_TOKENIZER}')")
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_WORD_TERMS} USING fts5vocab(temp, {_WORDS.split('.')[1]}, instance)"
        )
        self._tables_ready = True

    def _terms(self, conn: sqlite3.Connection, words: Sequence[str]) -> list[str] | None:
        """Each word's index term, as the keyword table's tokenizer cuts it; None for a word that is not one term.

        Each word's index term, as the keyword table's tokenizer cuts it (in a scratch FTS5 table of the same
        tokenizer); None when a word is not exactly one term (FTS5 reads it as a phrase, or as nothing).
        """
        missing = [w for w in dict.fromkeys(words) if w not in self._word_terms]
        if missing:
            conn.execute(f"DELETE FROM {_WORDS}")  # rows an interrupted call may have left
            conn.executemany(f"INSERT INTO {_WORDS} (rowid, word) VALUES (?, ?)", list(enumerate(missing, start=1)))
            cut: dict[int, list[tuple[int, str]]] = {}
            for doc, offset, term in conn.execute(f"SELECT doc, offset, term FROM {_WORD_TERMS}"):
                cut.setdefault(int(doc), []).append((int(offset), str(term)))
            conn.execute(f"DELETE FROM {_WORDS}")
            for number, word in enumerate(missing, start=1):
                self._word_terms[word] = tuple(term for _, term in sorted(cut.get(number, [])))
            while len(self._word_terms) > MAX_WORDS:
                self._word_terms.popitem(last=False)
        terms = [self._word_terms[w] for w in words]
        if any(len(t) != 1 for t in terms):
            return None
        return [t[0] for t in terms]

    # Following the keyword table ------------------------------------------------------------------------
    def _refresh(self, conn: sqlite3.Connection) -> _State:
        state = self._state
        if state is None:
            return self._rebuild(conn)
        changes = conn.execute(
            "SELECT seq, kind, first_rowid, rowids FROM keyword_changes WHERE seq > ? ORDER BY seq", (state.seq,)
        ).fetchall()
        if not changes:
            return state
        if int(changes[0][0]) != state.seq + 1:  # the log was pruned past this copy
            return self._rebuild(conn)
        for seq, kind, first_rowid, blob in changes:
            if kind == ChangeKind.DELETE:
                self._delete(state, np.frombuffer(blob, dtype="<i8"))
            elif kind == ChangeKind.UPDATE:
                pass  # chunk rows changed, not their keyword rows
            elif kind != ChangeKind.APPEND or int(first_rowid) <= state.covered:
                return self._rebuild(conn)  # rows replaced in place (or a rowid used again)
            state.seq = int(seq)
        self._load_rows(conn, state)
        return state

    def _rebuild(self, conn: sqlite3.Connection) -> _State:
        state = _State()
        row = conn.execute("SELECT max(seq) FROM keyword_changes").fetchone()
        state.seq = int(row[0] or 0)
        self._load_rows(conn, state)
        self._state = state
        if state.rows >= PRELOAD_MIN_ROWS and self._db.path != ":memory:" and len(set(self._weights)) == 1:
            self._preloaded.clear()
            threading.Thread(target=self._preload, args=(state,), name="keyword-preload", daemon=True).start()
        return state

    def wait_preloaded(self, timeout: float | None = None) -> bool:
        """Blocks until no background read of postings is under way (benchmarks warm up with it)."""
        return self._preloaded.wait(timeout)

    def _preload(self, state: _State) -> None:
        """Load every term's postings off the shared connection, for ``state`` if it is still current.

        Every term's postings over the rows ``state`` had loaded when it began, read on a read-only connection (the
        shared one stays free), then handed to ``state`` if it is still the current one: deletes and appends since are
        applied to them on use, as to any postings.
        """
        try:
            with self._lock:
                covered, deletes = state.covered, state.deletes
            read: list[tuple[str, _Postings]] = []
            uri = Path(self._db.path).resolve().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            try:
                conn.execute("CREATE VIRTUAL TABLE temp.instances USING fts5vocab(main, chunks_fts, instance)")
                rows = conn.execute(
                    "SELECT term, group_concat(doc) FROM temp.instances WHERE doc <= ? GROUP BY term", (covered,)
                )
                weight = self._weights[0]
                for term, text in rows:
                    docs, counts = np.unique(np.array(text.split(","), dtype=np.int64), return_counts=True)
                    read.append((term, _Postings(docs, counts.astype(np.float64) * weight, covered, deletes)))
            finally:
                conn.close()
            # The most common terms first: they are the ones slow to read on demand.
            read.sort(key=lambda item: -len(item[1].rowids))
            with self._lock:
                if self._state is not state:
                    return
                for term, posting in read:
                    if term in state.postings:
                        continue
                    if state.postings_size + len(posting.rowids) > MAX_POSTINGS:
                        break
                    state.postings[term] = posting
                    state.postings.move_to_end(term, last=False)  # least recently used: evicted first
                    state.postings_size += len(posting.rowids)
        except sqlite3.Error:
            logger.warning(
                "reading the keyword postings in the background failed; terms are read on use", exc_info=True
            )
        finally:
            self._preloaded.set()

    def _load_rows(self, conn: sqlite3.Connection, state: _State) -> None:
        """Rows above ``state.covered``: their lengths and knowledge bases."""
        sizes = conn.execute(
            "SELECT id, sz FROM chunks_fts_docsize WHERE id > ? ORDER BY id", (state.covered,)
        ).fetchall()
        # The first load reads the (rowid, knowledge base) index alone; later ones a rowid range.
        chunk_sql = "SELECT rowid, knowledge_base_id FROM chunks"
        chunks = (
            conn.execute(chunk_sql + " WHERE rowid > ?", (state.covered,)) if state.covered else conn.execute(chunk_sql)
        )
        chunk_rows = chunks.fetchall()
        if not sizes and not chunk_rows:
            return
        ids = np.fromiter((r[0] for r in sizes), dtype=np.int64, count=len(sizes))
        lengths = _varint_sums(b"".join(r[1] for r in sizes), len(COLUMNS))
        chunk_ids = np.fromiter((r[0] for r in chunk_rows), dtype=np.int64, count=len(chunk_rows))
        codes = np.fromiter(
            (state.kb_codes.setdefault(r[1], len(state.kb_codes)) for r in chunk_rows),
            dtype=np.int32,
            count=len(chunk_rows),
        )
        top = max(int(ids.max()) if len(ids) else 0, int(chunk_ids.max()) if len(chunk_ids) else 0)
        state.doclen = _grown(state.doclen, top + 1, 0.0)
        state.present = _grown(state.present, top + 1, False)
        state.kb_code = _grown(state.kb_code, top + 1, -1)
        state.doclen[ids] = lengths
        state.present[ids] = True
        state.kb_code[chunk_ids] = codes
        state.rows += len(ids)
        state.tokens += int(lengths.sum())
        state.covered = max(state.covered, top)

    @staticmethod
    def _delete(state: _State, rowids: npt.NDArray[np.int64]) -> None:
        rowids = rowids[rowids < len(state.present)]
        gone = rowids[state.present[rowids]]
        state.rows -= len(gone)
        state.tokens -= int(state.doclen[gone].sum())
        state.present[rowids] = False
        state.doclen[rowids] = 0.0
        state.kb_code[rowids] = -1
        state.deletes += 1

    def _postings(self, conn: sqlite3.Connection, state: _State, term: str) -> _Postings:
        """The term's postings over the loaded rows.

        Read once, then topped up with appended rows and pruned of deleted ones.
        """
        posting = state.postings.get(term)
        if posting is None:
            posting = _Postings(np.zeros(0, dtype=np.int64), np.zeros(0), covered=0, deletes=state.deletes)
            state.postings[term] = posting
        else:
            state.postings.move_to_end(term)
            state.postings_size -= len(posting.rowids)
        if posting.deletes != state.deletes:
            keep = state.present[posting.rowids]
            posting.rowids, posting.freq, posting.deletes = posting.rowids[keep], posting.freq[keep], state.deletes
        if posting.covered < state.covered:
            rowids, freq = self._read_postings(conn, term, posting.covered, state.covered)
            posting.rowids = np.concatenate([posting.rowids, rowids])
            posting.freq = np.concatenate([posting.freq, freq])
            posting.covered = state.covered
        state.postings_size += len(posting.rowids)
        while state.postings_size > MAX_POSTINGS and len(state.postings) > 1:
            _, dropped = state.postings.popitem(last=False)
            state.postings_size -= len(dropped.rowids)
        return posting

    def _read_postings(
        self, conn: sqlite3.Connection, term: str, above: int, upto: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The rows in (above, upto] holding ``term``, with its weighted frequency in each.

        The rows in (above, upto] holding ``term`` and its frequency in each: the column weight of each instance, added
        up (a count times the weight, which is the same sum while weights are whole numbers, as the engine's are). The
        rows come as one comma-separated string: three times faster than a row object per instance for a common term.
        """
        sql = f"SELECT group_concat(doc) FROM {_INSTANCES} WHERE term = ? AND doc > ? AND doc <= ?"
        if len(set(self._weights)) == 1:
            parts: list[tuple[float, tuple[object, ...]]] = [(self._weights[0], (term, above, upto))]
        else:
            sql += " AND col = ?"
            parts = [(w, (term, above, upto, name)) for name, w in zip(COLUMNS, self._weights, strict=True)]
        rowids: list[npt.NDArray[np.int64]] = []
        freqs: list[npt.NDArray[np.float64]] = []
        for weight, args in parts:
            text = conn.execute(sql, args).fetchone()[0]
            if text:
                docs, counts = np.unique(np.array(text.split(","), dtype=np.int64), return_counts=True)
                rowids.append(docs)
                freqs.append(counts.astype(np.float64) * weight)
        if not rowids:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if len(rowids) == 1:
            return rowids[0], freqs[0]
        docs, where = np.unique(np.concatenate(rowids), return_inverse=True)
        summed = np.bincount(where, weights=np.concatenate(freqs), minlength=len(docs))
        return docs.astype(np.int64), summed.astype(np.float64)
