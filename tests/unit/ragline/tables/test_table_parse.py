import io
from datetime import date, datetime

import pytest
from openpyxl import Workbook

from ragline.files.reading import UnsupportedFile
from ragline.tables import parse
from ragline.tables.parse import (
    ColumnType,
    column_names,
    excel_cell_text,
    infer_type,
    is_table_file,
    load_stored_table,
    parse_csv,
    parse_table_file,
    parse_xlsx,
    sql_identifier,
)

STAFF_CSV = (
    "name,department,salary,hired,remote,badge\n"
    "Alice,Sales,52000,2020-01-03,true,007\n"
    "Bob,Engineering,80000.5,2019-05-01,false,012\n"
    "Cara,Sales,61000,2021-07-11,yes,100\n"
)


def xlsx_bytes(sheets: dict[str, list[list[object]]]) -> bytes:
    """A workbook built with openpyxl, one sheet per entry (an empty list leaves the sheet empty)."""
    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


# CSV ---------------------------------------------------------------------------------------------------------


def test_csv_header_rows_and_inferred_types():
    table = parse_csv(STAFF_CSV.encode(), filename="Staff List.csv")
    assert table.name == "staff_list"
    assert table.title == "Staff List"
    assert table.columns == ["name", "department", "salary", "hired", "remote", "badge"]
    assert table.row_count == 3
    assert table.rows[1] == ["Bob", "Engineering", "80000.5", "2019-05-01", "false", "012"]
    assert table.types == [
        ColumnType.TEXT,
        ColumnType.TEXT,
        ColumnType.FLOAT,
        ColumnType.DATE,
        ColumnType.BOOLEAN,
        ColumnType.TEXT,  # leading zeros: a code, not a number
    ]
    assert not table.truncated


@pytest.mark.parametrize(
    ("text", "delimiter_seen"),
    [
        ("a;b;c\n1;2;3\n4;5;6\n", ";"),
        ("a|b|c\n1|2|3\n4|5|6\n", "|"),
        ("a\tb\tc\n1\t2\t3\n4\t5\t6\n", "\t"),
    ],
)
def test_delimiter_is_sniffed(text, delimiter_seen):
    table = parse_csv(text.encode(), filename="x.csv")
    assert table.columns == ["a", "b", "c"], delimiter_seen
    assert table.rows == [["1", "2", "3"], ["4", "5", "6"]]
    assert table.types == [ColumnType.INTEGER] * 3


def test_tsv_is_tab_separated_without_sniffing():
    table = parse_csv(b"city\tnote\nParis\ta, b; c\n", filename="places.tsv")
    assert table.columns == ["city", "note"]
    assert table.rows == [["Paris", "a, b; c"]]


def test_quoted_cells_keep_delimiters_and_newlines():
    table = parse_csv(b'name,comment\n"Smith, J.","line one\nline two"\n', filename="c.csv")
    assert table.rows == [["Smith, J.", "line one\nline two"]]


def test_blank_rows_ragged_rows_and_trailing_empty_columns():
    text = "a,b,,\n\n1,2\n,,\n3,4,5,\n"
    table = parse_csv(text.encode(), filename="r.csv")
    assert table.columns == ["a", "b", "column_3"]
    assert table.rows == [["1", "2", ""], ["3", "4", "5"]]


def test_duplicate_and_blank_header_names_become_unique():
    assert column_names(["id", "Name", "name", "", "  spaced   out "]) == [
        "id",
        "Name",
        "name_2",
        "column_4",
        "spaced out",
    ]


def test_windows_1252_csv_is_read():
    raw = "ville,prix\nOrléans,3\n".encode("cp1252")
    table = parse_csv(raw, filename="v.csv")
    assert table.rows == [["Orléans", "3"]]


def test_utf8_bom_is_not_part_of_the_first_column():
    table = parse_csv("\ufeffid,v\n1,2\n".encode(), filename="b.csv")
    assert table.columns == ["id", "v"]


def test_rows_beyond_the_cap_are_dropped_and_flagged(monkeypatch):
    monkeypatch.setattr(parse, "MAX_ROWS", 5)
    text = "n\n" + "".join(f"{i}\n" for i in range(12))
    table = parse_csv(text.encode(), filename="n.csv")
    assert table.row_count == 5
    assert table.truncated
    assert table.rows[-1] == ["4"]


def test_too_many_columns_is_refused(monkeypatch):
    monkeypatch.setattr(parse, "MAX_COLUMNS", 3)
    with pytest.raises(UnsupportedFile, match="4 columns"):
        parse_csv(b"a,b,c,d\n1,2,3,4\n", filename="w.csv")


@pytest.mark.parametrize("raw", [b"", b"\n\n  \n", b",,,\n"])
def test_a_file_without_a_header_is_refused(raw):
    with pytest.raises(UnsupportedFile):
        parse_csv(raw, filename="empty.csv")


def test_header_only_table_has_no_rows_and_text_types():
    table = parse_csv(b"a,b\n", filename="h.csv")
    assert table.row_count == 0
    assert table.types == [ColumnType.TEXT, ColumnType.TEXT]


# Type inference ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "-2", "+3", ""], ColumnType.INTEGER),
        (["1", "2.5", "-3e2", ".5"], ColumnType.FLOAT),
        (["True", "false", "YES", "no"], ColumnType.BOOLEAN),
        (["2024-02-29", "1999-12-31"], ColumnType.DATE),
        (["2023-02-29"], ColumnType.TEXT),  # not a real day
        (["2024/01/02"], ColumnType.TEXT),  # only ISO dates are dates
        (["007", "12"], ColumnType.TEXT),
        (["12345678901234567890123"], ColumnType.TEXT),  # does not fit a BIGINT: an identifier
        (["nan", "inf"], ColumnType.TEXT),  # Python's float() accepts these; a table's text does not mean them
        (["1_000"], ColumnType.TEXT),
        (["1", "x"], ColumnType.TEXT),
        (["", ""], ColumnType.TEXT),
        (["0", "1"], ColumnType.INTEGER),  # 0/1 are numbers, not booleans
    ],
)
def test_infer_type(values, expected):
    assert infer_type(values) is expected


def test_typed_rows_convert_cells_and_empty_is_none():
    table = parse_csv(b"i,f,b,d,t\n1,2.5,yes,2024-01-02,x\n,,,,\n3,4,no,2024-01-03,\n", filename="t.csv")
    assert list(table.typed_rows()) == [
        (1, 2.5, True, date(2024, 1, 2), "x"),
        (3, 4.0, False, date(2024, 1, 3), None),
    ]


# Names ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q3 Sales (EU)", "q3_sales_eu"),
        ("2024 budget", "t_2024_budget"),
        ("Données été", "donn_es_t"),
        ("***", "data"),
        ("", "data"),
    ],
)
def test_sql_identifier(text, expected):
    assert sql_identifier(text) == expected


def test_table_file_suffixes():
    assert is_table_file("a.CSV")
    assert is_table_file("b.tsv")
    assert is_table_file("c.xlsx")
    assert not is_table_file("d.pdf")
    assert not is_table_file("e.xls")
    with pytest.raises(UnsupportedFile, match="not a table file"):
        parse_table_file("notes.md", b"# hi")


# Normalised CSV ----------------------------------------------------------------------------------------------


def test_stored_csv_round_trips_without_sniffing():
    # A one-column table whose values hold semicolons: sniffing would split them.
    original = parse_csv(b"note\na;b\nc;d\ne;f\n", filename="notes.csv")
    assert original.columns == ["note"]
    stored = original.to_csv_bytes()
    assert stored == b"note\na;b\nc;d\ne;f\n"
    again = load_stored_table(stored, name="notes", title="Notes")
    assert (again.name, again.title, again.columns, again.rows, again.types) == (
        "notes",
        "Notes",
        ["note"],
        original.rows,
        original.types,
    )


def test_stored_csv_keeps_quotes_commas_and_unicode():
    table = parse_csv('a,b\n"x, ""y""",é\n'.encode(), filename="q.csv")
    again = load_stored_table(table.to_csv_bytes(), name="q")
    assert again.rows == [['x, "y"', "é"]]


# Excel ------------------------------------------------------------------------------------------------------


def test_xlsx_every_non_empty_sheet_is_a_table():
    raw = xlsx_bytes(
        {
            "Staff": [
                ["name", "salary", "hired", "remote", "score"],
                ["Alice", 52000, datetime(2020, 1, 3), True, 3.0],
                ["Bob", 80000.5, datetime(2019, 5, 1, 9, 30), False, 2.25],
            ],
            "Empty": [],
            "Regions": [[None, None], ["region", "target"], ["EU", 10], ["US", 20]],
        }
    )
    tables = parse_xlsx(raw, filename="HR Data.xlsx")
    assert [t.sheet for t in tables] == ["Staff", "Regions"]
    staff, regions = tables
    assert staff.title == "HR Data / Staff"
    assert staff.name == "hr_data_staff"
    assert staff.columns == ["name", "salary", "hired", "remote", "score"]
    assert staff.rows == [
        ["Alice", "52000", "2020-01-03", "true", "3"],
        ["Bob", "80000.5", "2019-05-01 09:30:00", "false", "2.25"],
    ]
    assert staff.types == [ColumnType.TEXT, ColumnType.FLOAT, ColumnType.TEXT, ColumnType.BOOLEAN, ColumnType.FLOAT]
    assert regions.columns == ["region", "target"]  # the blank first row is skipped
    assert regions.types == [ColumnType.TEXT, ColumnType.INTEGER]


def test_xlsx_single_sheet_is_named_after_the_file():
    raw = xlsx_bytes({"Sheet1": [["d", "n"], [date(2024, 1, 2), 1], [date(2024, 1, 3), 2]]})
    (table,) = parse_table_file("sales.xlsx", raw)
    assert (table.title, table.name, table.sheet) == ("sales", "sales", "Sheet1")
    assert table.types == [ColumnType.DATE, ColumnType.INTEGER]


def test_xlsx_without_any_table_and_broken_files_are_refused():
    with pytest.raises(UnsupportedFile, match="no sheet"):
        parse_xlsx(xlsx_bytes({"A": [], "B": []}), filename="e.xlsx")
    with pytest.raises(UnsupportedFile, match="could not be read"):
        parse_xlsx(b"not a zip file", filename="broken.xlsx")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (True, "true"),
        (3.0, "3"),
        (0.1, "0.1"),
        (1e20, "1e+20"),
        (datetime(2024, 5, 6), "2024-05-06"),
        (datetime(2024, 5, 6, 7, 8, 9), "2024-05-06 07:08:09"),
        (date(2024, 5, 6), "2024-05-06"),
        ("  padded ", "padded"),
        (42, "42"),
    ],
)
def test_excel_cell_text(value, text):
    assert excel_cell_text(value) == text
