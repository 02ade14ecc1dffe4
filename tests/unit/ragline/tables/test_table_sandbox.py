"""run_query and the sandbox under it.

The hostile queries are run through ``execute_unchecked`` in a loaded sandbox, i.e. as if validation had
been bypassed: each must fail or do nothing harmful with only the connection's own settings in the way.
"""

import time
from datetime import date
from decimal import Decimal

import pytest

from ragline.tables.parse import TableData, load_stored_table, parse_csv
from ragline.tables.sql import (
    DEFAULT_MAX_ROWS,
    QueryFailed,
    QueryResult,
    QueryTimeout,
    UnsafeSQL,
    execute_unchecked,
    load_table,
    run_query,
    run_table_query,
    sandbox_connection,
    sandbox_table_name,
    table_schema,
)

STAFF_CSV = (
    b"name,department,salary,hired,remote\n"
    b"Alice,Sales,52000,2020-01-03,true\n"
    b"Bob,Engineering,80000.5,2019-05-01,false\n"
    b"Cara,Sales,61000,2021-07-11,true\n"
    b"Dan,Support,,2018-02-14,false\n"
)
# Small enough to load fast, large enough that a 4-way cross join (10^12 rows) runs for minutes.
BOMB_ROWS = 1000
QUICK_TIMEOUT_S = 0.5


def staff() -> TableData:
    return load_stored_table(parse_csv(STAFF_CSV, filename="staff.csv").to_csv_bytes(), name="staff")


def numbers(count: int) -> TableData:
    return TableData(name="t", title="t", columns=["n"], rows=[[str(i)] for i in range(count)])


@pytest.fixture
def sandbox():
    """A loaded sandbox exactly as run_query builds it, for running queries without validation."""
    with sandbox_connection() as connection:
        load_table(connection, staff())
        yield connection


# Normal use ----------------------------------------------------------------------------------------------


def test_run_query_over_stored_csv():
    stored = parse_csv(STAFF_CSV, filename="staff.csv").to_csv_bytes()
    result = run_query(
        stored,
        "staff",
        'SELECT "department", avg("salary") AS avg_salary, count(*) AS n FROM staff GROUP BY ALL ORDER BY 1',
    )
    assert result.columns == ["department", "avg_salary", "n"]
    assert result.rows == [("Engineering", 80000.5, 1), ("Sales", 56500.0, 2), ("Support", None, 1)]
    assert not result.truncated
    assert result.elapsed_ms >= 0


def test_types_reach_duckdb():
    result = run_table_query(
        staff(),
        'SELECT typeof("salary"), typeof(hired), typeof(remote), max(hired), count(*) FILTER (WHERE remote) FROM staff GROUP BY ALL',
    )
    assert result.rows == [("DOUBLE", "DATE", "BOOLEAN", date(2021, 7, 11), 2)]


def test_schema_is_ddl_with_quoted_columns():
    assert table_schema(staff()) == (
        'CREATE TABLE "staff" (\n  "name" VARCHAR,\n  "department" VARCHAR,\n  "salary" DOUBLE,\n'
        '  "hired" DATE,\n  "remote" BOOLEAN\n);'
    )


def test_column_names_with_spaces_and_quotes_load():
    table = parse_csv(b'Annual Salary,"say ""hi"""\n1,x\n', filename="odd.csv")
    result = run_table_query(table, 'SELECT "Annual Salary", "say ""hi""" FROM odd')
    assert result.rows == [(1, "x")]


def test_reserved_table_names_get_a_suffix():
    assert sandbox_table_name("order") == "order_table"
    assert sandbox_table_name("load") == "load_table"
    assert sandbox_table_name("sales") == "sales"


def test_run_query_validates_first():
    with pytest.raises(UnsafeSQL, match="only SELECT"):
        run_query(STAFF_CSV, "staff", "DROP TABLE staff")


def test_errors_of_a_valid_query_are_query_failed():
    with pytest.raises(QueryFailed, match="nope"):
        run_table_query(staff(), 'SELECT "nope" FROM staff')


def test_huge_result_is_capped_and_flagged():
    result = run_table_query(numbers(BOMB_ROWS), "SELECT a.n, b.n FROM t a, t b", max_rows=50)
    assert len(result.rows) == 50
    assert result.truncated


def test_default_cap_and_exact_fit_is_not_truncated():
    table = numbers(DEFAULT_MAX_ROWS)
    result = run_table_query(table, "SELECT n FROM t ORDER BY n")
    assert len(result.rows) == DEFAULT_MAX_ROWS
    assert not result.truncated
    assert run_table_query(numbers(DEFAULT_MAX_ROWS + 1), "SELECT n FROM t").truncated


def test_cross_join_bomb_is_stopped_by_the_time_limit():
    started = time.monotonic()
    with pytest.raises(QueryTimeout, match="stopped after"):
        run_table_query(numbers(BOMB_ROWS), "SELECT count(*) FROM t a, t b, t c, t d", timeout_s=QUICK_TIMEOUT_S)
    assert time.monotonic() - started < QUICK_TIMEOUT_S + 5


def test_recursive_cte_without_end_is_stopped():
    with pytest.raises((QueryTimeout, QueryFailed)):
        run_table_query(
            numbers(1),
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
            timeout_s=QUICK_TIMEOUT_S,
        )


def test_memory_limit_stops_a_query_that_needs_more():
    with pytest.raises((QueryFailed, QueryTimeout)):
        run_table_query(
            numbers(BOMB_ROWS),
            "SELECT a.n, b.n, c.n FROM t a, t b, t c ORDER BY 1 DESC, 2 DESC, 3 DESC",
            memory_limit="32MB",
            timeout_s=10,
        )


# Hostile queries with validation bypassed ----------------------------------------------------------------


def test_copy_writes_no_file(sandbox, tmp_path):
    target = tmp_path / "x.csv"
    with pytest.raises(QueryFailed, match="Permission"):
        execute_unchecked(sandbox, f"COPY staff TO '{target}'")
    assert not target.exists()


def test_attach_opens_no_database(sandbox, tmp_path):
    target = tmp_path / "x.db"
    with pytest.raises(QueryFailed, match="Permission"):
        execute_unchecked(sandbox, f"ATTACH '{target}'")
    assert not target.exists()


@pytest.mark.parametrize("statement", ["INSTALL httpfs", "LOAD httpfs", "FORCE INSTALL httpfs"])
def test_extensions_can_be_neither_installed_nor_loaded(sandbox, statement):
    with pytest.raises(QueryFailed):
        execute_unchecked(sandbox, statement)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/passwd')",
        "SELECT * FROM 'data.csv'",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM read_csv('https://example.com/x.csv')",
        "SELECT * FROM duckdb_extensions()",
    ],
)
def test_files_and_network_are_unreachable(sandbox, query):
    # Without a known file suffix DuckDB does not even try a file: the string is an unknown table name.
    with pytest.raises(QueryFailed, match=r"Permission|disabled|does not exist"):
        execute_unchecked(sandbox, query)


@pytest.mark.parametrize(
    "statement",
    [
        "SET enable_external_access=true",
        "RESET enable_external_access",
        "SET lock_configuration=false",
        "SET autoload_known_extensions=true",
        "SET memory_limit='100GB'",
        "SET threads=64",
        "PRAGMA enable_external_access",
    ],
)
def test_configuration_is_locked(sandbox, statement):
    with pytest.raises(QueryFailed):
        execute_unchecked(sandbox, statement)
    settings = dict(
        execute_unchecked(
            sandbox,
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('enable_external_access', 'lock_configuration', 'autoload_known_extensions', 'threads')",
        ).rows
    )
    assert settings == {
        "enable_external_access": "false",
        "lock_configuration": "true",
        "autoload_known_extensions": "false",
        "threads": "1",
    }


def test_metadata_queries_see_only_the_sandbox(sandbox):
    # PRAGMA and duckdb_* run here if validation is bypassed, but there is nothing beyond the loaded table.
    assert [row[1] for row in execute_unchecked(sandbox, "PRAGMA database_list").rows] == ["memory"]
    tables = execute_unchecked(sandbox, "SELECT table_name FROM duckdb_tables()").rows
    assert tables == [("staff",)]


def test_python_variables_are_not_tables(sandbox):
    import duckdb
    import numpy as np

    secret_rows = np.arange(3)
    # A default connection would scan the caller's variable as a table...
    with duckdb.connect(":memory:") as default:
        assert default.execute("SELECT count(*) FROM secret_rows").fetchall() == [(3,)]
    # ...the sandbox does not.
    with pytest.raises(duckdb.CatalogException, match="secret_rows"):
        sandbox.execute("SELECT count(*) FROM secret_rows")
    assert secret_rows.size == 3


def test_other_tables_do_not_exist(sandbox):
    with pytest.raises(QueryFailed, match="other_table"):
        execute_unchecked(sandbox, "SELECT * FROM other_table")


def test_drop_and_delete_touch_only_the_throwaway_copy():
    stored = parse_csv(STAFF_CSV, filename="staff.csv").to_csv_bytes()
    with sandbox_connection() as connection:
        load_table(connection, load_stored_table(stored, name="staff"))
        execute_unchecked(connection, "DELETE FROM staff")
        execute_unchecked(connection, "DROP TABLE staff")
    # The next query gets a fresh sandbox from the same stored bytes: nothing was lost.
    assert run_query(stored, "staff", "SELECT count(*) FROM staff").rows == [(4,)]


def test_a_second_statement_is_held_by_the_sandbox_too(tmp_path):
    # DuckDB's execute() runs every statement of a string; validation refuses such strings, and if it
    # did not, the COPY would still meet the disabled file system.
    target = tmp_path / "never.csv"
    with sandbox_connection() as connection:
        load_table(connection, staff())
        with pytest.raises(QueryFailed, match="Permission"):
            execute_unchecked(connection, f"SELECT 1; COPY staff TO '{target}'")
    assert not target.exists()


# Rendering ------------------------------------------------------------------------------------------------


def test_markdown_rendering():
    result = QueryResult(
        columns=["dept", "avg", "when", "ok", "note", "big"],
        rows=[
            ("Sales", 56500.0, date(2024, 1, 2), True, "a|b\nc", Decimal("12.50")),
            ("Eng", 1 / 3, None, False, "", 7),
        ],
        truncated=True,
        elapsed_ms=3,
    )
    assert result.to_markdown().splitlines() == [
        "| dept | avg | when | ok | note | big |",
        "| --- | --- | --- | --- | --- | --- |",
        "| Sales | 56500 | 2024-01-02 | true | a\\|b c | 12.50 |",
        "| Eng | 0.3333333333 |  | false |  | 7 |",
        "(only the first 2 rows are shown)",
    ]


def test_markdown_of_empty_results():
    assert QueryResult(["a"], [], False, 0).to_markdown().splitlines()[-1] == "(no rows)"
    assert QueryResult([], [], False, 0).to_markdown() == "(no result)"
