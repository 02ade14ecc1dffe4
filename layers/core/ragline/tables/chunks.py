"""What a table says to search: one summary passage and one passage per column.

A question about a table names its columns and values ("average salary by department", "which region
sold most in March"), not its rows, so the passages describe the table instead of cutting its rows into
text: the summary lists every column with its type and shows a few rows; each column passage gives the
column's statistics, which is what a question about one column matches best.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from statistics import fmean

from ragline.tables.parse import ColumnType, TableData
from ragline.types import ChunkType

# Rows shown in the summary passage: enough to show what values look like, short enough to embed well.
SUMMARY_EXAMPLE_ROWS = 3
# Most frequent values listed for a text or boolean column.
TOP_VALUES = 5
# Cells longer than this are cut in passages (a free-text column would drown the rest).
MAX_CELL_CHARS = 60
NUMBER_FORMAT = ".10g"

# Metadata keys shared by the ingestion and the analysis stage.
TABLE_KEY = "table"
COLUMN_KEY = "column"
TYPE_KEY = "type"
COLUMNS_KEY = "columns"
ROW_COUNT_KEY = "row_count"
SHEET_KEY = "sheet"
TABLE_CHUNK_TYPES = frozenset({ChunkType.TABLE_SUMMARY, ChunkType.TABLE_COLUMN})


@dataclass(frozen=True)
class TableChunk:
    """A passage before it becomes a stored chunk: the ingestor adds ids and the document."""

    chunk_type: ChunkType
    content: str
    header: str
    metadata: dict[str, object] = field(default_factory=dict)


def short(text: str, limit: int = MAX_CELL_CHARS) -> str:
    """``text`` on one line, cut with "…" at ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def format_number(value: float) -> str:
    """A number as the chunks write it: up to ten significant digits, no trailing zeros."""
    return format(value, NUMBER_FORMAT)


def _markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(short(cell).replace("|", "\\|") for cell in cells) + " |"


def summary_text(table: TableData, filename: str = "") -> str:
    """The table's summary chunk: title, sheet, row count, columns and a few example rows as Markdown."""
    source = f" (from {filename})" if filename else ""
    lines = [f"Table: {table.title}{source}"]
    if table.sheet:
        lines.append(f"Sheet: {table.sheet}")
    more = " (more rows in the file were not loaded)" if table.truncated else ""
    lines.append(f"Rows: {table.row_count}{more}")
    lines.append(
        f"Columns ({len(table.columns)}): " + ", ".join(_column_label(table, i) for i in range(len(table.columns)))
    )
    examples = table.rows[:SUMMARY_EXAMPLE_ROWS]
    if examples:
        lines.append("Example rows:")
        lines.append(_markdown_row(table.columns))
        lines.append("| " + " | ".join("---" for _ in table.columns) + " |")
        lines.extend(_markdown_row(row) for row in examples)
    return "\n".join(lines)


def _column_label(table: TableData, index: int) -> str:
    return f"{table.columns[index]} ({table.types[index].value})"


def column_text(table: TableData, index: int) -> str:
    """One column's chunk: its name, type, how many values and distinct values, and its statistics."""
    name, column_type = table.columns[index], table.types[index]
    values = [value for value in table.column_values(index) if value != ""]
    empty = table.row_count - len(values)
    lines = [
        f'Column "{name}" of table {table.title}',
        f"Type: {column_type.value}",
        f"Values: {len(values)} ({empty} empty), {len(set(values))} distinct",
    ]
    lines.extend(_statistics(column_type, values))
    return "\n".join(lines)


def _statistics(column_type: ColumnType, values: list[str]) -> list[str]:
    """Min/max (and mean) for numbers and dates; the most frequent values for text and booleans."""
    if not values:
        return []
    if column_type in (ColumnType.INTEGER, ColumnType.FLOAT):
        numbers = [float(value) for value in values]
        return [
            f"Minimum: {format_number(min(numbers))}, maximum: {format_number(max(numbers))}, "
            f"mean: {format_number(fmean(numbers))}"
        ]
    if column_type == ColumnType.DATE:
        # ISO dates (YYYY-MM-DD, which inference requires) sort as text in date order.
        return [f"Earliest: {min(values)}, latest: {max(values)}"]
    # Counted whole, shortened only for display: values sharing a long prefix are still different values.
    counts = Counter(values).most_common(TOP_VALUES)
    return ["Most frequent: " + ", ".join(f"{short(value)} ({count})" for value, count in counts)]


def table_chunks(table: TableData, filename: str = "") -> list[TableChunk]:
    """The summary passage first (chunk index 0), then one passage per column in the table's order."""
    header = table.title
    summary = TableChunk(
        ChunkType.TABLE_SUMMARY,
        summary_text(table, filename),
        header,
        {
            TABLE_KEY: table.name,
            ROW_COUNT_KEY: table.row_count,
            COLUMNS_KEY: {
                name: column_type.value for name, column_type in zip(table.columns, table.types, strict=True)
            },
            **({SHEET_KEY: table.sheet} if table.sheet else {}),
        },
    )
    columns = [
        TableChunk(
            ChunkType.TABLE_COLUMN,
            column_text(table, index),
            header,
            {TABLE_KEY: table.name, COLUMN_KEY: table.columns[index], TYPE_KEY: table.types[index].value},
        )
        for index in range(len(table.columns))
    ]
    return [summary, *columns]
