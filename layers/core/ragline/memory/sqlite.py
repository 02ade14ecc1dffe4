"""Memories in the embedded runtime's SQLite database, in a table this adapter creates for itself."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ragline.memory.models import Memory
from ragline.memory.store import LOAD_LIMIT, Memories, MemoryStore, vector_bytes, vector_from_bytes
from ragline.store.db import Database

# No foreign keys: a memory outlives the session it came from, and tenants are checked by the API.
_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS memories (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        content TEXT NOT NULL,
        source_session_id TEXT NOT NULL DEFAULT '',
        source_message_id TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        embedding_model TEXT NOT NULL DEFAULT '',
        vector BLOB
    )
    """,
    "CREATE INDEX IF NOT EXISTS memories_by_user ON memories(tenant_id, user_id, updated_at)",
)
_COLUMNS = (
    "id, tenant_id, user_id, content, source_session_id, source_message_id, created_at, updated_at,"
    " embedding_model, vector"
)


def _memory(row: Any) -> Memory:
    data = dict(row)
    data["vector"] = vector_from_bytes(data["vector"])
    return Memory(**data)


class SqliteMemoryStore(MemoryStore):
    """The ``memories`` table of the shared :class:`Database`; created on construction, idempotently."""

    def __init__(self, db: Database) -> None:
        """Memories kept in ``db``, their table created if missing."""
        self._db = db
        for statement in _SCHEMA:
            db.execute(statement)

    def _writing(self) -> AbstractContextManager[object]:
        # One transaction per add: a concurrent add of the same fact waits and then sees it as a duplicate.
        return self._db.transaction()

    def _load(self, tenant_id: str, user_id: str) -> Memories:
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM memories WHERE tenant_id = ? AND user_id = ? ORDER BY updated_at DESC LIMIT ?",
            (tenant_id, user_id, LOAD_LIMIT),
        )
        return [_memory(row) for row in rows]

    def _put(self, memory: Memory) -> None:
        self._db.execute(
            f"INSERT OR REPLACE INTO memories ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id,
                memory.tenant_id,
                memory.user_id,
                memory.content,
                memory.source_session_id,
                memory.source_message_id,
                memory.created_at,
                memory.updated_at,
                memory.embedding_model,
                vector_bytes(memory.vector) if memory.vector is not None else None,
            ),
        )

    def _remove(self, tenant_id: str, user_id: str, memory_ids: Sequence[str]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "DELETE FROM memories WHERE tenant_id = ? AND user_id = ? AND id = ?",
                [(tenant_id, user_id, memory_id) for memory_id in memory_ids],
            )

    def delete(self, tenant_id: str, user_id: str, memory_id: str) -> bool:
        """Delete one memory of this user; False when there is none with that id."""
        deleted = self._db.execute(
            "DELETE FROM memories WHERE tenant_id = ? AND user_id = ? AND id = ?", (tenant_id, user_id, memory_id)
        )
        return deleted > 0

    def delete_all(self, tenant_id: str, user_id: str) -> int:
        """Delete every memory of this user; returns how many were deleted."""
        return self._db.execute("DELETE FROM memories WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id))
