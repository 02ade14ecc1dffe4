"""Reading the query-understanding model's reply: ``{"rewrite_query", "intent", "image_description"}``.

Small models wrap the object in markdown fences or prose, rename fields, split OCR text from the image
description, and run into the output limit mid-string. Each of those still yields what can be trusted;
a reply from which nothing can be read leaves the turn as it was (``parsed`` is False).

Order of attempts:
1. the trimmed reply as a JSON object;
2. the substring from the first ``{`` to the last ``}`` as a JSON object (fences, surrounding prose);
3. field by field with :data:`_FIELD` (a reply cut by the output limit): a value whose closing quote
   arrived is kept; an unclosed value is kept only for image fields, where a partial description is
   still worth having, while a half-written query or intent label would mislead search.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragline.types.intent import normalize_query_intent

# First alias that carries a non-blank string wins; the order is the preference.
REWRITE_FIELDS = ("rewrite_query", "rewritten_query", "query", "question")
INTENT_FIELDS = ("intent",)
DESCRIPTION_FIELDS = ("image_description", "image_desc", "image_text", "image_ocr_text", "description")
OCR_FIELDS = ("ocr_text", "ocr", "full_ocr", "image_ocr", "ocr_content")
KNOWN_FIELDS = frozenset((*REWRITE_FIELDS, *INTENT_FIELDS, *DESCRIPTION_FIELDS, *OCR_FIELDS))

# Between the description and a separately reported OCR transcript.
OCR_SEPARATOR = "\n\n[OCR]\n"

# One "key": "value" pair; group 3 is the closing quote, empty when the reply was cut inside the value.
_FIELD = re.compile(r'"([a-z_]+)"\s*:\s*"((?:[^"\\]|\\.)*)("?)', re.DOTALL)
# Only image fields may keep a value cut by the output limit (see the module docstring).
_UNCLOSED_ALLOWED_PREFIX = "image_"
_UNCLOSED_ALLOWED_FIELDS = frozenset({"description"})

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_UNICODE_ESCAPE_LENGTH = len("u0000")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|u[0-9a-fA-F]{0,3}|.)", re.DOTALL)
_SURROGATE_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class Understanding:
    """What the reply said. Empty strings mean "not given"; ``intent`` is already normalised."""

    rewrite_query: str = ""
    intent: str = ""
    image_description: str = ""
    parsed: bool = False


NOT_PARSED = Understanding()


def parse_understanding(text: str) -> Understanding:
    """The reply's rewrite, intent and image description; ``parsed`` False when none of it is readable.

    Never raises: a reply is model output, and a bad one must cost the rewrite, not the turn.
    """
    content = text.strip()
    if not content:
        return NOT_PARSED
    fields = _json_object(content)
    if fields is None:
        start, end = content.find("{"), content.rfind("}")
        if start >= 0 and end > start:
            fields = _json_object(content[start : end + 1])
    if fields is not None:
        return _understanding(fields)
    return _recover_truncated(content)


def _json_object(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None
    return value if isinstance(value, dict) else None


def _recover_truncated(content: str) -> Understanding:
    """Closed fields anywhere after the first ``{``; unclosed ones only for image fields.

    Prose without an opening brace is not a cut-off object, so it is not scanned: a sentence that quotes
    ``"query": "..."`` must not become a rewrite. Counts as parsed only when a known field was recovered.
    """
    start = content.find("{")
    if start < 0:
        return NOT_PARSED
    fields: dict[str, str] = {}
    for match in _FIELD.finditer(content, start):
        key, raw, closing = match.group(1), match.group(2), match.group(3)
        if key in fields:
            continue
        if not closing and not _may_stay_unclosed(key):
            continue
        fields[key] = decode_json_string(raw, complete=bool(closing))
    if not KNOWN_FIELDS.intersection(fields):
        return NOT_PARSED
    return _understanding(fields)


def _may_stay_unclosed(key: str) -> bool:
    return key.startswith(_UNCLOSED_ALLOWED_PREFIX) or key in _UNCLOSED_ALLOWED_FIELDS


def _understanding(fields: Mapping[str, Any]) -> Understanding:
    description = merge_description_and_ocr(
        _first_string(fields, DESCRIPTION_FIELDS), _first_string(fields, OCR_FIELDS)
    )
    return Understanding(
        rewrite_query=_first_string(fields, REWRITE_FIELDS),
        intent=normalize_query_intent(_first_string(fields, INTENT_FIELDS)),
        image_description=description,
        parsed=True,
    )


def _first_string(fields: Mapping[str, Any], names: Iterable[str]) -> str:
    """The first alias whose value is a non-blank string, trimmed; numbers, lists and nulls do not count."""
    for name in names:
        value = fields.get(name)
        if isinstance(value, str) and value.strip():
            return _without_lone_surrogates(value.strip())
    return ""


def merge_description_and_ocr(description: str, ocr: str) -> str:
    """The description, followed by the OCR transcript unless the description already contains it."""
    if not ocr or ocr in description:
        return description
    if not description:
        return ocr
    return f"{description}{OCR_SEPARATOR}{ocr}"


def decode_json_string(raw: str, complete: bool = True) -> str:
    r"""The text of a JSON string body (without its quotes), leniently.

    A value cut by the output limit can end inside an escape (``\u00``) or between the two halves of a
    surrogate pair; such tails are dropped instead of failing the whole value.
    """
    try:
        decoded = json.loads(f'"{raw}"', strict=False)
    except ValueError:
        decoded = _ESCAPE.sub(lambda match: _unescape(match.group(1), complete), raw)
    if not isinstance(decoded, str):  # pragma: no cover - a quoted body always decodes to a string
        return ""
    return _without_lone_surrogates(decoded)


def _unescape(sequence: str, complete: bool) -> str:
    if sequence.startswith("u"):
        if len(sequence) == _UNICODE_ESCAPE_LENGTH:
            return chr(int(sequence[1:], 16))
        # A short \u escape: where the value was cut it is the unfinished tail, elsewhere plain text.
        return sequence if complete else ""
    return _SIMPLE_ESCAPES.get(sequence, sequence)


def _without_lone_surrogates(text: str) -> str:
    """Join surrogate pairs written as two escapes and drop unpaired halves (they cannot be stored as UTF-8)."""
    if not _LONE_SURROGATE.search(text):
        return text
    joined = _SURROGATE_PAIR.sub(lambda m: m.group(0).encode("utf-16-le", "surrogatepass").decode("utf-16-le"), text)
    return _LONE_SURROGATE.sub("", joined)
