"""Identifiers and timestamps for stored records."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta


def new_id() -> str:
    """A new random id (a UUID4 string)."""
    return str(uuid.uuid4())


def utc_now() -> str:
    """The current UTC time as ISO 8601 with milliseconds: the format every stored timestamp uses, sortable as text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def utc_ago(seconds: float) -> str:
    """The UTC time ``seconds`` ago, in :func:`utc_now`'s format (a cutoff to compare stored timestamps with)."""
    return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat(timespec="milliseconds")
