"""One SQLite file for the embedded runtime: stores, the event log and the keyword index."""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 4

# How the keyword index cuts text into terms; the engine's in-memory index cuts query words the same way.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS knowledge_bases (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    embedding_model TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_by_tenant ON knowledge_bases(tenant_id, name);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    filename TEXT NOT NULL DEFAULT '',
    file_type TEXT NOT NULL DEFAULT 'text',
    description TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL DEFAULT '',
    chunk_count INTEGER NOT NULL DEFAULT 0,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_by_kb ON documents(knowledge_base_id, created_at);
CREATE TABLE IF NOT EXISTS tags (
    id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    color TEXT NOT NULL DEFAULT '',
    sort_order INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (knowledge_base_id, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS tags_by_name ON tags(knowledge_base_id, name);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL,
    knowledge_base_id TEXT NOT NULL,
    knowledge_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    chunk_type TEXT NOT NULL DEFAULT 'text',
    content TEXT NOT NULL,
    header TEXT NOT NULL DEFAULT '',
    parent_chunk_id TEXT NOT NULL DEFAULT '',
    pre_chunk_id TEXT NOT NULL DEFAULT '',
    next_chunk_id TEXT NOT NULL DEFAULT '',
    start_at INTEGER NOT NULL DEFAULT 0,
    end_at INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    searchable INTEGER NOT NULL DEFAULT 1,
    enabled INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(knowledge_id, chunk_index);
CREATE INDEX IF NOT EXISTS chunks_by_kb ON chunks(knowledge_base_id);
-- A document stored in several transactions (more chunks than one should hold the writer's lock for) until its last
-- part commits: left out of the indexing queue meanwhile, and removed whole if its store stops for good.
CREATE TABLE IF NOT EXISTS documents_storing (
    document_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    touched_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunk_vectors (
    chunk_rowid INTEGER PRIMARY KEY REFERENCES chunks(rowid) ON DELETE CASCADE,
    knowledge_base_id TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_by_kb ON chunk_vectors(knowledge_base_id, model);
-- Extra vectors of a chunk: the questions generated for it at ingestion (ragline.ingest.enrichment). A
-- vector search hit on one is a hit on its chunk.
CREATE TABLE IF NOT EXISTS question_vectors (
    chunk_rowid INTEGER NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    knowledge_base_id TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (chunk_rowid, position)
);
CREATE INDEX IF NOT EXISTS question_vectors_by_kb ON question_vectors(knowledge_base_id, model);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    content, title, tokenize = '{tokenizer}'
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    knowledge_base_ids TEXT NOT NULL DEFAULT '[]',
    options TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_tenant ON sessions(tenant_id, updated_at);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    knowledge_references TEXT NOT NULL DEFAULT '[]',
    is_completed INTEGER NOT NULL DEFAULT 0,
    stop_reason TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, created_at);
CREATE INDEX IF NOT EXISTS messages_by_request ON messages(request_id);
CREATE INDEX IF NOT EXISTS messages_incomplete ON messages(created_at) WHERE is_completed = 0 AND role = 'assistant';
CREATE TABLE IF NOT EXISTS index_versions (
    knowledge_base_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS keyword_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    first_rowid INTEGER NOT NULL DEFAULT 0,
    rowids BLOB NOT NULL DEFAULT x''
);
{stream_events}"""

# The turns' event logs and the leases of the processes running them. In a database of their own
# (``events.db``): an append or a heartbeat never waits for a write of the knowledge stores (a 20 MB upload's
# chunks are one transaction of seconds), so no stream pauses for one.
_STREAM_EVENTS = """
CREATE TABLE IF NOT EXISTS stream_events (
    stream_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (stream_key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turn_runners (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    process_start TEXT NOT NULL DEFAULT '',
    heartbeat_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS turn_leases (
    stream_key TEXT PRIMARY KEY,
    runner_id TEXT NOT NULL,
    acquired_at REAL NOT NULL
);
"""
_SCHEMA = _SCHEMA.replace("{tokenizer}", FTS_TOKENIZER).replace("{stream_events}", _STREAM_EVENTS)


# (table, column, definition) added since the first schema, applied to older databases on open.
_ADDED_COLUMNS = (
    ("documents", "tags", "TEXT NOT NULL DEFAULT '[]'"),
    ("sessions", "description", "TEXT NOT NULL DEFAULT ''"),
    ("sessions", "pinned_at", "TEXT"),
    ("sessions", "title_provisional", "INTEGER NOT NULL DEFAULT 0"),
    ("messages", "feedback", "TEXT NOT NULL DEFAULT ''"),
    ("messages", "feedback_comment", "TEXT NOT NULL DEFAULT ''"),
    ("messages", "alternative_of", "TEXT NOT NULL DEFAULT ''"),
    ("messages", "user_id", "TEXT NOT NULL DEFAULT ''"),
    ("documents", "summary_status", "TEXT NOT NULL DEFAULT 'none'"),
    ("messages", "images", "TEXT NOT NULL DEFAULT '[]'"),
    ("knowledge_bases", "wiki_enabled", "INTEGER NOT NULL DEFAULT 0"),
    ("knowledge_bases", "graph_extraction_enabled", "INTEGER NOT NULL DEFAULT 0"),
    ("knowledge_bases", "language", "TEXT NOT NULL DEFAULT ''"),
    ("knowledge_bases", "embedding_model_auto", "INTEGER NOT NULL DEFAULT 0"),
    ("knowledge_bases", "pinned_at", "TEXT"),
    ("knowledge_bases", "settings", "TEXT NOT NULL DEFAULT '{}'"),
    # Document statuses: rows from before them were indexed when stored.
    ("documents", "status", "TEXT NOT NULL DEFAULT 'indexed'"),
    ("documents", "reason", "TEXT NOT NULL DEFAULT ''"),
    ("documents", "embedded_count", "INTEGER NOT NULL DEFAULT 0"),
    ("documents", "size_bytes", "INTEGER NOT NULL DEFAULT 0"),
    ("documents", "pages", "INTEGER NOT NULL DEFAULT 0"),
    ("documents", "embedding_model", "TEXT NOT NULL DEFAULT ''"),
    ("documents", "updated_at", "TEXT NOT NULL DEFAULT ''"),
    # Vectors appended since a process loaded a knowledge base's matrix are read by this sequence.
    ("chunk_vectors", "seq", "INTEGER NOT NULL DEFAULT 0"),
    ("index_versions", "appended", "INTEGER NOT NULL DEFAULT 0"),
)

# Indexes on added columns (created after the columns exist).
_ADDED_INDEXES = (
    "CREATE INDEX IF NOT EXISTS vectors_by_seq ON chunk_vectors(knowledge_base_id, model, seq)",
    "CREATE INDEX IF NOT EXISTS documents_pending ON documents(status) WHERE status = 'pending'",
)


class Database:
    """A shared SQLite connection (WAL) for writes, guarded by a lock, and connections of their own for reads.

    Reads do not wait for writes: in WAL mode a reader sees the last committed state while a writer works, so
    :meth:`query`, :meth:`query_one` and :meth:`snapshot` read on other connections than the writer's (a search used to
    wait 5.7 s behind the transaction that stored a 28,000-chunk upload). A thread inside a transaction reads on the
    writer's connection: it sees what it has written.
    """

    def __init__(self, path: str | Path, *, event_log: bool = False) -> None:
        """Open (or create) the database at ``path`` in WAL mode and bring its schema up to date.

        With ``event_log``, the database holds the turns' event logs alone.
        """
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None  # the thread inside a transaction (or a snapshot) of the shared connection
        # Idle read connections (one per concurrent reader, made on demand); ":memory:" has one connection only.
        # One in use is closed when its statement is done, never under it: closing a connection another thread steps
        # a statement on crashes the interpreter (a read still running in a worker thread when its store is closed).
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._readers_lock = threading.Lock()
        self._closed = False
        self._snapshot_lock = threading.Lock()
        self._snapshot_conn: sqlite3.Connection | None = None
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=10000")
        with self._lock:
            if event_log:
                self._conn.executescript(_STREAM_EVENTS)
                return
            # executescript commits on its own; the statements are all idempotent.
            self._conn.executescript(_SCHEMA)
            for table, column, definition in _ADDED_COLUMNS:
                self._add_column(table, column, definition)
            for statement in _ADDED_INDEXES:
                self._conn.execute(statement)
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _add_column(self, table: str, column: str, definition: str) -> None:
        """Columns added after a database was created: CREATE TABLE IF NOT EXISTS does not add them."""
        columns = {row["name"] for row in self._conn.execute(f"PRAGMA table_info({table})")}
        if column not in columns:
            self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``: a writer takes the lock up front instead of upgrading later.

        Nested use joins the outer transaction, so a document and its index entries commit together.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth, self._owner = 1, threading.get_ident()
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            finally:
                self._depth, self._owner = 0, None
            self._conn.execute("COMMIT")

    def _reader_connection(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    def _put_back(self, conn: sqlite3.Connection) -> None:
        """An idle reader rejoins the pool, or is closed if the database was closed while it read."""
        with self._readers_lock:  # not the writer's lock: a reader is returned while a transaction is open
            if not self._closed:
                self._readers.put(conn)
                return
        conn.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection one read statement runs on.

        The shared one (under its lock) for an in-memory database or inside this thread's transaction, which must
        see what it wrote; otherwise a pooled reader's.
        """
        if self.path == ":memory:" or self._owner == threading.get_ident():
            with self._lock:
                yield self._conn
            return
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._reader_connection()
        try:
            yield conn
        finally:
            if conn.in_transaction:  # an error left its read open: it would pin the WAL
                conn.execute("ROLLBACK")
            self._put_back(conn)

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection | None]:
        """Several reads that see one committed state (a deferred read transaction), on one connection kept for them.

        Snapshots take turns (their connection keeps the temporary tables its callers make); writers do not wait for
        them nor they for writers. None inside a transaction of this thread: what it reads there may yet be rolled
        back, so the caller must not keep it.
        """
        if self.path == ":memory:":
            with self._lock:
                if self._depth or self._conn.in_transaction:
                    yield None
                    return
                self._conn.execute("BEGIN")
                self._depth, self._owner = 1, threading.get_ident()
                try:
                    yield self._conn
                finally:
                    self._depth, self._owner = 0, None
                    self._conn.execute("COMMIT")
            return
        if self._owner == threading.get_ident():
            yield None
            return
        with self._snapshot_lock:
            if self._snapshot_conn is None:
                self._snapshot_conn = self._reader_connection()
            conn = self._snapshot_conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[sqlite3.Row]:
        """Every row of one statement, as last committed (this thread's transaction: as it stands)."""
        with self._reading() as conn:
            return conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> sqlite3.Row | None:
        """The first row of one statement, or None."""
        with self._reading() as conn:
            cursor = conn.execute(sql, params)
            try:
                found: sqlite3.Row | None = cursor.fetchone()
            finally:
                cursor.close()  # its statement ends: no read transaction left open
            return found

    def execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> int:
        """One statement in its own transaction; returns the affected row count."""
        with self.transaction() as conn:
            return conn.execute(sql, params).rowcount

    def adopt_event_logs(self, older: str | Path) -> int:
        """Copies the event logs an older database at ``older`` holds into this one, once (when this one has none).

        A data directory from before the logs had their own database keeps its turns' logs. The number copied.
        """
        if not Path(older).exists():
            return 0
        with self._lock:
            if self._conn.execute("SELECT 1 FROM stream_events LIMIT 1").fetchone() is not None:
                return 0
            self._conn.execute("ATTACH DATABASE ? AS older", (str(older),))
            try:
                if not self._conn.execute(
                    "SELECT 1 FROM older.sqlite_master WHERE type = 'table' AND name = 'stream_events'"
                ).fetchone():
                    return 0
                self._conn.execute("BEGIN IMMEDIATE")
                copied = self._conn.execute(
                    "INSERT OR IGNORE INTO stream_events SELECT stream_key, seq, event FROM older.stream_events"
                ).rowcount
                self._conn.execute("COMMIT")
                return int(copied)
            finally:
                self._conn.execute("DETACH DATABASE older")

    def close(self) -> None:
        """Close the connections; the object is unusable after (its reads and writes raise ProgrammingError).

        Waits for a running snapshot and the write transaction; a read running on a pooled reader ends first and its
        connection is closed as it is put back.
        """
        with self._snapshot_lock, self._lock, self._readers_lock:
            self._closed = True
            while True:
                try:
                    self._readers.get_nowait().close()
                except queue.Empty:
                    break
            if self._snapshot_conn is not None:
                self._snapshot_conn.close()
            self._conn.close()
