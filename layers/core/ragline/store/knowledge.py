"""Knowledge bases, documents and chunks in SQLite."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager

from ragline.store.db import Database
from ragline.store.ids import new_id, utc_ago, utc_now
from ragline.store.keyword_changes import record_chunk_updates, record_keyword_deletes, record_keyword_reset
from ragline.store.models import (
    Chunk,
    Document,
    DocumentStatus,
    DocumentTotals,
    DuplicateName,
    KnowledgeBase,
    KnowledgeBaseSettings,
    SummaryStatus,
    document_changes,
    retagged,
)


def _kb(row: object) -> KnowledgeBase:
    data = dict(row)  # type: ignore[call-overload]
    for flag in ("wiki_enabled", "graph_extraction_enabled", "embedding_model_auto"):
        data[flag] = bool(data.get(flag))
    return KnowledgeBase(**data)


def _document(row: object) -> Document:
    data = dict(row)  # type: ignore[call-overload]
    data["tags"] = json.loads(data.get("tags") or "[]")
    return Document(**data)


def chunk_from_row(row: object) -> Chunk:
    """A chunk from its database row (metadata stored as JSON)."""
    data = dict(row)  # type: ignore[call-overload]
    data["metadata"] = json.loads(data.get("metadata") or "{}")
    return Chunk(**data)


_CHUNK_COLUMNS = (
    "id, tenant_id, knowledge_base_id, knowledge_id, chunk_index, chunk_type, content, header, parent_chunk_id,"
    " pre_chunk_id, next_chunk_id, start_at, end_at, metadata, searchable, enabled"
)


class SqliteKnowledgeStore:
    """Knowledge bases, documents and chunks in SQLite.

    Every read takes the tenant: another tenant's id reads as absent.
    """

    def __init__(self, db: Database) -> None:
        """Knowledge kept in ``db``: knowledge bases, documents, chunks, their vectors and keyword rows."""
        self._db = db

    def create_knowledge_base(
        self,
        tenant_id: str,
        name: str,
        embedding_model: str,
        description: str = "",
        wiki_enabled: bool = False,
        graph_extraction_enabled: bool = False,
        embedding_model_auto: bool = False,
        settings: KnowledgeBaseSettings | None = None,
    ) -> KnowledgeBase:
        """A new knowledge base of the tenant; a name the tenant already uses raises :class:`DuplicateName`."""
        if self.knowledge_base_by_name(tenant_id, name) is not None:
            raise DuplicateName(name)
        kb = KnowledgeBase(
            id=new_id(),
            tenant_id=tenant_id,
            name=name,
            description=description,
            embedding_model=embedding_model,
            created_at=utc_now(),
            wiki_enabled=wiki_enabled,
            graph_extraction_enabled=graph_extraction_enabled,
            embedding_model_auto=embedding_model_auto,
            settings=settings or KnowledgeBaseSettings(),
        )
        self._db.execute(
            "INSERT INTO knowledge_bases (id, tenant_id, name, description, embedding_model, created_at, wiki_enabled,"
            " graph_extraction_enabled, embedding_model_auto, language, settings)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                kb.id,
                kb.tenant_id,
                kb.name,
                kb.description,
                kb.embedding_model,
                kb.created_at,
                int(kb.wiki_enabled),
                int(kb.graph_extraction_enabled),
                int(kb.embedding_model_auto),
                kb.language,
                kb.settings.model_dump_json(),
            ),
        )
        return kb

    def set_embedding_model(
        self, tenant_id: str, kb_id: str, embedding_model: str, *, language: str | None = None, auto: bool | None = None
    ) -> KnowledgeBase | None:
        """The knowledge base's embedding model (and detected language, and whether the model is chosen by detection).

        None when it is not this tenant's.
        """
        kb = self.knowledge_base(tenant_id, kb_id)
        if kb is None:
            return None
        updated = kb.model_copy(
            update={
                "embedding_model": embedding_model,
                "language": kb.language if language is None else language,
                "embedding_model_auto": kb.embedding_model_auto if auto is None else auto,
            }
        )
        self._db.execute(
            "UPDATE knowledge_bases SET embedding_model = ?, language = ?, embedding_model_auto = ?"
            " WHERE id = ? AND tenant_id = ?",
            (updated.embedding_model, updated.language, int(updated.embedding_model_auto), kb_id, tenant_id),
        )
        return updated

    def knowledge_base(self, tenant_id: str, kb_id: str) -> KnowledgeBase | None:
        """The tenant's knowledge base ``kb_id``, or None when it is not the tenant's."""
        row = self._db.query_one("SELECT * FROM knowledge_bases WHERE id = ? AND tenant_id = ?", (kb_id, tenant_id))
        return _kb(row) if row else None

    def knowledge_bases(self, tenant_id: str, kb_ids: Iterable[str]) -> list[KnowledgeBase]:
        """The tenant's knowledge bases among ``kb_ids`` (each once, unknown ones left out)."""
        ids = list(dict.fromkeys(kb_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self._db.query(
            f"SELECT * FROM knowledge_bases WHERE tenant_id = ? AND id IN ({marks})", (tenant_id, *ids)
        )
        by_id = {row["id"]: _kb(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def knowledge_base_any_tenant(self, kb_id: str) -> KnowledgeBase | None:
        """The knowledge base by id whoever owns it, for internal settings lookups only."""
        row = self._db.query_one("SELECT * FROM knowledge_bases WHERE id = ?", (kb_id,))
        return _kb(row) if row else None

    def knowledge_base_by_name(self, tenant_id: str, name: str) -> KnowledgeBase | None:
        """The tenant's knowledge base called ``name``, or None."""
        row = self._db.query_one("SELECT * FROM knowledge_bases WHERE tenant_id = ? AND name = ?", (tenant_id, name))
        return _kb(row) if row else None

    def list_knowledge_bases(self, tenant_id: str) -> list[KnowledgeBase]:
        """The tenant's knowledge bases, oldest first."""
        rows = self._db.query("SELECT * FROM knowledge_bases WHERE tenant_id = ? ORDER BY created_at", (tenant_id,))
        return [_kb(r) for r in rows]

    def document_counts(self, kb_ids: Sequence[str]) -> dict[str, int]:
        """How many documents each knowledge base holds; knowledge bases without any are left out."""
        if not kb_ids:
            return {}
        marks = ",".join("?" * len(kb_ids))
        rows = self._db.query(
            f"SELECT knowledge_base_id, COUNT(*) AS n FROM documents WHERE knowledge_base_id IN ({marks})"
            " GROUP BY knowledge_base_id",
            tuple(kb_ids),
        )
        return {row["knowledge_base_id"]: row["n"] for row in rows}

    def insert_document(self, document: Document, chunks: Sequence[Chunk]) -> None:
        """Document and chunks in one transaction (joins the caller's transaction when there is one)."""
        with self._db.transaction() as conn:
            self._insert_document_row(conn, document, sum(1 for c in chunks if c.searchable))
            self._insert_chunks(conn, chunks)

    # A document stored in parts --------------------------------------------------------------------------
    def begin_document(self, document: Document, chunks: Sequence[Chunk], *, searchable_total: int) -> None:
        """The document's row and its first ``chunks``, marked as being stored.

        Not handed to indexing until :meth:`finish_document`; removed by :meth:`sweep_unfinished` if its store stops
        for good. ``searchable_total`` is the searchable chunks of all its parts (the document's ``chunk_count``).
        """
        with self._db.transaction() as conn:
            self._insert_document_row(conn, document, searchable_total)
            conn.execute(
                "INSERT INTO documents_storing (document_id, touched_at) VALUES (?, ?)", (document.id, utc_now())
            )
            self._insert_chunks(conn, chunks)

    def add_chunks(self, document: Document, chunks: Sequence[Chunk]) -> bool:
        """The next part of a document :meth:`begin_document` began; False when the document is gone (deleted)."""
        with self._db.transaction() as conn:
            touched = conn.execute(
                "UPDATE documents_storing SET touched_at = ? WHERE document_id = ?", (utc_now(), document.id)
            ).rowcount
            if not touched:
                return False
            self._insert_chunks(conn, chunks)
            return True

    def finish_document(self, document_id: str) -> None:
        """The document's last part is stored: it is a whole pending document from now on."""
        self._db.execute("DELETE FROM documents_storing WHERE document_id = ?", (document_id,))

    def sweep_unfinished(self, untouched_for_s: float) -> list[Document]:
        """Removes the documents whose store stopped part-way (untouched this long: its process is gone)."""
        rows = self._db.query(
            "SELECT d.* FROM documents d JOIN documents_storing s ON s.document_id = d.id WHERE s.touched_at <= ?",
            (utc_ago(untouched_for_s),),
        )
        removed = [_document(r) for r in rows]
        for document in removed:
            self.delete_document(document.tenant_id, document.id)
        return removed

    @staticmethod
    def _insert_document_row(conn: sqlite3.Connection, document: Document, searchable: int) -> None:
        conn.execute(
            "INSERT INTO documents (id, tenant_id, knowledge_base_id, title, filename, file_type, description,"
            " source, content_hash, chunk_count, enabled, created_at, tags, status, reason, embedded_count,"
            " size_bytes, pages, embedding_model, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                document.id,
                document.tenant_id,
                document.knowledge_base_id,
                document.title,
                document.filename,
                document.file_type,
                document.description,
                document.source,
                document.content_hash,
                searchable,
                int(document.enabled),
                document.created_at,
                json.dumps(document.tags, ensure_ascii=False),
                document.status.value,
                document.reason,
                document.embedded_count,
                document.size_bytes,
                document.pages,
                document.embedding_model,
                document.updated_at or document.created_at,
            ),
        )

    @staticmethod
    def _insert_chunks(conn: sqlite3.Connection, chunks: Sequence[Chunk]) -> None:
        conn.executemany(
            f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES ({','.join('?' * 16)})",
            [
                (
                    c.id,
                    c.tenant_id,
                    c.knowledge_base_id,
                    c.knowledge_id,
                    c.chunk_index,
                    c.chunk_type,
                    c.content,
                    c.header,
                    c.parent_chunk_id,
                    c.pre_chunk_id,
                    c.next_chunk_id,
                    c.start_at,
                    c.end_at,
                    json.dumps(c.metadata, ensure_ascii=False),
                    int(c.searchable),
                    int(c.enabled),
                )
                for c in chunks
            ],
        )

    def document(self, tenant_id: str, document_id: str) -> Document | None:
        """The tenant's document ``document_id``, or None when it is not the tenant's."""
        row = self._db.query_one("SELECT * FROM documents WHERE id = ? AND tenant_id = ?", (document_id, tenant_id))
        return _document(row) if row else None

    def documents(self, tenant_id: str, kb_id: str, limit: int = 1000, offset: int = 0) -> list[Document]:
        """One page of a knowledge base's documents, oldest first."""
        rows = self._db.query(
            "SELECT * FROM documents WHERE tenant_id = ? AND knowledge_base_id = ? ORDER BY created_at LIMIT ? OFFSET ?",
            (tenant_id, kb_id, limit, offset),
        )
        return [_document(r) for r in rows]

    def document_totals(self, tenant_id: str, kb_id: str) -> DocumentTotals:
        """Every document of the knowledge base counted, however many (not one page of them)."""
        row = self._db.query_one(
            "SELECT COUNT(*) AS documents, COALESCE(SUM(chunk_count), 0) AS chunks,"
            " COALESCE(SUM(status = 'pending'), 0) AS processing"
            " FROM documents WHERE tenant_id = ? AND knowledge_base_id = ?",
            (tenant_id, kb_id),
        )
        return DocumentTotals() if row is None else DocumentTotals(**dict(row))

    def set_document_status(
        self,
        tenant_id: str,
        document_id: str,
        status: DocumentStatus,
        *,
        reason: str = "",
        embedded_count: int | None = None,
        embedding_model: str | None = None,
    ) -> Document | None:
        """The document's status, failure reason and progress (fields left None keep their value).

        None when the document is not this tenant's (or is gone).
        """
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT * FROM documents WHERE id = ? AND tenant_id = ?", (document_id, tenant_id)
            ).fetchone()
            if row is None:
                return None
            document = _document(row)
            updated = document.model_copy(
                update={
                    "status": status,
                    "reason": reason,
                    "embedded_count": document.embedded_count if embedded_count is None else embedded_count,
                    "embedding_model": document.embedding_model if embedding_model is None else embedding_model,
                    "updated_at": utc_now(),
                }
            )
            conn.execute(
                "UPDATE documents SET status = ?, reason = ?, embedded_count = ?, embedding_model = ?, updated_at = ?"
                " WHERE id = ?",
                (
                    updated.status.value,
                    updated.reason,
                    updated.embedded_count,
                    updated.embedding_model,
                    updated.updated_at,
                    document_id,
                ),
            )
        return updated

    def set_summary_status(self, tenant_id: str, document_id: str, status: SummaryStatus) -> Document | None:
        """One UPDATE of the documents row; the document as it is now."""
        with self._db.transaction() as conn:
            updated = conn.execute(
                "UPDATE documents SET summary_status = ? WHERE id = ? AND tenant_id = ?",
                (status.value, document_id, tenant_id),
            ).rowcount
        return self.document(tenant_id, document_id) if updated else None

    def pending_documents(self, limit: int = 100, updated_before: str = "") -> list[Document]:
        """Documents of every tenant still waiting for their vectors, oldest first.

        With ``updated_before``, only those nobody has reported progress on since then (abandoned work).
        """
        # A document still being stored (in parts) is not whole yet.
        sql = (
            "SELECT * FROM documents WHERE status = 'pending' AND id NOT IN (SELECT document_id FROM documents_storing)"
        )
        args: list[object] = []
        if updated_before:
            sql += " AND updated_at < ?"
            args.append(updated_before)
        rows = self._db.query(sql + " ORDER BY created_at LIMIT ?", [*args, limit])
        return [_document(r) for r in rows]

    def documents_by_hash(self, tenant_id: str, kb_id: str, content_hash: str) -> Document | None:
        """The tenant's document of this knowledge base with this content hash (a duplicate upload), or None."""
        row = self._db.query_one(
            "SELECT * FROM documents WHERE tenant_id = ? AND knowledge_base_id = ? AND content_hash = ?",
            (tenant_id, kb_id, content_hash),
        )
        return _document(row) if row else None

    def document_ids_with_tags(self, tenant_id: str, kb_id: str, tags: Sequence[str]) -> list[str]:
        """Documents of a knowledge base carrying any of ``tags``."""
        wanted = set(tags)
        rows = self._db.query(
            "SELECT id, tags FROM documents WHERE tenant_id = ? AND knowledge_base_id = ? AND tags != '[]'",
            (tenant_id, kb_id),
        )
        return [row["id"] for row in rows if wanted & set(json.loads(row["tags"]))]

    def chunks_of_document(self, tenant_id: str, document_id: str) -> list[Chunk]:
        """The document's chunks (parents and FAQ entries included), in document order."""
        rows = self._db.query(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE knowledge_id = ? AND tenant_id = ? ORDER BY chunk_index",
            (document_id, tenant_id),
        )
        return [chunk_from_row(r) for r in rows]

    def chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The tenant's chunks among ``chunk_ids``, in the order asked; unknown ones are left out."""
        if not chunk_ids:
            return []
        marks = ",".join("?" * len(chunk_ids))
        rows = self._db.query(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE tenant_id = ? AND id IN ({marks})",
            (tenant_id, *chunk_ids),
        )
        by_id = {row["id"]: chunk_from_row(row) for row in rows}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def atomic(self) -> AbstractContextManager[object]:
        """A document and its index entries commit together (the embedded engine shares this database)."""
        return self._db.transaction()

    def update_knowledge_base(
        self,
        tenant_id: str,
        kb_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
        settings: KnowledgeBaseSettings | None = None,
    ) -> KnowledgeBase | None:
        """Rename, re-describe, pin, unpin or re-set (``settings``, replaced whole) a knowledge base.

        None when it is not this tenant's.
        """
        with self._db.transaction() as conn:
            kb = self.knowledge_base(tenant_id, kb_id)
            if kb is None:
                return None
            changes: dict[str, str | None] = {}
            if pinned is not None and pinned != (kb.pinned_at is not None):
                changes["pinned_at"] = utc_now() if pinned else None
            if name is not None and name != kb.name:
                # The check and the write share one immediate transaction: no other writer between them.
                if self.knowledge_base_by_name(tenant_id, name) is not None:
                    raise DuplicateName(name)
                changes["name"] = name
            if description is not None and description != kb.description:
                changes["description"] = description
            if settings is not None and settings != kb.settings:
                changes["settings"] = settings.model_dump_json()
            if changes:
                assignments = ", ".join(f"{column} = ?" for column in changes)
                conn.execute(
                    f"UPDATE knowledge_bases SET {assignments} WHERE id = ? AND tenant_id = ?",
                    (*changes.values(), kb_id, tenant_id),
                )
        return _kb({**kb.model_dump(), **changes}) if changes else kb

    def delete_knowledge_base(self, tenant_id: str, kb_id: str) -> bool:
        """Removes the knowledge base.

        Its documents, chunks and vectors go with it (foreign keys), its keyword rows here.
        """
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT id FROM knowledge_bases WHERE id = ? AND tenant_id = ?", (kb_id, tenant_id)
            ).fetchone()
            if row is None:
                return False
            conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE knowledge_base_id = ?)",
                (kb_id,),
            )
            record_keyword_reset(conn)
            conn.execute("DELETE FROM knowledge_bases WHERE id = ?", (kb_id,))
            bump_index_version(conn, kb_id)
        return True

    def update_chunk(
        self,
        tenant_id: str,
        chunk_id: str,
        *,
        content: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, object] | None = None,
        searchable: bool | None = None,
    ) -> Chunk | None:
        """Change a chunk's text, enabled flag or metadata; None when it is not this tenant's."""
        changes: dict[str, object] = {}
        if content is not None:
            changes["content"] = content
        if enabled is not None:
            changes["enabled"] = int(enabled)
        if metadata is not None:
            changes["metadata"] = json.dumps(metadata, ensure_ascii=False)
        if searchable is not None:
            changes["searchable"] = int(searchable)
        with self._db.transaction() as conn:
            found = self.chunks(tenant_id, [chunk_id])
            if not found:
                return None
            if changes:
                assignments = ", ".join(f"{column} = ?" for column in changes)
                conn.execute(f"UPDATE chunks SET {assignments} WHERE id = ?", (*changes.values(), chunk_id))
                record_chunk_updates(
                    conn, [row[0] for row in conn.execute("SELECT rowid FROM chunks WHERE id = ?", (chunk_id,))]
                )
                bump_index_version(conn, found[0].knowledge_base_id)
            # Read back in the same transaction: a delete right after the commit (the document parsed again while
            # enrichment stored its questions) made the read after it an IndexError.
            updated = self.chunks(tenant_id, [chunk_id])
        return updated[0] if updated else None

    def delete_chunk(self, tenant_id: str, chunk_id: str) -> bool:
        """Remove one chunk, relinking its neighbours; False when it is not this tenant's."""
        with self._db.transaction() as conn:
            found = self.chunks(tenant_id, [chunk_id])
            if not found:
                return False
            chunk = found[0]
            rowids = [row[0] for row in conn.execute("SELECT rowid FROM chunks WHERE id = ?", (chunk_id,))]
            conn.execute("DELETE FROM chunks_fts WHERE rowid = (SELECT rowid FROM chunks WHERE id = ?)", (chunk_id,))
            record_keyword_deletes(conn, rowids)
            conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
            if chunk.pre_chunk_id:
                conn.execute(
                    "UPDATE chunks SET next_chunk_id = ? WHERE id = ?", (chunk.next_chunk_id, chunk.pre_chunk_id)
                )
            if chunk.next_chunk_id:
                conn.execute(
                    "UPDATE chunks SET pre_chunk_id = ? WHERE id = ?", (chunk.pre_chunk_id, chunk.next_chunk_id)
                )
            relinked = [
                row[0]
                for row in conn.execute(
                    "SELECT rowid FROM chunks WHERE id IN (?, ?) OR parent_chunk_id = ?",
                    (chunk.pre_chunk_id, chunk.next_chunk_id, chunk_id),
                )
            ]
            conn.execute("UPDATE chunks SET parent_chunk_id = '' WHERE parent_chunk_id = ?", (chunk_id,))
            record_chunk_updates(conn, relinked)
            if chunk.searchable:
                conn.execute(
                    "UPDATE documents SET chunk_count = MAX(0, chunk_count - 1) WHERE id = ?", (chunk.knowledge_id,)
                )
            bump_index_version(conn, chunk.knowledge_base_id)
        return True

    def update_document(
        self,
        tenant_id: str,
        document_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> Document | None:
        """Change a document's title, description or tags; None when it is not this tenant's."""
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT * FROM documents WHERE id = ? AND tenant_id = ?", (document_id, tenant_id)
            ).fetchone()
            if row is None:
                return None
            document = _document(row)
            changes = document_changes(document, title=title, description=description, tags=tags)
            if not changes:
                return document
            updated = document.model_copy(update={**changes, "updated_at": utc_now()})
            conn.execute(
                "UPDATE documents SET title = ?, description = ?, tags = ?, updated_at = ? WHERE id = ?",
                (
                    updated.title,
                    updated.description,
                    json.dumps(updated.tags, ensure_ascii=False),
                    updated.updated_at,
                    document_id,
                ),
            )
        return updated

    def replace_document_tag(self, tenant_id: str, kb_id: str, old: str, new: str | None) -> int:
        """Every document of the knowledge base carrying ``old`` carries ``new`` instead; how many changed."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                "SELECT id, tags FROM documents WHERE tenant_id = ? AND knowledge_base_id = ? AND tags != '[]'",
                (tenant_id, kb_id),
            ).fetchall()
            changed = 0
            for row in rows:
                tags = json.loads(row["tags"])
                if old in tags:
                    conn.execute(
                        "UPDATE documents SET tags = ? WHERE id = ?",
                        (json.dumps(retagged(tags, old, new), ensure_ascii=False), row["id"]),
                    )
                    changed += 1
        return changed

    def replace_document(self, document: Document, chunks: Sequence[Chunk]) -> bool:
        """In one transaction: the old record with its chunks, their vectors and keyword rows out, the new in."""
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT id FROM documents WHERE id = ? AND tenant_id = ? AND knowledge_base_id = ?",
                (document.id, document.tenant_id, document.knowledge_base_id),
            ).fetchone()
            if row is None:
                return False
            rowids = [row[0] for row in conn.execute("SELECT rowid FROM chunks WHERE knowledge_id = ?", (document.id,))]
            conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE knowledge_id = ?)",
                (document.id,),
            )
            record_keyword_deletes(conn, rowids)
            conn.execute("DELETE FROM documents WHERE id = ?", (document.id,))  # chunks and vectors follow
            self.insert_document(document.model_copy(update={"updated_at": utc_now()}), chunks)
            bump_index_version(conn, document.knowledge_base_id)
        return True

    def delete_document(self, tenant_id: str, document_id: str) -> bool:
        """Removes the document, its chunks, their vectors and keyword rows."""
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT knowledge_base_id FROM documents WHERE id = ? AND tenant_id = ?",
                (document_id, tenant_id),
            ).fetchone()
            if row is None:
                return False
            rowids = [row[0] for row in conn.execute("SELECT rowid FROM chunks WHERE knowledge_id = ?", (document_id,))]
            conn.execute(
                "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE knowledge_id = ?)",
                (document_id,),
            )
            record_keyword_deletes(conn, rowids)
            conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
            bump_index_version(conn, row["knowledge_base_id"])
        return True


def bump_index_version(conn: object, kb_id: str) -> None:
    """Tells every process's vector cache that this knowledge base's index changed."""
    conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO index_versions (knowledge_base_id, version) VALUES (?, 1)"
        " ON CONFLICT(knowledge_base_id) DO UPDATE SET version = version + 1",
        (kb_id,),
    )
