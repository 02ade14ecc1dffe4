"""Identifiers and timestamps for stored records."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def new_id() -> str:
    """A new random id (a UUID4 string)."""
    return str(uuid.uuid4())


def utc_now() -> str:
    """The current UTC time as ISO 8601 with milliseconds: the format every stored timestamp uses, sortable as text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
