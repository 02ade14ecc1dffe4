"""WeKnora's wire conventions, which ragline's HTTP API follows so WeKnora's own clients work unchanged.

- Replies are ``{"success": true, "data": ...}``; errors ``{"success": false, "error": {"code": <int>, ...}}``
  with WeKnora's integer codes (1000 bad request … 1010 validation).
- Tenant ids are numbers on the wire (WeKnora's clients decode ``tenant_id`` into a ``uint64``); ragline's
  tenant ids are strings, so the number is derived from the id, stable in both runtimes.
- ``match_type`` is WeKnora's integer enum; chunk ``metadata`` in a search result is a map of strings.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from ragline.types import MatchType

logger = logging.getLogger(__name__)

# 52 bits: the number stays exact in JavaScript (WeKnora's web frontend) as well as in a Go uint64.
_NUMBER_HEX_DIGITS = 13

# WeKnora's MatchType enum (internal/types/embedding.go); "hybrid" (a hit both retrievers found) has no
# number of its own there and reads as an embedding match, the list it was fused into.
MATCH_TYPE_CODES: dict[str, int] = {
    MatchType.EMBEDDING: 0,
    MatchType.HYBRID: 0,
    MatchType.KEYWORD: 1,
    MatchType.NEARBY_CHUNK: 2,
    MatchType.HISTORY: 3,
    MatchType.PARENT_CHUNK: 4,
    MatchType.RELATION_CHUNK: 5,
    MatchType.GRAPH: 6,
    MatchType.WEB_SEARCH: 7,
    MatchType.DIRECT_LOAD: 8,
    MatchType.DATA_ANALYSIS: 9,
}

# WeKnora's error codes (internal/errors/errors.go) by HTTP status.
ERROR_CODES: dict[int, int] = {
    400: 1000,
    401: 1001,
    403: 1002,
    404: 1003,
    405: 1004,
    409: 1005,
    413: 1000,
    415: 1000,
    416: 1000,
    422: 1010,
    429: 1006,
    500: 1007,
    502: 1007,
    503: 1008,
    504: 1009,
}
INTERNAL_ERROR_CODE = 1007
BAD_REQUEST_CODE = 1000


def stable_number(text: str) -> int:
    """A number for a string id where WeKnora's clients expect an integer.

    The first 52 bits of its SHA-256 (never 0), the same in every process and runtime.
    """
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return int(digest[:_NUMBER_HEX_DIGITS], 16) or 1


def tenant_number(tenant_id: str) -> int:
    """The tenant's number on the wire (``tenant_id``, ``X-Tenant-ID``)."""
    return stable_number(tenant_id)


def error_code(status: int) -> int:
    """WeKnora's integer error code for an HTTP status."""
    if status in ERROR_CODES:
        return ERROR_CODES[status]
    return INTERNAL_ERROR_CODE if status >= 500 else BAD_REQUEST_CODE


def match_type_code(value: object) -> int:
    """An integer ``match_type`` for any stored form: ragline's name, WeKnora's number, or unknown (0)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    return MATCH_TYPE_CODES.get(str(value), 0)


def string_map(value: object) -> dict[str, str]:
    """A metadata map as WeKnora's ``map[string]string``: non-string values as their text."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v if isinstance(v, str) else _text(v) for k, v in value.items() if v is not None}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def wire_reference(reference: Mapping[str, Any]) -> dict[str, Any]:
    """One knowledge reference (a search hit as stored in the log or on a message) in WeKnora's shape.

    Fields WeKnora does not know are kept.
    """
    view = dict(reference)
    view["match_type"] = match_type_code(reference.get("match_type"))
    view["metadata"] = string_map(reference.get("metadata"))
    return view


def wire_references(references: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The references in WeKnora's shape (None stays None)."""
    return None if references is None else [wire_reference(r) for r in references]


def log_ignored(body: BaseModel, fields: Iterable[str], where: str) -> None:
    """WeKnora's documented request fields that ragline accepts and does not act on: a debug line each."""
    ignored = sorted(set(fields) & body.model_fields_set)
    if ignored:
        logger.debug("%s: ignoring WeKnora fields %s", where, ", ".join(ignored))
