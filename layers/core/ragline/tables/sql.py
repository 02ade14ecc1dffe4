"""Running a model-written SQL query over one table, safely.

The query comes from a language model that read retrieved text, so it is untrusted input. Three layers,
each enough on its own for the attacks we know, stop it from doing anything but reading that table:

1. **Tokens** (:func:`check_tokens`): our own lexer, strict where DuckDB's is lenient. One statement
   starting with SELECT or WITH; no comments, no parameters, no E'' or dollar-quoted strings (the
   constructs where two lexers could disagree on where a string ends); no statement keyword (COPY,
   ATTACH, INSTALL, LOAD, PRAGMA, SET, ...) outside quotes; no file, network or system function; every
   FROM and JOIN target is the table or a CTE of the query, never a string, a function or a qualified name.
2. **DuckDB's parser** (:func:`check_with_duckdb`): the statement is split and typed by DuckDB itself
   (exactly one, of type SELECT), then its syntax tree (``json_serialize_sql``) is walked: only base
   tables in the allowlist, no table functions, no denied function anywhere.
3. **The sandbox** (:func:`sandbox_connection`): a fresh in-memory database per query holding only the
   table, opened with external access disabled (no file, no network, no extension install or load),
   extension autoloading off, Python replacement scans off, no spill directory, one thread, a memory
   limit, and the configuration locked before any SQL runs; a timer interrupts the query at its time
   limit and at most ``max_rows + 1`` rows are fetched.

Loading the table with external access disabled: DuckDB cannot read a file, a ``BytesIO`` (it goes
through a registered object store, which counts as external) or a Python object (replacement scans are
off). The rows are appended from Python instead, through DuckDB's appender, with the types inferred at
parse time; 100,000 rows load in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any

import duckdb

from ragline.tables.parse import DUCKDB_TYPES, TableData, load_stored_table

__all__ = [
    "DEFAULT_MAX_ROWS",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_TIMEOUT_S",
    "QueryError",
    "QueryFailed",
    "QueryResult",
    "QueryTimeout",
    "UnsafeSQL",
    "check_tokens",
    "check_with_duckdb",
    "execute_unchecked",
    "load_table",
    "quote_identifier",
    "run_query",
    "run_table_query",
    "sandbox_connection",
    "sandbox_table_name",
    "table_schema",
    "validate_sql",
]

# Rows a result may return: an answer reads a summary, not a dump.
DEFAULT_MAX_ROWS = 200
# Wall-clock seconds a query may run before it is interrupted.
DEFAULT_TIMEOUT_S = 5.0
# DuckDB's memory cap for one analysis; a query that needs more fails instead of growing the process.
DEFAULT_MEMORY_LIMIT = "256MB"
SANDBOX_THREADS = 1
# Longer than any query a question needs; longer input is not worth parsing.
MAX_SQL_CHARS = 10_000
# Characters a Markdown cell keeps.
MAX_MARKDOWN_CELL_CHARS = 200
NUMBER_FORMAT = ".10g"

# Statement keywords that never belong in a read-only query over one table. Checked on unquoted words
# only: a column named "load" can still be written "load" in double quotes.
FORBIDDEN_KEYWORDS = frozenset(
    {
        "abort", "alter", "analyze", "attach", "begin", "call", "checkpoint", "commit", "copy", "create",
        "deallocate", "delete", "describe", "detach", "drop", "execute", "explain", "export", "force",
        "grant", "import", "insert", "install", "into", "load", "merge", "pragma", "prepare", "reset",
        "revoke", "rollback", "set", "show", "summarize", "transaction", "truncate", "update", "use", "vacuum",
    }
)  # fmt: skip
# Functions that read files, reach the network, run SQL from a string or expose the database's
# configuration: none is needed to analyse one table.
DENIED_FUNCTION_PREFIXES = (
    "read_", "duckdb_", "pragma_", "parquet_", "sniff_", "glob", "http", "iceberg_", "delta_", "sqlite_",
    "postgres_", "mysql_", "load_", "export_", "import_",
)  # fmt: skip
DENIED_FUNCTION_SUFFIXES = ("_scan",)
DENIED_FUNCTIONS = frozenset(
    {
        "query", "query_table", "getenv", "current_setting", "getvariable", "checkpoint", "force_checkpoint",
        "which_secret", "enable_logging", "disable_logging", "truncate_duckdb_logs", "install", "load",
    }
)  # fmt: skip
# A string that names a remote or local resource by scheme (https://, s3://, file://): data of that
# shape has no use in analysing one loaded table, and refusing it keeps a path to the network closed.
_URL_STRING = re.compile(r"\s*[a-z][a-z0-9+.\-]*://", re.IGNORECASE)
# Keywords after which a FROM clause is over: commas no longer separate tables.
_FROM_CLAUSE_ENDS = frozenset(
    {"where", "group", "having", "order", "limit", "offset", "qualify", "window", "union", "intersect", "except", "select"}
)  # fmt: skip
_QUERY_STARTS = frozenset({"select", "with", "values", "from"})
_STATEMENT_STARTS = frozenset({"select", "with"})
# Table-reference node types of DuckDB's syntax tree a query over one table may contain.
_ALLOWED_REF_TYPES = frozenset({"BASE_TABLE", "JOIN", "SUBQUERY", "EMPTY", "EXPRESSION_LIST", "PIVOT"})

_WHITESPACE = " \t\n\r\f\v"
_SYMBOLS = frozenset("(),.;+-*/%<>=!|&~^:[]{}#@")
_NUMBER = re.compile(r"(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9]+)?")


class UnsafeSQL(ValueError):
    """The query was refused; ``reason`` says which rule it broke."""

    def __init__(self, reason: str) -> None:
        """A refusal for ``reason``."""
        super().__init__(reason)
        self.reason = reason


class QueryError(RuntimeError):
    """A validated query did not produce a result."""


class QueryTimeout(QueryError):
    """The query ran past its time limit and was interrupted."""


class QueryFailed(QueryError):
    """DuckDB refused or failed the query (unknown column, type error, memory limit, ...)."""


# Tokens -----------------------------------------------------------------------------------------------------


class TokenKind(StrEnum):
    WORD = "word"  # keyword or unquoted identifier; value is lowercase
    QUOTED = "quoted"  # "identifier"; value is unescaped, lowercase (DuckDB matches names case-insensitively)
    STRING = "string"  # 'literal'; value is unescaped
    NUMBER = "number"
    SYMBOL = "symbol"


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    value: str
    start: int

    def is_word(self, *words: str) -> bool:
        return self.kind == TokenKind.WORD and self.value in words

    def is_symbol(self, symbol: str) -> bool:
        return self.kind == TokenKind.SYMBOL and self.text == symbol

    @property
    def is_name(self) -> bool:
        return self.kind in (TokenKind.WORD, TokenKind.QUOTED)


def _is_word_char(char: str) -> bool:
    # DuckDB's lexer (PostgreSQL's) reads every non-ASCII character as part of an identifier, so do we:
    # a no-break space must not split what DuckDB sees as one word.
    return char.isalnum() or char == "_" or ord(char) > 127


def _quoted(sql: str, start: int, quote: str) -> tuple[str, int]:
    """The unescaped body of a quoted token starting at ``start`` and the index after it ('' and "" escape)."""
    parts: list[str] = []
    position = start + 1
    while True:
        end = sql.find(quote, position)
        if end < 0:
            raise UnsafeSQL("unterminated string or quoted identifier")
        parts.append(sql[position:end])
        if sql.startswith(quote * 2, end):
            parts.append(quote)
            position = end + 2
            continue
        return "".join(parts), end + 1


def tokenize(sql: str) -> list[Token]:
    """Split ``sql`` into tokens, refusing every construct whose extent DuckDB might read differently."""
    tokens: list[Token] = []
    index, length = 0, len(sql)
    while index < length:
        char = sql[index]
        if char in _WHITESPACE:
            index += 1
            continue
        if sql.startswith("--", index) or sql.startswith("/*", index):
            raise UnsafeSQL("comments are not allowed")
        if char in "'\"":
            if index > 0 and _is_word_char(sql[index - 1]):
                raise UnsafeSQL("prefixed literals (E'...', X'...', U&'...') are not allowed")
            body, end = _quoted(sql, index, char)
            if char == "'":
                tokens.append(Token(TokenKind.STRING, sql[index:end], body, index))
            else:
                if not body:
                    raise UnsafeSQL("empty quoted identifier")
                tokens.append(Token(TokenKind.QUOTED, sql[index:end], body.lower(), index))
            index = end
            continue
        number = _NUMBER.match(sql, index) if (char.isdigit() or char == ".") else None
        if number is not None:
            end = number.end()
            if end < length and (_is_word_char(sql[end]) or sql[end] in "'\""):
                raise UnsafeSQL(f"malformed number at position {index}")
            tokens.append(Token(TokenKind.NUMBER, number.group(), number.group(), index))
            index = end
            continue
        if _is_word_char(char):
            end = index
            while end < length and _is_word_char(sql[end]):
                end += 1
            word = sql[index:end]
            tokens.append(Token(TokenKind.WORD, word, word.lower(), index))
            index = end
            continue
        if char in _SYMBOLS:
            tokens.append(Token(TokenKind.SYMBOL, char, char, index))
            index += 1
            continue
        # $ (parameters, dollar quoting), ? (parameters), ` and \ have no place in a query we accept.
        raise UnsafeSQL(f"character {char!r} is not allowed")
    return tokens


def denied_function(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered in DENIED_FUNCTIONS
        or lowered.startswith(DENIED_FUNCTION_PREFIXES)
        or lowered.endswith(DENIED_FUNCTION_SUFFIXES)
    )


def _cte_names(tokens: list[Token]) -> set[str]:
    """Names defined as ``name [(columns)] AS [NOT] [MATERIALIZED] (``: the CTEs a query may read from."""
    names: set[str] = set()
    for index, token in enumerate(tokens):
        if not token.is_name:
            continue
        cursor = index + 1
        if cursor < len(tokens) and tokens[cursor].is_symbol("("):
            depth = 0
            while cursor < len(tokens):
                depth += tokens[cursor].is_symbol("(") - tokens[cursor].is_symbol(")")
                cursor += 1
                if depth == 0:
                    break
        if cursor >= len(tokens) or not tokens[cursor].is_word("as"):
            continue
        cursor += 1
        while cursor < len(tokens) and tokens[cursor].is_word("not", "materialized"):
            cursor += 1
        if cursor < len(tokens) and tokens[cursor].is_symbol("("):
            names.add(token.value)
    return names


@dataclass
class _Frame:
    """One level of parentheses: whether it holds a query, and whether its FROM clause is open."""

    is_query: bool
    in_from: bool = False


def _check_target(tokens: list[Token], index: int, allowed: set[str], table_name: str) -> None:
    token = tokens[index]
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if token.is_name:
        if following is not None and following.is_symbol("."):
            raise UnsafeSQL(f"qualified table names are not allowed ({token.text}.…)")
        if following is not None and following.is_symbol("("):
            raise UnsafeSQL(f"table function {token.text}() is not allowed")
        if token.value not in allowed:
            raise UnsafeSQL(f"table {token.text} is not available: only {table_name} can be queried")
        return
    if token.kind == TokenKind.STRING:
        raise UnsafeSQL("a string cannot be used as a table (no file access)")
    raise UnsafeSQL(f"unexpected {token.text!r} where a table was expected")


def _check_from_targets(tokens: list[Token], allowed: set[str], table_name: str) -> None:
    """Every FROM/JOIN target (and every comma-separated FROM item) must be the table or a CTE."""
    frames = [_Frame(is_query=True)]
    expect_target = False
    previous: Token | None = None
    for index, token in enumerate(tokens):
        frame = frames[-1]
        if expect_target:
            if token.is_word("lateral"):
                previous = token
                continue
            expect_target = False
            if not token.is_symbol("("):
                _check_target(tokens, index, allowed, table_name)
                previous = token
                continue
            # A parenthesised target: a subquery, VALUES, or a join tree whose first item is a target too.
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            starts_query = following is not None and following.is_word(*_QUERY_STARTS)
            frames.append(_Frame(is_query=True, in_from=not starts_query))
            expect_target = not starts_query and not (following is not None and following.is_symbol("("))
            previous = token
            continue
        if token.is_symbol("("):
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            frames.append(_Frame(is_query=following is not None and following.is_word(*_QUERY_STARTS)))
        elif token.is_symbol(")"):
            if len(frames) == 1:
                raise UnsafeSQL("unbalanced parentheses")
            frames.pop()
        elif token.kind == TokenKind.WORD:
            if token.value in ("select", "with"):
                frame.is_query = True
            if token.value == "from" and frame.is_query and not (previous is not None and previous.is_word("distinct")):
                frame.in_from = True
                expect_target = True
            elif token.value == "join" and frame.is_query:
                expect_target = True
            elif token.value in _FROM_CLAUSE_ENDS:
                frame.in_from = False
        elif token.is_symbol(",") and frame.is_query and frame.in_from:
            expect_target = True
        previous = token
    if expect_target:
        raise UnsafeSQL("FROM or JOIN without a table")
    if len(frames) != 1:
        raise UnsafeSQL("unbalanced parentheses")


def check_tokens(sql: str, table_name: str) -> str:
    """Layer 1: our lexer's rules. Returns the statement without its optional trailing semicolon."""
    if len(sql) > MAX_SQL_CHARS:
        raise UnsafeSQL(f"query longer than {MAX_SQL_CHARS} characters")
    tokens = tokenize(sql)
    if tokens and tokens[-1].is_symbol(";"):
        end = tokens[-1].start
        tokens = tokens[:-1]
    else:
        end = len(sql)
    if not tokens:
        raise UnsafeSQL("empty query")
    if any(token.is_symbol(";") for token in tokens):
        raise UnsafeSQL("only one statement is allowed")
    if not tokens[0].is_word(*_STATEMENT_STARTS):
        raise UnsafeSQL(f"only SELECT queries are allowed, not {tokens[0].text}")
    for index, token in enumerate(tokens):
        if token.kind == TokenKind.WORD and token.value in FORBIDDEN_KEYWORDS:
            raise UnsafeSQL(f"{token.text.upper()} is not allowed")
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if token.is_name and following is not None and following.is_symbol("(") and denied_function(token.value):
            raise UnsafeSQL(f"function {token.text}() is not allowed")
        if token.kind == TokenKind.STRING and _URL_STRING.match(token.value):
            raise UnsafeSQL("URLs are not allowed in a query")
    allowed = {table_name.lower(), *_cte_names(tokens)}
    _check_from_targets(tokens, allowed, table_name)
    return sql[:end].strip()


# DuckDB's parser --------------------------------------------------------------------------------------------


def _cte_names_in_tree(node: Any, names: set[str]) -> None:
    if isinstance(node, dict):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            for entry in cte_map.get("map", []):
                names.add(str(entry.get("key", "")).lower())
        for value in node.values():
            _cte_names_in_tree(value, names)
    elif isinstance(node, list):
        for value in node:
            _cte_names_in_tree(value, names)


def _walk_tree(node: Any, allowed: set[str], table_name: str) -> None:
    if isinstance(node, list):
        for value in node:
            _walk_tree(value, allowed, table_name)
        return
    if not isinstance(node, dict):
        return
    function = node.get("function_name")
    if isinstance(function, str):
        if denied_function(function):
            raise UnsafeSQL(f"function {function}() is not allowed")
        if node.get("schema") or node.get("catalog"):
            raise UnsafeSQL(f"qualified function names are not allowed ({function})")
    # Table references are the class-less nodes that carry a position in the query.
    if "class" not in node and "query_location" in node and "type" in node:
        ref_type = node["type"]
        if ref_type not in _ALLOWED_REF_TYPES:
            raise UnsafeSQL(f"{str(ref_type).lower().replace('_', ' ')} is not allowed in FROM")
        if ref_type == "BASE_TABLE":
            name = str(node.get("table_name", ""))
            if node.get("schema_name") or node.get("catalog_name"):
                raise UnsafeSQL(f"qualified table names are not allowed ({name})")
            if name.lower() not in allowed:
                raise UnsafeSQL(f"table {name} is not available: only {table_name} can be queried")
    for value in node.values():
        _walk_tree(value, allowed, table_name)


def check_with_duckdb(statement: str, table_name: str) -> None:
    """Layer 2: DuckDB splits and types the statement, then its syntax tree is checked node by node."""
    with sandbox_connection() as connection:
        try:
            statements = connection.extract_statements(statement)
        except duckdb.Error as exc:
            raise UnsafeSQL(f"not valid SQL: {_first_line(exc)}") from None
        if len(statements) != 1:
            raise UnsafeSQL("only one statement is allowed")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise UnsafeSQL(f"only SELECT queries are allowed, not {statements[0].type.name}")
        row = connection.execute("SELECT json_serialize_sql(?::VARCHAR)", [statement]).fetchone()
    tree: dict[str, Any] = json.loads(row[0]) if row is not None else {"error": True, "error_message": "no tree"}
    if tree.get("error"):
        raise UnsafeSQL(f"not a valid query: {tree.get('error_message', 'unknown error')}")
    if len(tree.get("statements", [])) != 1:
        raise UnsafeSQL("only one statement is allowed")
    allowed = {table_name.lower()}
    _cte_names_in_tree(tree, allowed)
    _walk_tree(tree, allowed, table_name)


def validate_sql(sql: str, table_name: str) -> str:
    """The normalised single statement, or :class:`UnsafeSQL` naming the rule it broke."""
    statement = check_tokens(sql, table_name)
    check_with_duckdb(statement, table_name)
    return statement


# The sandbox ------------------------------------------------------------------------------------------------


def _sandbox_config(memory_limit: str) -> dict[str, str | bool | int | float | list[str]]:
    return {
        # No file, no network, no extension install or load: the query can reach nothing but memory.
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        # A table name must never resolve to a Python object of the calling code.
        "python_enable_replacements": False,
        # No spill files: a query that needs more than the memory limit fails.
        "temp_directory": "",
        "threads": SANDBOX_THREADS,
        "memory_limit": memory_limit,
        # Last: from here on no statement (SET, RESET, PRAGMA) can change any of the above.
        "lock_configuration": True,
    }


@contextmanager
def sandbox_connection(memory_limit: str = DEFAULT_MEMORY_LIMIT) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory database, locked down before its first statement, closed afterwards.

    One per query: whatever a query did to its database (even a DROP if validation were bypassed) is
    gone with it, and the stored CSV is never opened by DuckDB.
    """
    connection = duckdb.connect(":memory:", config=_sandbox_config(memory_limit))
    try:
        yield connection
    finally:
        connection.close()


def quote_identifier(name: str) -> str:
    """``name`` as an SQL identifier in double quotes, quotes inside doubled."""
    return '"' + name.replace('"', '""') + '"'


@lru_cache(maxsize=1)
def _reserved_words() -> frozenset[str]:
    with sandbox_connection() as connection:
        rows = connection.execute(
            "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category <> 'unreserved'"
        ).fetchall()
    return frozenset(str(row[0]).lower() for row in rows) | FORBIDDEN_KEYWORDS


def sandbox_table_name(name: str) -> str:
    """``name`` unless a model could not write it unquoted (``order``, ``select``, ``load``): then ``name_table``."""
    return f"{name}_table" if name.lower() in _reserved_words() else name


def table_schema(table: TableData) -> str:
    """The table as DuckDB DDL, the form models write SQL against most reliably."""
    columns = ",\n".join(
        f"  {quote_identifier(column)} {DUCKDB_TYPES[column_type]}"
        for column, column_type in zip(table.columns, table.types, strict=True)
    )
    return f"CREATE TABLE {quote_identifier(table.name)} (\n{columns}\n);"


def load_table(connection: duckdb.DuckDBPyConnection, table: TableData) -> None:
    """Create the typed table and append its rows from Python (no file is read: see the module notes)."""
    columns = ", ".join(
        f"{quote_identifier(column)} {DUCKDB_TYPES[column_type]}"
        for column, column_type in zip(table.columns, table.types, strict=True)
    )
    connection.execute(f"CREATE TABLE {quote_identifier(table.name)} ({columns})")
    appender = connection.appender(quote_identifier(table.name))
    appender.append_rows(table.typed_rows())
    appender.flush()


# Results ----------------------------------------------------------------------------------------------------


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format(value, NUMBER_FORMAT)
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _markdown_cell(value: object) -> str:
    text = " ".join(_cell_text(value).split()).replace("|", "\\|")
    return text if len(text) <= MAX_MARKDOWN_CELL_CHARS else text[: MAX_MARKDOWN_CELL_CHARS - 1] + "…"


@dataclass(frozen=True)
class QueryResult:
    """At most ``max_rows`` rows; ``truncated`` says the query had more."""

    columns: list[str]
    rows: list[tuple[object, ...]]
    truncated: bool
    elapsed_ms: int

    def to_markdown(self) -> str:
        """The result as a Markdown table, with a note when there were no rows or more than shown."""
        if not self.columns:
            return "(no result)"
        lines = [
            "| " + " | ".join(_markdown_cell(column) for column in self.columns) + " |",
            "| " + " | ".join("---" for _ in self.columns) + " |",
        ]
        lines.extend("| " + " | ".join(_markdown_cell(value) for value in row) + " |" for row in self.rows)
        if not self.rows:
            lines.append("(no rows)")
        if self.truncated:
            lines.append(f"(only the first {len(self.rows)} rows are shown)")
        return "\n".join(lines)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def execute_unchecked(
    connection: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> QueryResult:
    """Run ``sql`` as given, with the time limit and the row cap.

    It does NOT validate: callers validate first; tests call it directly to show the sandbox alone holds when validation
    is bypassed.
    """
    timed_out = threading.Event()

    def interrupt() -> None:
        timed_out.set()
        with contextlib.suppress(duckdb.Error):  # the query may have just finished and closed its result
            connection.interrupt()

    timer = threading.Timer(timeout_s, interrupt)
    timer.daemon = True
    started = time.monotonic()
    timer.start()
    try:
        connection.execute(sql)
        description = connection.description
        # Results stream: fetching one row past the cap tells truncation without computing the rest.
        rows = connection.fetchmany(max_rows + 1) if description is not None else []
    except duckdb.InterruptException:
        raise QueryTimeout(f"query stopped after {timeout_s:g} s") from None
    except duckdb.Error as exc:
        if timed_out.is_set():
            raise QueryTimeout(f"query stopped after {timeout_s:g} s") from None
        raise QueryFailed(_first_line(exc)) from None
    finally:
        timer.cancel()
        # An interrupt already under way must be over before the caller closes the connection.
        timer.join()
    elapsed_ms = int((time.monotonic() - started) * 1000)
    columns = [str(column[0]) for column in description] if description is not None else []
    return QueryResult(columns, [tuple(row) for row in rows[:max_rows]], len(rows) > max_rows, elapsed_ms)


def run_table_query(
    table: TableData,
    sql: str,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
) -> QueryResult:
    """Validate ``sql`` against ``table.name``, then run it in a fresh sandbox holding only ``table``."""
    statement = validate_sql(sql, table.name)
    with sandbox_connection(memory_limit) as connection:
        try:
            load_table(connection, table)
        except duckdb.Error as exc:
            raise QueryFailed(f"the table could not be loaded: {_first_line(exc)}") from None
        return execute_unchecked(connection, statement, max_rows=max_rows, timeout_s=timeout_s)


def run_query(
    csv_bytes: bytes,
    table_name: str,
    sql: str,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
) -> QueryResult:
    """Run a model-written query over a stored table CSV (see :func:`run_table_query`)."""
    table = load_stored_table(csv_bytes, name=table_name)
    return run_table_query(table, sql, max_rows=max_rows, timeout_s=timeout_s, memory_limit=memory_limit)
