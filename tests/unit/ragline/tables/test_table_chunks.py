from ragline.tables.chunks import (
    SUMMARY_EXAMPLE_ROWS,
    TOP_VALUES,
    column_text,
    summary_text,
    table_chunks,
)
from ragline.tables.parse import parse_csv
from ragline.types import ChunkType

EMPLOYEES = (
    "name,department,salary,hired\n"
    "Alice,Sales,52000,2020-01-03\n"
    "Bob,Engineering,80000,2019-05-01\n"
    "Cara,Sales,61000,2021-07-11\n"
    "Dan,Support,,2018-02-14\n"
    "Eve,Sales,70000,2022-09-30\n"
)


def employees():
    return parse_csv(EMPLOYEES.encode(), filename="employees.csv")


def test_summary_names_the_table_its_size_columns_and_example_rows():
    text = summary_text(employees(), "employees.csv")
    lines = text.splitlines()
    assert lines[0] == "Table: employees (from employees.csv)"
    assert "Rows: 5" in lines
    assert "Columns (4): name (text), department (text), salary (integer), hired (date)" in lines
    assert "| name | department | salary | hired |" in lines
    assert "| Alice | Sales | 52000 | 2020-01-03 |" in lines
    assert sum(line.startswith("| ") for line in lines) == 1 + 1 + SUMMARY_EXAMPLE_ROWS  # header, rule, rows
    # What a question like "average salary by department" matches.
    assert "salary" in text
    assert "department" in text


def test_summary_says_when_rows_were_not_loaded():
    table = employees()
    table.truncated = True
    assert "Rows: 5 (more rows in the file were not loaded)" in summary_text(table)


def test_numeric_column_has_range_and_mean():
    text = column_text(employees(), 2)
    assert text.splitlines() == [
        'Column "salary" of table employees',
        "Type: integer",
        "Values: 4 (1 empty), 4 distinct",
        "Minimum: 52000, maximum: 80000, mean: 65750",
    ]


def test_text_column_lists_most_frequent_values():
    text = column_text(employees(), 1)
    assert "Most frequent: Sales (3), Engineering (1), Support (1)" in text
    assert "Values: 5 (0 empty), 3 distinct" in text


def test_top_values_are_capped_and_long_values_cut():
    rows = "".join(f"{'x' * 100}{i}\n" for i in range(TOP_VALUES + 3))
    table = parse_csv(f"v\n{rows}".encode(), filename="long.csv")
    line = column_text(table, 0).splitlines()[-1]
    assert line.count("(1)") == TOP_VALUES
    assert "x" * 100 not in line
    assert "…" in line


def test_date_column_has_earliest_and_latest():
    assert "Earliest: 2018-02-14, latest: 2022-09-30" in column_text(employees(), 3)


def test_chunks_summary_first_then_one_per_column_with_metadata():
    chunks = table_chunks(employees(), "employees.csv")
    assert [c.chunk_type for c in chunks] == [ChunkType.TABLE_SUMMARY] + [ChunkType.TABLE_COLUMN] * 4
    assert all(c.header == "employees" for c in chunks)
    assert chunks[0].metadata == {
        "table": "employees",
        "row_count": 5,
        "columns": {"name": "text", "department": "text", "salary": "integer", "hired": "date"},
    }
    assert chunks[3].metadata == {"table": "employees", "column": "salary", "type": "integer"}
    assert chunks[3].content.startswith('Column "salary"')


def test_pipes_in_cells_do_not_break_the_example_table():
    table = parse_csv(b"a,b\nx|y,z\n", filename="p.csv")
    assert "| x\\|y | z |" in summary_text(table)
