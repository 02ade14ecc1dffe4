import io

import pytest
from openpyxl import Workbook

from ragline.files.reading import UnsupportedFile
from ragline.ingest.tables import TableIngestor, table_document_input
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.embedded import EmbeddedEngine
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.tenants import SqliteTenantStore
from ragline.tables.parse import load_stored_table
from ragline.tables.store import InMemoryTableStore, TableNotFound
from ragline.types import ChunkType
from tests.unit.ragline.tables.fakes import EMBEDDING_MODEL, HashEmbedder

SALARIES = b"name,department,salary\nAlice,Sales,52000\nBob,Engineering,80000\nCara,Sales,61000\nDan,Support,45000\n"


class RecordingTableStore(InMemoryTableStore):
    def __init__(self):
        super().__init__()
        self.saved = []
        self.deleted = []

    def save(self, document_id, csv_bytes):
        self.saved.append(document_id)
        super().save(document_id, csv_bytes)

    def delete(self, document_id):
        self.deleted.append(document_id)
        super().delete(document_id)


class FailingEngine(EmbeddedEngine):
    def index_chunks(self, *args, **kwargs):
        raise RuntimeError("index down")


@pytest.fixture
def setup(db):
    embedder = HashEmbedder()
    models = ModelRegistry()
    models.add_embedder(EMBEDDING_MODEL, lambda: embedder, default=True)
    tenant, _ = SqliteTenantStore(db).create("acme")
    knowledge = SqliteKnowledgeStore(db)
    kb = knowledge.create_knowledge_base(tenant.id, "kb", EMBEDDING_MODEL)
    tables = InMemoryTableStore()
    engine = EmbeddedEngine(db)
    ingestor = TableIngestor(knowledge, engine, models, tables)
    return ingestor, knowledge, engine, tables, kb, embedder, models


def xlsx(sheets):
    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_csv_becomes_one_document_with_summary_and_column_chunks(setup):
    ingestor, knowledge, _, tables, kb, embedder, _ = setup
    (result,) = ingestor.ingest_table(kb, "salaries.csv", SALARIES, source="upload", tags=["hr", " hr "])
    document = result.document
    assert not result.duplicate
    assert result.chunk_count == 4
    assert (document.title, document.filename, document.file_type, document.tags) == (
        "salaries",
        "salaries.csv",
        "csv",
        ["hr"],
    )
    assert document.description == "Table of 4 rows and 3 columns"
    chunks = sorted(knowledge.chunks_of_document(kb.tenant_id, document.id), key=lambda c: c.chunk_index)
    assert [c.chunk_type for c in chunks] == [ChunkType.TABLE_SUMMARY] + [ChunkType.TABLE_COLUMN] * 3
    assert [c.metadata.get("column") for c in chunks[1:]] == ["name", "department", "salary"]
    assert all(c.metadata["table"] == "salaries" for c in chunks)
    assert len(embedder.calls) == 1
    assert len(embedder.calls[0]) == 4
    # The rows are stored for analysis, normalised.
    stored = load_stored_table(tables.load(document.id), name="salaries")
    assert stored.row_count == 4
    assert stored.columns == ["name", "department", "salary"]


def test_the_summary_is_found_by_a_question_about_its_columns(setup):
    ingestor, _, engine, _, kb, _, _ = setup
    (result,) = ingestor.ingest_table(kb, "salaries.csv", SALARIES)
    hits = engine.keyword_search(RetrieveParams(query="average salary by department", knowledge_base_ids=[kb.id]), 10)
    assert hits, "keyword search found nothing"
    assert {hit.knowledge_id for hit in hits} == {result.document.id}
    assert {hit.chunk_type for hit in hits} <= {ChunkType.TABLE_SUMMARY, ChunkType.TABLE_COLUMN}
    assert hits[0].chunk_metadata.get("table") == "salaries"


def test_same_table_twice_is_stored_once(setup):
    ingestor, _, _, tables, kb, _, _ = setup
    (first,) = ingestor.ingest_table(kb, "salaries.csv", SALARIES)
    (second,) = ingestor.ingest_table(kb, "copy of salaries.csv", SALARIES)
    assert second.duplicate
    assert second.document.id == first.document.id
    assert tables.load(first.document.id)


def test_workbook_sheets_become_separate_documents(setup):
    ingestor, knowledge, _, tables, kb, _, _ = setup
    raw = xlsx({"Staff": [["name", "age"], ["Alice", 30]], "Blank": [], "Sites": [["site"], ["Lyon"], ["Oslo"]]})
    results = ingestor.ingest_table(kb, "hr.xlsx", raw, title="HR")
    assert [r.document.title for r in results] == ["HR / Staff", "HR / Sites"]
    assert [r.document.file_type for r in results] == ["xlsx", "xlsx"]
    assert [r.chunk_count for r in results] == [3, 2]
    assert load_stored_table(tables.load(results[1].document.id), name="sites").rows == [["Lyon"], ["Oslo"]]
    summary = next(c for c in knowledge.chunks_of_document(kb.tenant_id, results[0].document.id) if c.chunk_index == 0)
    assert summary.metadata["sheet"] == "Staff"
    assert summary.content.startswith("Table: HR / Staff (from hr.xlsx)")


def test_a_failed_index_leaves_no_stored_rows(setup, db):
    _, knowledge, _, _, kb, _, models = setup
    tables = RecordingTableStore()
    ingestor = TableIngestor(knowledge, FailingEngine(db), models, tables)
    with pytest.raises(RuntimeError, match="index down"):
        ingestor.ingest_table(kb, "salaries.csv", SALARIES)
    assert knowledge.documents(kb.tenant_id, kb.id) == []
    assert len(tables.saved) == 1
    assert tables.deleted == tables.saved
    with pytest.raises(TableNotFound):
        tables.load(tables.saved[0])


def test_unreadable_files_are_refused_before_anything_is_stored(setup):
    ingestor, knowledge, _, _, kb, _, _ = setup
    with pytest.raises(UnsupportedFile):
        ingestor.ingest_table(kb, "empty.csv", b"")
    with pytest.raises(UnsupportedFile):
        ingestor.ingest_table(kb, "notes.txt", b"a,b\n1,2\n")
    assert knowledge.documents(kb.tenant_id, kb.id) == []


def test_document_input_hash_depends_on_sheet_and_content():
    (a,) = table_document_input("a.csv", b"x\n1\n")
    (b,) = table_document_input("b.csv", b"x\n1\n")
    (c,) = table_document_input("c.csv", b"x\n2\n")
    assert a.content_hash == b.content_hash != c.content_hash
    assert a.csv_bytes == b"x\n1\n"
    assert a.file_type == "csv"
