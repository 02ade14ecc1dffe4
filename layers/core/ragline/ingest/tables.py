"""Ingesting table files (CSV, TSV, Excel): a document per table, described by summary and column chunks.

Table files do not go through the text chunker: cutting rows into passages would give search pieces
of rows that match no question, and analysis needs the rows whole. Instead each table becomes a document
whose chunks describe it (:mod:`ragline.tables.chunks`), and whose rows are stored as a normalised CSV
in a :class:`~ragline.tables.store.TableStore` under the document's id, where the DATA_ANALYSIS stage
loads them.

:class:`TableIngestor` stores and indexes the same way ``IngestService`` does (same knowledge store,
engine and embedder, one transaction per document, duplicates found by content hash), so the
ingestion service routes table files here without either module depending on the other's internals.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragline.ingest.indexing import embed_passages, embedding_text
from ragline.ingest.service import IngestResult, store_document
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.store.base import KnowledgeStore
from ragline.store.ids import new_id
from ragline.store.models import Chunk, Document, KnowledgeBase
from ragline.tables.chunks import TableChunk, table_chunks
from ragline.tables.parse import TableData, is_table_file, parse_table_file
from ragline.tables.store import TableStore

__all__ = ["TableDocumentInput", "TableIngestor", "is_table_file", "table_document_input"]

logger = logging.getLogger(__name__)

# Prefix of a table's content hash, so a table and a text document with the same bytes never collide.
HASH_NAMESPACE = b"table\x00"


@dataclass(frozen=True)
class TableDocumentInput:
    """One table ready to store: its data, its passages, the CSV kept for analysis and its content hash."""

    table: TableData
    chunks: list[TableChunk]
    csv_bytes: bytes
    content_hash: str
    filename: str
    file_type: str


def table_document_input(filename: str, raw: bytes, *, title: str = "") -> list[TableDocumentInput]:
    """Parse a table file into one input per table (one per non-empty worksheet for Excel).

    ``title`` replaces the file's name in the tables' titles. Raises ``UnsupportedFile`` when the file
    has no readable table.
    """
    file_type = Path(filename).suffix.lower().lstrip(".")
    tables = parse_table_file(filename, raw)
    inputs = []
    for table in tables:
        if title:
            table.title = f"{title} / {table.sheet}" if len(tables) > 1 else title
        csv_bytes = table.to_csv_bytes()
        # The sheet is part of the identity: two sheets with the same cells are still two tables.
        digest = hashlib.sha256(HASH_NAMESPACE + table.sheet.encode("utf-8") + b"\x00" + csv_bytes).hexdigest()
        inputs.append(TableDocumentInput(table, table_chunks(table, filename), csv_bytes, digest, filename, file_type))
    return inputs


class TableIngestor:
    """Stores table files as documents searchable through their description chunks."""

    def __init__(
        self, knowledge: KnowledgeStore, engine: RetrieveEngine, models: ModelRegistry, tables: TableStore
    ) -> None:
        """An ingestor writing records to ``knowledge``, chunks to ``engine`` (embedded with ``models``) and the CSV to ``tables``."""
        self._knowledge = knowledge
        self._engine = engine
        self._models = models
        self._tables = tables

    def ingest_table(
        self,
        kb: KnowledgeBase,
        filename: str,
        raw: bytes,
        *,
        title: str = "",
        source: str = "",
        tags: Sequence[str] = (),
    ) -> list[IngestResult]:
        """One result per table in the file, in sheet order.

        A table already in the knowledge base is reported as a duplicate and stored once. ``title`` replaces the file's
        name in the tables' titles.
        """
        return [
            self._ingest_one(kb, item, source=source, tags=tags)
            for item in table_document_input(filename, raw, title=title)
        ]

    def _ingest_one(
        self, kb: KnowledgeBase, item: TableDocumentInput, *, source: str, tags: Sequence[str]
    ) -> IngestResult:
        existing = self._knowledge.documents_by_hash(kb.tenant_id, kb.id, item.content_hash)
        if existing is not None:
            return IngestResult(existing, existing.chunk_count, duplicate=True)
        document = Document(
            id=new_id(),
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=item.table.title,
            filename=item.filename,
            file_type=item.file_type,
            description=f"Table of {item.table.row_count} rows and {len(item.table.columns)} columns",
            source=source,
            content_hash=item.content_hash,
            tags=list(dict.fromkeys(t.strip() for t in tags if t.strip())),
        )
        chunks = [
            Chunk(
                id=new_id(),
                tenant_id=kb.tenant_id,
                knowledge_base_id=kb.id,
                knowledge_id=document.id,
                chunk_index=index,
                chunk_type=passage.chunk_type,
                content=passage.content,
                header=passage.header,
                end_at=len(passage.content),
                metadata=dict(passage.metadata),
            )
            for index, passage in enumerate(item.chunks)
        ]
        embedder = self._models.embedder(kb.embedding_model)
        matrix = embed_passages(embedder, [embedding_text("", chunk.header, chunk.content) for chunk in chunks])
        # The CSV first: a document whose rows are missing would be found by search and fail analysis,
        # while a CSV without its document is only an unused file.
        self._tables.save(document.id, item.csv_bytes)
        try:
            result = store_document(self._knowledge, self._engine, kb, document, chunks, chunks, matrix)
        except BaseException:
            self._tables.delete(document.id)
            raise
        logger.info(
            "table ingested",
            extra={"document_id": document.id, "rows": item.table.row_count, "columns": len(item.table.columns)},
        )
        return result
