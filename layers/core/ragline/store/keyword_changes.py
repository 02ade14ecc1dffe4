"""The log of changes to the keyword index and to the chunks it indexes.

The log of changes to the keyword index (``chunks_fts``) and to the chunks it indexes, so in-memory copies of them in
any process can follow: rows appended above every row read before, rows deleted, chunk rows updated in place (their
keyword rows unchanged), or anything else (a reset).

Every writer of ``chunks_fts`` records its change in the same transaction. A reader that finds a gap in
the sequence (the log is pruned) or a reset rebuilds its copy.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from enum import StrEnum

import numpy as np

# Entries kept; a copy older than the oldest one left is rebuilt.
LOG_LENGTH = 1000


class ChangeKind(StrEnum):
    """What one entry of the change log says happened to the keyword rows."""

    APPEND = "append"  # rows added, every rowid at least first_rowid
    DELETE = "delete"  # the rows in rowids removed
    UPDATE = "update"  # the chunk rows in rowids changed (text, flags, metadata); their keyword rows did not
    RESET = "reset"  # anything else: rows replaced in place, a knowledge base dropped


def _record(conn: sqlite3.Connection, kind: ChangeKind, first_rowid: int = 0, rowids: bytes = b"") -> None:
    seq = conn.execute(
        "INSERT INTO keyword_changes (kind, first_rowid, rowids) VALUES (?, ?, ?)", (kind.value, first_rowid, rowids)
    ).lastrowid
    if seq is not None and seq % 100 == 0:
        conn.execute("DELETE FROM keyword_changes WHERE seq <= ?", (seq - LOG_LENGTH,))


def record_keyword_rows(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Rows about to be written.

    An append when every one is above the highest existing row, else a reset (a row replaced in place).
    """
    if not rowids:
        return
    top = conn.execute("SELECT rowid FROM chunks_fts ORDER BY rowid DESC LIMIT 1").fetchone()
    first = min(rowids)
    if top is None or first > int(top[0]):
        _record(conn, ChangeKind.APPEND, first_rowid=first)
    else:
        _record(conn, ChangeKind.RESET)


def record_keyword_deletes(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Rows removed (the rowids of the chunks whose keyword rows go)."""
    if rowids:
        _record(conn, ChangeKind.DELETE, rowids=np.asarray(rowids, dtype="<i8").tobytes())


def record_chunk_updates(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Chunk rows changed in place (a chunk's text is indexed again through a reset)."""
    if rowids:
        _record(conn, ChangeKind.UPDATE, rowids=np.asarray(rowids, dtype="<i8").tobytes())


def record_keyword_reset(conn: sqlite3.Connection) -> None:
    """Anything else happened (rows replaced in place, a knowledge base dropped): every copy rebuilds."""
    _record(conn, ChangeKind.RESET)
