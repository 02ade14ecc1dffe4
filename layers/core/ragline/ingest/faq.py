"""FAQ import: JSON (a list of entries, or ``{"entries": [...]}``) or CSV with a header row.

CSV columns: ``standard_question`` (or ``question``), ``answer`` (or ``answers``), and optionally
``similar_questions`` and ``negative_questions``; several values in one cell are separated by ``|`` or
new lines.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragline.files.reading import UnsupportedFile, UnsupportedFileType, decode_text
from ragline.store.models import FAQEntry
from ragline.types.text import forbidden_characters

_LIST_COLUMNS = ("similar_questions", "negative_questions", "answers")
_SPLIT = ("|", "\n")


class InvalidFAQ(UnsupportedFile):
    """An FAQ file or entry that cannot be imported; the message names the entry and the field."""

    pass


def _split(cell: str) -> list[str]:
    values = [cell]
    for separator in _SPLIT:
        values = [part for value in values for part in value.split(separator)]
    return [v.strip() for v in values if v.strip()]


def _check_questions(entry: FAQEntry, where: str) -> None:
    """Questions are refused with NUL or bidi controls, as any question is (``ragline.types.text``)."""
    for field, questions in (
        ("standard_question", [entry.standard_question]),
        ("similar_questions", entry.similar_questions),
        ("negative_questions", entry.negative_questions),
    ):
        for question in questions:
            found = forbidden_characters(question, allow_line_breaks=True)
            if found is not None:
                raise InvalidFAQ(f"{where}: {field}: must not contain {found}")


def parse_entries(items: list[Any], where: str = "entry") -> list[FAQEntry]:
    """``items`` validated as FAQ entries; :class:`InvalidFAQ` names the first bad one (``where`` and its number)."""
    entries: list[FAQEntry] = []
    for index, item in enumerate(items, start=1):
        try:
            entry = FAQEntry.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "entry"
            raise InvalidFAQ(f"{where} {index}: {field}: {first['msg']}") from None
        _check_questions(entry, f"{where} {index}")
        entries.append(entry)
    if not entries:
        raise InvalidFAQ("no FAQ entries")
    return entries


def parse_faq_file(filename: str, raw: bytes) -> list[FAQEntry]:
    """The entries of an FAQ file: JSON (a list, or ``{"entries": [...]}``), CSV or TSV with one entry a row."""
    suffix = Path(filename).suffix.lower()
    text = decode_text(raw)
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidFAQ(f"not valid JSON: {exc.msg} at line {exc.lineno}") from None
        items = data.get("entries") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise InvalidFAQ('expected a list of entries or {"entries": [...]}')
        return parse_entries(items)
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
        rows: list[dict[str, Any]] = []
        for row in reader:
            item: dict[str, Any] = {}
            for key, value in row.items():
                if key is None or value is None:
                    continue
                name = key.strip().lower()
                if name in _LIST_COLUMNS or name == "answer":
                    item["answers" if name in ("answer", "answers") else name] = _split(value)
                else:
                    item[name] = value.strip()
            rows.append(item)
        return parse_entries(rows, where="row")
    raise UnsupportedFileType(f"unsupported FAQ file type {suffix!r}; use .json, .csv or .tsv")
