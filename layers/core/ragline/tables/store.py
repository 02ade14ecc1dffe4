"""Where a table document's data lives between ingestion and analysis: its normalised CSV, by document id.

Chunks describe a table for search; analysis needs every row. A 100,000-row CSV does not belong in a
chunk's metadata (SQLite rows and DynamoDB items would carry it on every read, and DynamoDB caps items at
400 KB), so the CSV is kept beside the knowledge store: a file under the data directory when embedded,
an S3 object in AWS (:mod:`ragline.tables.s3`).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Protocol

CSV_SUFFIX = ".csv"
# Document ids are UUIDs; anything else would let an id name a path outside the store.
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


class TableNotFound(KeyError):
    """No table stored for this document (not a table document, or deleted)."""


def checked_id(document_id: str) -> str:
    """The id itself when it can be a file or object name; ``ValueError`` otherwise (``../x``, ``a/b``)."""
    if not _SAFE_ID.fullmatch(document_id):
        raise ValueError(f"not a valid document id for a table: {document_id!r}")
    return document_id


class TableStore(Protocol):
    """The normalised CSV of each table document."""

    def save(self, document_id: str, csv_bytes: bytes) -> None:
        """Store the table's normalised CSV, replacing any kept before."""
        ...

    def load(self, document_id: str) -> bytes:
        """The stored bytes; :class:`TableNotFound` when there are none."""
        ...

    def delete(self, document_id: str) -> None:
        """Forget the table; deleting one that is not there is not an error."""
        ...


class InMemoryTableStore:
    """For tests and throwaway processes."""

    def __init__(self) -> None:
        """No tables yet."""
        self._tables: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def save(self, document_id: str, csv_bytes: bytes) -> None:
        """Store the table's CSV in memory."""
        with self._lock:
            self._tables[checked_id(document_id)] = bytes(csv_bytes)

    def load(self, document_id: str) -> bytes:
        """The stored CSV; :class:`TableNotFound` when there is none."""
        with self._lock:
            try:
                return self._tables[checked_id(document_id)]
            except KeyError:
                raise TableNotFound(document_id) from None

    def delete(self, document_id: str) -> None:
        """Forget the table, if there is one."""
        with self._lock:
            self._tables.pop(checked_id(document_id), None)


class FileTableStore:
    """One ``<document_id>.csv`` per table under ``root`` (the embedded runtime: ``<data_dir>/tables``)."""

    def __init__(self, root: Path) -> None:
        """Tables kept as files under ``root``."""
        self._root = Path(root)

    def _path(self, document_id: str) -> Path:
        return self._root / f"{checked_id(document_id)}{CSV_SUFFIX}"

    def save(self, document_id: str, csv_bytes: bytes) -> None:
        """Written to a temporary file and renamed: a reader never sees half a table."""
        path = self._path(document_id)
        self._root.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self._root, prefix=".", suffix=CSV_SUFFIX)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(csv_bytes)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def load(self, document_id: str) -> bytes:
        """The stored CSV; :class:`TableNotFound` when there is none."""
        try:
            return self._path(document_id).read_bytes()
        except FileNotFoundError:
            raise TableNotFound(document_id) from None

    def delete(self, document_id: str) -> None:
        """Forget the table's file, if there is one."""
        self._path(document_id).unlink(missing_ok=True)
