"""Table documents (CSV, TSV, Excel): parsing, description chunks, stored rows and safe SQL analysis.

The SQL side (:mod:`ragline.tables.sql`, which needs DuckDB) is not re-exported here: ingesting tables
must work in a process that does not ship DuckDB (DuckDB's native library is ~60 MB). Import it as
``ragline.tables.sql``.
"""

from __future__ import annotations

from typing import Any

from ragline.tables.chunks import TABLE_CHUNK_TYPES, TableChunk, table_chunks
from ragline.tables.parse import (
    MAX_ROWS,
    TABLE_SUFFIXES,
    ColumnType,
    TableData,
    is_table_file,
    load_stored_table,
    parse_csv,
    parse_table_file,
    parse_xlsx,
)
from ragline.tables.s3 import S3TableStore
from ragline.tables.store import FileTableStore, InMemoryTableStore, TableNotFound, TableStore

_INGEST_NAMES = {"TableDocumentInput", "TableIngestor", "table_document_input"}


def __getattr__(name: str) -> Any:
    """The ingestor on first use.

    The ingestion service imports this package's parsing (to route table files), and the ingestor imports the ingestion
    service.
    """
    if name in _INGEST_NAMES:
        from ragline.tables import ingest

        return getattr(ingest, name)
    raise AttributeError(name)


__all__ = [
    "MAX_ROWS",
    "TABLE_CHUNK_TYPES",
    "TABLE_SUFFIXES",
    "ColumnType",
    "FileTableStore",
    "InMemoryTableStore",
    "S3TableStore",
    "TableChunk",
    "TableData",
    "TableDocumentInput",
    "TableIngestor",
    "TableNotFound",
    "TableStore",
    "is_table_file",
    "load_stored_table",
    "parse_csv",
    "parse_table_file",
    "parse_xlsx",
    "table_chunks",
    "table_document_input",
]
