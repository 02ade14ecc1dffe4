"""validate_sql: every hostile query is refused, by our lexer and (where DuckDB can parse it) by DuckDB's
own parser on its own, so either layer alone would have stopped it."""

import pytest

from ragline.tables import sql as sql_module
from ragline.tables.sql import MAX_SQL_CHARS, UnsafeSQL, check_tokens, check_with_duckdb, tokenize, validate_sql

TABLE = "t"

# (query, part of the reason validate_sql gives)
HOSTILE = [
    ("COPY t TO '/tmp/x.csv'", "only SELECT"),
    ("ATTACH '/tmp/x.db'", "only SELECT"),
    ("DETACH memory", "only SELECT"),
    ("INSTALL httpfs", "only SELECT"),
    ("LOAD httpfs", "only SELECT"),
    ("PRAGMA database_list", "only SELECT"),
    ("SET enable_external_access=true", "only SELECT"),
    ("RESET lock_configuration", "only SELECT"),
    ("CALL duckdb_settings()", "only SELECT"),
    ("EXPORT DATABASE '/tmp/out'", "only SELECT"),
    ("IMPORT DATABASE '/tmp/out'", "only SELECT"),
    ("CREATE TABLE x AS SELECT 1", "only SELECT"),
    ("INSERT INTO t VALUES (1)", "only SELECT"),
    ("UPDATE t SET a = 1", "only SELECT"),
    ("DELETE FROM t", "only SELECT"),
    ("DROP TABLE t", "only SELECT"),
    ("ALTER TABLE t ADD COLUMN z INT", "only SELECT"),
    ("DESCRIBE t", "only SELECT"),
    ("SHOW TABLES", "only SELECT"),
    ("SUMMARIZE t", "only SELECT"),
    ("EXPLAIN SELECT 1", "only SELECT"),
    ("FROM t", "only SELECT"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "read_csv_auto"),
    ("SELECT * FROM read_text('/etc/passwd')", "read_text"),
    ("SELECT * FROM read_blob('/etc/passwd')", "read_blob"),
    ("SELECT * FROM read_parquet('s3://bucket/x.parquet')", "read_parquet"),
    ("SELECT * FROM read_json('https://example.com/x.json')", "read_json"),
    ("SELECT * FROM parquet_scan('/x')", "parquet_scan"),
    ("SELECT * FROM sniff_csv('/etc/passwd')", "sniff_csv"),
    ("SELECT * FROM 'data.csv'", "string cannot be used as a table"),
    ("SELECT * FROM '/etc/passwd'", "string cannot be used as a table"),
    ("SELECT * FROM t JOIN 'https://example.com/x.csv' ON true", "URLs"),
    ("SELECT * FROM t JOIN 'x.csv' ON true", "string cannot be used as a table"),
    ("SELECT * FROM glob('/*')", "glob"),
    ("SELECT * FROM duckdb_settings()", "duckdb_settings"),
    ("SELECT * FROM duckdb_extensions()", "duckdb_extensions"),
    ("SELECT * FROM pragma_database_list()", "pragma_database_list"),
    ("SELECT * FROM query('SELECT 1')", "query"),
    ("SELECT current_setting('enable_external_access')", "current_setting"),
    ("SELECT * FROM \"read_csv\"('/etc/passwd')", "read_csv"),
    ("SELECT \"read_text\"('/etc/passwd')", "read_text"),
    ("SELECT * FROM other_table", "other_table is not available"),
    ("SELECT * FROM t, other_table", "other_table is not available"),
    ("SELECT * FROM t a JOIN other_table b ON true", "other_table is not available"),
    ("SELECT * FROM t WHERE a IN (SELECT b FROM other_table)", "other_table is not available"),
    ("SELECT * FROM (t JOIN other_table ON true)", "other_table is not available"),
    ("SELECT * FROM main.t", "qualified"),
    ("SELECT * FROM memory.main.t", "qualified"),
    ("SELECT * FROM system.main.duckdb_tables()", "duckdb_tables"),
    ("SELECT * FROM system.main.t", "qualified"),
    ("SELECT * FROM range(100)", "table function range()"),
    ("SELECT * FROM unnest([1, 2])", "table function unnest()"),
    ("SELECT 1; DROP TABLE t; SELECT * FROM t", "one statement"),
    ("SELECT 1; SELECT 2", "one statement"),
    ("SELECT 1;;", "one statement"),
    ("SELECT 1 -- ;DROP TABLE t", "comments"),
    ("SELECT 1 --\n; DROP TABLE t", "comments"),
    ("SELECT 1 /* ; DROP TABLE t; */", "comments"),
    ("SELECT 1 /* /* nested */ ; DROP TABLE t */", "comments"),
    ("SELECT E'\\' ; DROP TABLE t; --' FROM t", "prefixed literals"),
    ("SELECT $$x$$", "'$'"),
    ("SELECT $tag$; DROP TABLE t;$tag$", "'$'"),
    ("SELECT * FROM t WHERE a = ?", "'?'"),
    ("SELECT * FROM t WHERE a = $1", "'$'"),
    ("SELECT `a` FROM t", "'`'"),
    ("SELECT 'https://example.com' AS u", "URLs"),
    ("SELECT 's3://bucket/key' AS u", "URLs"),
    ("SELECT 'file:///etc/passwd' AS u", "URLs"),
    ("SELECT 1 AS copy", "COPY is not allowed"),
    ("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "INSERT is not allowed"),
    ("SELECT * FROM t WHERE 'unterminated", "unterminated"),
    ("SELECT (1", "unbalanced"),
    ("SELECT * FROM", "without a table"),
    ("", "empty"),
    ("   ;  ", "empty"),
]

ALLOWED = [
    "SELECT * FROM t",
    "select * from T;",
    "SELECT 1",
    "SELECT 'COPY t TO ''/tmp/x.csv''; DROP TABLE t' AS text_that_looks_hostile FROM t",
    'SELECT "load", "set", "copy" FROM t',
    'SELECT "department", avg("salary") AS avg_salary FROM t GROUP BY ALL ORDER BY avg_salary DESC LIMIT 5',
    "WITH x AS (SELECT * FROM t WHERE a > 1) SELECT count(*) FROM x",
    "WITH x AS (SELECT a FROM t), y AS (SELECT a FROM x) SELECT * FROM x JOIN y USING (a)",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
    "SELECT count(*) FROM t a, t b, t c, t d",
    "SELECT * FROM t AS a(x, y), t AS b",
    "SELECT * FROM (SELECT a FROM t) s",
    "SELECT * FROM t WHERE a IN (SELECT a FROM t WHERE b IS NOT NULL)",
    "SELECT extract(year FROM d) AS y, count(*) FROM t GROUP BY 1",
    "SELECT a IS DISTINCT FROM b FROM t",
    "SELECT substring(a FROM 1 FOR 2) FROM t",
    "SELECT * FROM t PIVOT (sum(a) FOR b IN ('x', 'y'))",
    "SELECT * FROM (VALUES (1), (2)) v(a)",
    "SELECT * FROM t, LATERAL (SELECT t.a + 1) l",
    "SELECT a, row_number() OVER (PARTITION BY b ORDER BY c) AS rn FROM t QUALIFY rn = 1",
    "SELECT list_transform([1, 2], x -> x + 1), {'k': 1}, 'abc'.upper(), 1::DOUBLE, 1e3, .5",
    "SELECT * FROM t WHERE url LIKE '%example.com%'",
    "SELECT strftime(d, '%Y-%m') AS month, sum(a) FROM t GROUP BY month ORDER BY month",
    "SELECT a FROM t UNION ALL SELECT a FROM t EXCEPT SELECT 1",
]


@pytest.mark.parametrize(("query", "reason"), HOSTILE, ids=[q[:60] or "empty" for q, _ in HOSTILE])
def test_hostile_queries_are_refused(query, reason):
    with pytest.raises(UnsafeSQL) as raised:
        validate_sql(query, TABLE)
    assert reason in raised.value.reason


# Queries DuckDB parses: its own layer must refuse them too, without our lexer's help.
PARSER_HOSTILE = [
    "COPY t TO '/tmp/x.csv'",
    "ATTACH '/tmp/x.db'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "PRAGMA database_list",
    "SET enable_external_access=true",
    "DROP TABLE t",
    "DELETE FROM t",
    "DESCRIBE t",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM 'data.csv'",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM other_table",
    "SELECT * FROM (t JOIN other_table ON true)",
    "SELECT * FROM main.t",
    "SELECT \"read_text\"('/etc/passwd')",
    "SELECT current_setting('threads')",
    "SELECT 1; DROP TABLE t; SELECT * FROM t",
    "SELECT * FROM t WHERE a IN (SELECT b FROM other_table)",
]


@pytest.mark.parametrize("query", PARSER_HOSTILE)
def test_duckdb_layer_alone_refuses(query):
    with pytest.raises(UnsafeSQL):
        check_with_duckdb(query, TABLE)


@pytest.mark.parametrize("query", PARSER_HOSTILE)
def test_token_layer_alone_refuses(query):
    with pytest.raises(UnsafeSQL):
        check_tokens(query, TABLE)


def test_comment_hiding_a_statement_is_refused_even_though_duckdb_would_ignore_it():
    # DuckDB reads this as one harmless SELECT; refusing comments outright keeps the rule simple.
    check_with_duckdb("SELECT 1 -- ;DROP TABLE t", TABLE)
    with pytest.raises(UnsafeSQL, match="comments"):
        validate_sql("SELECT 1 -- ;DROP TABLE t", TABLE)


@pytest.mark.parametrize("query", ALLOWED)
def test_legitimate_queries_pass_both_layers(query):
    normalised = validate_sql(query, TABLE)
    assert not normalised.endswith(";")
    assert normalised == query.strip().removesuffix(";").strip()


def test_string_literal_containing_copy_is_data():
    query = "SELECT 'COPY' AS word, 'ATTACH ''/tmp/x.db''' AS other FROM t"
    assert validate_sql(query, TABLE) == query


def test_cte_may_be_read_but_only_when_defined():
    assert validate_sql("WITH x AS (SELECT * FROM t) SELECT * FROM x", TABLE)
    with pytest.raises(UnsafeSQL, match="x is not available"):
        validate_sql("SELECT * FROM x", TABLE)


def test_quoted_table_name_and_case_are_the_same_table():
    assert validate_sql('SELECT * FROM "Sales"', "sales")
    assert validate_sql("SELECT * FROM SALES", "sales")


def test_only_the_trailing_semicolon_is_removed():
    assert validate_sql("  SELECT 1 ;  ", TABLE) == "SELECT 1"


def test_overlong_query_is_refused():
    with pytest.raises(UnsafeSQL, match="longer than"):
        validate_sql("SELECT " + "1 + " * MAX_SQL_CHARS + "1", TABLE)


def test_non_ascii_space_does_not_split_words_differently_from_duckdb():
    # DuckDB's lexer reads U+00A0 as part of an identifier; so does ours: "t\xa0" is not the table t.
    with pytest.raises(UnsafeSQL, match="not available"):
        validate_sql("SELECT * FROM t\u00a0", TABLE)


def test_tokenizer_reads_escaped_quotes_like_duckdb():
    tokens = tokenize("SELECT 'it''s', \"a\"\"b\" FROM t")
    assert [t.kind.value for t in tokens] == ["word", "string", "symbol", "quoted", "word", "word"]
    assert tokens[1].value == "it's"
    assert tokens[3].value == 'a"b'


def test_number_running_into_a_word_is_refused():
    with pytest.raises(UnsafeSQL, match="malformed number"):
        validate_sql("SELECT 1e'x' FROM t", TABLE)
    with pytest.raises(UnsafeSQL, match="malformed number"):
        validate_sql("SELECT 0x1F", TABLE)


def test_denied_function_list_covers_file_and_system_families():
    for name in ("read_ndjson", "read_json_auto", "duckdb_secrets", "pragma_storage_info", "arrow_scan", "http_get"):
        assert sql_module.denied_function(name), name
    for name in ("avg", "sum", "strftime", "list_transform", "regexp_matches", "date_trunc"):
        assert not sql_module.denied_function(name), name
