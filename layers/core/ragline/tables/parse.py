"""Tables out of uploaded CSV, TSV and Excel files: named columns, string cells, one inferred type per column.

Every source ends up as the same thing, a :class:`TableData` of string cells, so ingestion (chunk text),
storage (a normalised CSV) and analysis (a typed DuckDB table) read one shape whatever the file was.

Decisions:
- The first row is the header. ``csv.Sniffer.has_header`` guesses wrong on all-text tables, and a
  spreadsheet meant for analysis almost always names its columns.
- Excel: every non-empty worksheet is its own table (a workbook's "Sales" and "Staff" sheets answer
  different questions); charts and empty sheets are skipped.
- Types are inferred from the text, never taken from the file: ``007`` stays text (a code, not seven),
  a 25-digit identifier stays text (it does not fit a BIGINT), and a CSV and the Excel sheet it was
  exported from give the same types.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from enum import StrEnum
from pathlib import Path

from ragline.files.reading import UnsupportedFile, decode_text, require_parser

CSV_SUFFIXES = frozenset({".csv"})
TSV_SUFFIXES = frozenset({".tsv", ".tab"})
EXCEL_SUFFIXES = frozenset({".xlsx", ".xlsm"})
TABLE_SUFFIXES = CSV_SUFFIXES | TSV_SUFFIXES | EXCEL_SUFFIXES

# Rows kept per table: enough for real spreadsheets, small enough to load into DuckDB in well under a
# second on every analysis.
MAX_ROWS = 100_000
# Every column becomes a chunk; a file with thousands of columns is not a table a question can be about.
MAX_COLUMNS = 512
MAX_SHEETS = 20
# Bytes the delimiter sniffer reads: a few hundred lines is plenty, the whole file is slow.
SNIFF_BYTES = 64 * 1024
SNIFF_DELIMITERS = ",;\t|"
DEFAULT_DELIMITER = ","
# The largest integer DuckDB's BIGINT holds; beyond it a number is an identifier, kept as text.
BIGINT_MAX = 2**63 - 1
MAX_IDENTIFIER_CHARS = 63
DEFAULT_TABLE_NAME = "data"
# A float prints as an integer when it is one and small enough to be exact (Excel stores 3 as 3.0).
EXACT_FLOAT_LIMIT = 2**53

_INTEGER = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_BOOLEANS = {"true": True, "false": False, "yes": True, "no": False}
_NOT_IDENTIFIER = re.compile(r"[^a-z0-9_]+")


class ColumnType(StrEnum):
    """What a column holds; each maps to one DuckDB type."""

    INTEGER = "integer"
    FLOAT = "float"
    BOOLEAN = "boolean"
    DATE = "date"
    TEXT = "text"


DUCKDB_TYPES: dict[ColumnType, str] = {
    ColumnType.INTEGER: "BIGINT",
    ColumnType.FLOAT: "DOUBLE",
    ColumnType.BOOLEAN: "BOOLEAN",
    ColumnType.DATE: "DATE",
    ColumnType.TEXT: "VARCHAR",
}

CellValue = int | float | bool | date | str | None


@dataclass
class TableData:
    """One table: column names, rows of string cells ("" is empty), a type per column.

    ``name`` is a SQL identifier (lowercase letters, digits, underscores); ``title`` is what people read.
    ``truncated`` says rows beyond :data:`MAX_ROWS` were dropped.
    """

    name: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    types: list[ColumnType] = field(default_factory=list)
    sheet: str = ""
    truncated: bool = False

    def __post_init__(self) -> None:
        """Infer the column types from the values when none were given."""
        if not self.types:
            self.types = [infer_type(self.column_values(i)) for i in range(len(self.columns))]

    @property
    def row_count(self) -> int:
        """How many data rows the table holds (the header not counted)."""
        return len(self.rows)

    def column_values(self, index: int) -> list[str]:
        """Every row's value in column ``index``, as text."""
        return [row[index] for row in self.rows]

    def typed_rows(self) -> Iterator[tuple[CellValue, ...]]:
        """Rows as Python values of each column's type (empty cells are ``None``), ready for DuckDB."""
        converters = [CONVERTERS[column_type] for column_type in self.types]
        for row in self.rows:
            yield tuple(convert(cell) if cell != "" else None for convert, cell in zip(converters, row, strict=True))

    def to_csv_bytes(self) -> bytes:
        """The normalised form that is stored: UTF-8, comma-separated, header first, one line per row."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(self.rows)
        return buffer.getvalue().encode("utf-8")


# Type inference --------------------------------------------------------------------------------------------


def _is_integer(text: str) -> bool:
    return bool(_INTEGER.fullmatch(text)) and abs(int(text)) <= BIGINT_MAX


def _is_float(text: str) -> bool:
    return bool(_FLOAT.fullmatch(text)) and (("." in text or "e" in text.lower()) or _is_integer(text))


def _is_boolean(text: str) -> bool:
    return text.lower() in _BOOLEANS


def _is_date(text: str) -> bool:
    if not _DATE.fullmatch(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


# Most specific first: a column of 1 and 2 is integer, not float.
_TYPE_TESTS = (
    (ColumnType.INTEGER, _is_integer),
    (ColumnType.FLOAT, _is_float),
    (ColumnType.BOOLEAN, _is_boolean),
    (ColumnType.DATE, _is_date),
)


def infer_type(values: Iterable[str]) -> ColumnType:
    """The most specific type every non-empty value fits; text when none does or the column is empty."""
    present = [value for value in values if value != ""]
    if not present:
        return ColumnType.TEXT
    for column_type, fits in _TYPE_TESTS:
        if all(fits(value) for value in present):
            return column_type
    return ColumnType.TEXT


def _to_bool(text: str) -> bool:
    return _BOOLEANS[text.lower()]


# How a non-empty cell of each type becomes a Python value (inference guarantees the conversion succeeds).
CONVERTERS: dict[ColumnType, Callable[[str], CellValue]] = {
    ColumnType.INTEGER: int,
    ColumnType.FLOAT: float,
    ColumnType.BOOLEAN: _to_bool,
    ColumnType.DATE: date.fromisoformat,
    ColumnType.TEXT: str,
}


# Names ----------------------------------------------------------------------------------------------------


def sql_identifier(text: str, fallback: str = DEFAULT_TABLE_NAME) -> str:
    """A lowercase identifier a model can write unquoted: ``Q3 Sales (EU).csv`` → ``q3_sales_eu``."""
    name = _NOT_IDENTIFIER.sub("_", text.lower()).strip("_")[:MAX_IDENTIFIER_CHARS].strip("_")
    if not name:
        return fallback
    if name[0].isdigit():
        name = f"t_{name}"
    return name


def column_names(header: Sequence[str]) -> list[str]:
    """Header cells as unique column names: blanks become ``column_N``, repeats get ``_2``, ``_3``."""
    names: list[str] = []
    seen: set[str] = set()
    for index, cell in enumerate(header):
        base = " ".join(cell.split()) or f"column_{index + 1}"
        name, counter = base, 2
        while name.lower() in seen:
            name, counter = f"{base}_{counter}", counter + 1
        seen.add(name.lower())
        names.append(name)
    return names


# Building a table ------------------------------------------------------------------------------------------


def table_from_rows(rows: Iterable[Sequence[str]], *, title: str, name: str, sheet: str = "") -> TableData:
    """Header + rows → a table: blank rows and trailing blank columns dropped, ragged rows evened out."""
    iterator = (list(row) for row in rows)
    header: list[str] | None = None
    for row in iterator:
        if any(cell.strip() for cell in row):
            header = row
            break
    if header is None:
        raise UnsupportedFile("the table has no header row")
    body: list[list[str]] = []
    truncated = False
    for row in iterator:
        if not any(cell.strip() for cell in row):
            continue
        if len(body) >= MAX_ROWS:
            truncated = True
            break
        body.append(row)
    width = max(_used_width(row) for row in [header, *body])
    if width == 0:
        raise UnsupportedFile("the table has no columns")
    if width > MAX_COLUMNS:
        raise UnsupportedFile(f"the table has {width} columns; at most {MAX_COLUMNS} are supported")
    columns = column_names([*header, *[""] * (width - len(header))][:width])
    cells = [[cell.strip() for cell in [*row, *[""] * (width - len(row))][:width]] for row in body]
    return TableData(name=name, title=title, columns=columns, rows=cells, sheet=sheet, truncated=truncated)


def _used_width(row: Sequence[str]) -> int:
    """Cells up to the last non-blank one: spreadsheets often carry empty trailing columns."""
    for index in range(len(row) - 1, -1, -1):
        if row[index].strip():
            return index + 1
    return 0


def _decode(raw: bytes) -> str:
    """UTF-8 or UTF-16 first; then Windows-1252, which is what Excel writes when it saves a "CSV"."""
    try:
        return decode_text(raw)
    except UnsupportedFile:
        if b"\x00" in raw:
            raise
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _delimiter(text: str, suffix: str) -> str:
    if suffix in TSV_SUFFIXES:
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:SNIFF_BYTES], delimiters=SNIFF_DELIMITERS).delimiter
    except csv.Error:
        return DEFAULT_DELIMITER


def parse_csv(raw: bytes, *, filename: str = "", delimiter: str | None = None) -> TableData:
    """A CSV or TSV file; the delimiter is sniffed unless given (the stored normalised CSV gives ``,``)."""
    text = _decode(raw)
    stem = Path(filename).stem if filename else ""
    separator = delimiter or _delimiter(text, Path(filename).suffix.lower())
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator)
    try:
        return table_from_rows(reader, title=stem or DEFAULT_TABLE_NAME, name=sql_identifier(stem))
    except csv.Error as exc:
        raise UnsupportedFile(f"the CSV could not be read: {exc}") from None


def excel_cell_text(value: object) -> str:
    """An Excel cell as the text a CSV export would hold: ISO dates, ``true``/``false``, ``3`` not ``3.0``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < EXACT_FLOAT_LIMIT:
            return str(int(value))
        return repr(value)
    if isinstance(value, datetime):
        if value.time() == time():
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    return str(value).strip()


def parse_xlsx(raw: bytes, *, filename: str = "") -> list[TableData]:
    """Every non-empty worksheet of an .xlsx workbook as its own table (read-only: formulas as last saved)."""
    require_parser("openpyxl", "Excel (.xlsx)")
    from openpyxl import load_workbook

    try:
        workbook = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zipfile, KeyError and its own errors for broken files
        raise UnsupportedFile(f"the Excel workbook could not be read: {exc}") from None
    stem = Path(filename).stem if filename else DEFAULT_TABLE_NAME
    tables: list[TableData] = []
    try:
        sheets = workbook.worksheets[:MAX_SHEETS]
        single = len(sheets) == 1
        for sheet in sheets:
            rows = ([excel_cell_text(value) for value in row] for row in sheet.iter_rows(values_only=True))
            title = stem if single else f"{stem} / {sheet.title}"
            name = sql_identifier(stem if single else f"{stem}_{sheet.title}")
            try:
                tables.append(table_from_rows(rows, title=title, name=name, sheet=sheet.title))
            except UnsupportedFile:
                continue  # an empty sheet (or one holding only a chart) is not a table
    finally:
        workbook.close()
    if not tables:
        raise UnsupportedFile("the workbook has no sheet with a table")
    return tables


def parse_table_file(filename: str, raw: bytes) -> list[TableData]:
    """The tables of an uploaded file, by its suffix: one for CSV/TSV, one per worksheet for Excel."""
    suffix = Path(filename).suffix.lower()
    if suffix in EXCEL_SUFFIXES:
        return parse_xlsx(raw, filename=filename)
    if suffix in CSV_SUFFIXES or suffix in TSV_SUFFIXES:
        return [parse_csv(raw, filename=filename)]
    raise UnsupportedFile(
        f"{suffix or 'no suffix'} is not a table file; supported: {', '.join(sorted(TABLE_SUFFIXES))}"
    )


def is_table_file(filename: str) -> bool:
    """True for a file name with a table extension (CSV, TSV, Excel)."""
    return Path(filename).suffix.lower() in TABLE_SUFFIXES


def load_stored_table(csv_bytes: bytes, *, name: str, title: str = "") -> TableData:
    """The table back from its stored normalised CSV.

    Comma-separated by construction, so not sniffed (a one-column table of values with semicolons would otherwise be
    split on them).
    """
    table = parse_csv(csv_bytes, delimiter=DEFAULT_DELIMITER)
    table.name = name
    table.title = title or name
    return table
