import asyncio

import pytest

from ragline.config import load_config
from ragline.models.base import ModelCallError
from ragline.models.extractive import ExtractiveChatModel
from ragline.models.registry import ModelRegistry
from ragline.pipeline.data_analysis import (
    ANALYSIS_MAX_TOKENS,
    ANALYSIS_SCORE,
    PluginDataAnalysis,
    extract_sql,
    first_table_result,
    result_id,
)
from ragline.pipeline.plugin import EventManager
from ragline.tables.parse import parse_csv
from ragline.tables.store import InMemoryTableStore
from ragline.types import ChatManage, ChunkType, EventType, MatchType, SearchResult
from tests.support.chat_models import ScriptedChatModel

_, TEMPLATES = load_config()

DOCUMENT_ID = "3f1d2c4b-0000-4000-8000-000000000001"
OTHER_DOCUMENT_ID = "3f1d2c4b-0000-4000-8000-000000000002"
EMPLOYEES = b"name,department,salary\nAlice,Sales,52000\nBob,Engineering,80000\nCara,Sales,61000\nDan,Support,45000\n"
GOOD_SQL = 'SELECT "department", avg("salary") AS avg_salary FROM employees GROUP BY ALL ORDER BY 1'
QUESTION = "What is the average salary by department?"


def registry(model) -> ModelRegistry:
    models = ModelRegistry()
    models.add_chat_model(model.model_id, lambda: model, default=True)
    return models


def fenced(sql: str) -> str:
    return f"Here is the query:\n```sql\n{sql}\n```\n"


def table_result(document_id=DOCUMENT_ID, chunk_type=ChunkType.TABLE_SUMMARY, table="employees", score=0.8):
    return SearchResult(
        id=f"chunk-{document_id}-{chunk_type}",
        content="Table: employees",
        knowledge_id=document_id,
        knowledge_base_id="kb-1",
        knowledge_title="employees",
        knowledge_filename="employees.csv",
        chunk_type=chunk_type,
        score=score,
        chunk_metadata={"table": table},
    )


def text_result():
    return SearchResult(id="text-1", content="Our offices are in Lyon.", knowledge_id="doc-text", score=0.9)


@pytest.fixture
def tables():
    store = InMemoryTableStore()
    store.save(DOCUMENT_ID, parse_csv(EMPLOYEES, filename="employees.csv").to_csv_bytes())
    return store


def make_cm(make_request, results, enabled=True, query=QUESTION):
    cm = ChatManage.start(make_request(query=query, data_analysis_enabled=enabled))
    cm.state.merge_result = list(results)
    return cm


def run(plugin, cm):
    """Run the plugin's event with a recording next(): returns (error, whether next ran)."""
    reached = []

    async def next_():
        reached.append(True)
        return None

    error = asyncio.run(plugin.on_event(EventType.DATA_ANALYSIS, cm, next_))
    return error, bool(reached)


# Success -----------------------------------------------------------------------------------------------------


def test_success_adds_a_synthetic_result_with_score_one(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    plugin = PluginDataAnalysis(registry(model), TEMPLATES, tables)
    cm = make_cm(make_request, [text_result(), table_result()])
    error, reached = run(plugin, cm)
    assert error is None
    assert reached
    assert len(cm.state.merge_result) == 3
    added = cm.state.merge_result[-1]
    assert added.id == result_id(DOCUMENT_ID) == f"analysis-{DOCUMENT_ID}"
    assert added.score == ANALYSIS_SCORE == 1.0
    assert added.match_type == MatchType.DATA_ANALYSIS
    assert (added.knowledge_id, added.knowledge_base_id, added.knowledge_title, added.knowledge_filename) == (
        DOCUMENT_ID,
        "kb-1",
        "employees",
        "employees.csv",
    )
    assert added.metadata["sql"] == GOOD_SQL
    assert added.metadata["truncated"] == "false"
    lines = added.content.splitlines()
    assert lines[0] == 'Data analysis of the table "employees" (employees.csv, 4 rows)'
    assert f"Question: {QUESTION}" in lines
    assert GOOD_SQL in lines
    assert "| department | avg_salary |" in lines
    assert "| Engineering | 80000 |" in lines
    assert "| Sales | 56500 |" in lines
    assert "| Support | 45000 |" in lines


def test_prompt_shows_schema_example_rows_and_question(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    run(PluginDataAnalysis(registry(model), TEMPLATES, tables), make_cm(make_request, [table_result()]))
    ((messages, options),) = model.calls
    assert [m.role for m in messages] == ["system", "user"]
    system, user = messages[0].content, messages[1].content
    assert "DuckDB" in system
    assert "```sql" in system
    assert "employees" in system
    assert 'CREATE TABLE "employees" (' in user
    assert '"salary" BIGINT' in user
    assert "| Alice | Sales | 52000 |" in user
    assert f"Question: {QUESTION}" in user
    assert "{" not in user.replace("{{", "")  # every placeholder was filled
    assert options.max_tokens == ANALYSIS_MAX_TOKENS
    assert options.thinking is False


def test_rewritten_question_is_the_one_analysed(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    cm = make_cm(make_request, [table_result()], query="and by department?")
    cm.state.rewrite_query = "What is the average salary by department?"
    run(PluginDataAnalysis(registry(model), TEMPLATES, tables), cm)
    assert "Question: What is the average salary by department?" in model.calls[0][0][1].content


def test_first_table_among_results_is_analysed(make_request, tables):
    tables.save(OTHER_DOCUMENT_ID, b"x\n1\n")
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    results = [
        text_result(),
        table_result(DOCUMENT_ID, ChunkType.TABLE_COLUMN, score=0.7),
        table_result(OTHER_DOCUMENT_ID, ChunkType.TABLE_SUMMARY, table="other", score=0.6),
    ]
    cm = make_cm(make_request, results)
    run(PluginDataAnalysis(registry(model), TEMPLATES, tables), cm)
    assert cm.state.merge_result[-1].knowledge_id == DOCUMENT_ID
    assert first_table_result(results) is results[1]


def test_large_result_is_capped(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced("SELECT a.name, b.name FROM employees a, employees b"))
    cm = make_cm(make_request, [table_result()])
    run(PluginDataAnalysis(registry(model), TEMPLATES, tables, max_rows=5), cm)
    added = cm.state.merge_result[-1]
    assert added.metadata["truncated"] == "true"
    assert "(only the first 5 rows are shown)" in added.content


def test_runs_as_a_registered_plugin_and_the_chain_continues(make_request, tables):
    seen = []

    class After:
        def activation_events(self):
            return [EventType.DATA_ANALYSIS]

        async def on_event(self, event_type, cm, next):
            seen.append([r.match_type for r in cm.state.merge_result])
            return await next()

    events = EventManager()
    events.register(PluginDataAnalysis(registry(ScriptedChatModel("fake-sql", fenced(GOOD_SQL))), TEMPLATES, tables))
    events.register(After())
    cm = make_cm(make_request, [table_result()])
    assert asyncio.run(events.trigger(EventType.DATA_ANALYSIS, cm)) is None
    assert seen == [[MatchType.EMBEDDING, MatchType.DATA_ANALYSIS]]


def test_a_retried_step_adds_the_result_once(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL), fenced(GOOD_SQL))
    plugin = PluginDataAnalysis(registry(model), TEMPLATES, tables)
    cm = make_cm(make_request, [table_result()])
    run(plugin, cm)
    run(plugin, cm)
    assert [r.id for r in cm.state.merge_result].count(result_id(DOCUMENT_ID)) == 1
    assert len(model.calls) == 1


# Nothing added, chain continues --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        fenced("SELECT * FROM read_csv('/etc/passwd')"),
        fenced("COPY employees TO '/tmp/out.csv'"),
        fenced("SELECT 1; DROP TABLE employees"),
        fenced("SELECT * FROM other_table"),
        fenced("SELECT 1 -- ; ATTACH '/tmp/x.db'"),
        fenced("INSTALL httpfs"),
    ],
)
def test_unsafe_sql_adds_nothing_and_continues(make_request, tables, reply, caplog):
    model = ScriptedChatModel("fake-sql", reply)
    cm = make_cm(make_request, [table_result()])
    error, reached = run(PluginDataAnalysis(registry(model), TEMPLATES, tables), cm)
    assert error is None
    assert reached
    assert len(cm.state.merge_result) == 1
    assert "query refused" in caplog.text


def test_disabled_flag_skips_without_calling_the_model(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    cm = make_cm(make_request, [table_result()], enabled=False)
    error, reached = run(PluginDataAnalysis(registry(model), TEMPLATES, tables), cm)
    assert error is None
    assert reached
    assert model.calls == []
    assert len(cm.state.merge_result) == 1


def test_no_table_among_results_skips(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    cm = make_cm(make_request, [text_result()])
    _, reached = run(PluginDataAnalysis(registry(model), TEMPLATES, tables), cm)
    assert reached
    assert model.calls == []
    assert len(cm.state.merge_result) == 1


@pytest.mark.parametrize(
    "reply",
    [
        ModelCallError("endpoint down"),
        "NONE",
        "I cannot help with that.",
        fenced('SELECT "no_such_column" FROM employees'),
        fenced(
            "SELECT count(*) FROM employees a, employees b, employees c, employees d, employees e, employees f, employees g, employees h, employees i, employees j, employees k, employees l, employees m, employees n, employees o, employees p"
        ),
    ],
)
def test_model_and_query_failures_add_nothing(make_request, tables, reply):
    model = ScriptedChatModel("fake-sql", reply)
    cm = make_cm(make_request, [table_result()])
    error, reached = run(PluginDataAnalysis(registry(model), TEMPLATES, tables, timeout_s=0.5), cm)
    assert error is None
    assert reached
    assert len(cm.state.merge_result) == 1


def test_missing_stored_table_adds_nothing(make_request):
    model = ScriptedChatModel("fake-sql", fenced(GOOD_SQL))
    cm = make_cm(make_request, [table_result()])
    _, reached = run(PluginDataAnalysis(registry(model), TEMPLATES, InMemoryTableStore()), cm)
    assert reached
    assert model.calls == []
    assert len(cm.state.merge_result) == 1


def test_no_generative_model_skips(make_request, tables):
    extractive = ModelRegistry()
    extractive.add_chat_model(ExtractiveChatModel.model_id, ExtractiveChatModel, default=True)
    cm = make_cm(make_request, [table_result()])
    _, reached = run(PluginDataAnalysis(extractive, TEMPLATES, tables), cm)
    assert reached
    assert len(cm.state.merge_result) == 1
    _, reached = run(PluginDataAnalysis(ModelRegistry(), TEMPLATES, tables), cm)
    assert reached
    assert len(cm.state.merge_result) == 1


def test_hostile_table_name_in_metadata_is_re_sanitised(make_request, tables):
    model = ScriptedChatModel("fake-sql", fenced("SELECT count(*) AS n FROM x_drop_table_t"))
    cm = make_cm(make_request, [table_result(table='x"; DROP TABLE t; --')])
    run(PluginDataAnalysis(registry(model), TEMPLATES, tables), cm)
    assert 'CREATE TABLE "x_drop_table_t"' in model.calls[0][0][1].content
    assert "| 4 |" in cm.state.merge_result[-1].content


# Parsing the reply ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "sql"),
    [
        ("```sql\nSELECT 1\n```", "SELECT 1"),
        ("Sure!\n```SQL\nSELECT 1\nFROM t\n```\nDone.", "SELECT 1\nFROM t"),
        ("```\nSELECT 2\n```", "SELECT 2"),
        ("```duckdb\nWITH x AS (SELECT 1) SELECT * FROM x\n```", "WITH x AS (SELECT 1) SELECT * FROM x"),
        ("<think>use avg</think>\n```sql\nSELECT avg(a) FROM t\n```", "SELECT avg(a) FROM t"),
        ("```text\nnote\n```\n```sql\nSELECT 3\n```", "SELECT 3"),
        ("SELECT 4", "SELECT 4"),
        ("  with x as (select 1) select * from x", "with x as (select 1) select * from x"),
        ("NONE", None),
        ("The table has no such data.", None),
        ("```sql\n```", None),
        ("", None),
    ],
)
def test_extract_sql(reply, sql):
    assert extract_sql(reply) == sql


# From upload to analysis ------------------------------------------------------------------------------------


def test_an_ingested_csv_found_by_search_is_analysed(db, make_request):
    from ragline.ingest.tables import TableIngestor
    from ragline.retrieval.base import RetrieveParams
    from ragline.retrieval.embedded import EmbeddedEngine
    from ragline.store.knowledge import SqliteKnowledgeStore
    from ragline.store.tenants import SqliteTenantStore
    from tests.unit.ragline.tables.fakes import EMBEDDING_MODEL, HashEmbedder

    models = registry(ScriptedChatModel("fake-sql", fenced(GOOD_SQL)))
    models.add_embedder(EMBEDDING_MODEL, HashEmbedder, default=True)
    tenant, _ = SqliteTenantStore(db).create("acme")
    knowledge = SqliteKnowledgeStore(db)
    kb = knowledge.create_knowledge_base(tenant.id, "hr", EMBEDDING_MODEL)
    engine = EmbeddedEngine(db)
    tables = InMemoryTableStore()
    (ingested,) = TableIngestor(knowledge, engine, models, tables).ingest_table(kb, "employees.csv", EMPLOYEES)

    hits = engine.keyword_search(RetrieveParams(query=QUESTION, knowledge_base_ids=[kb.id]), 5)
    cm = make_cm(make_request, hits)
    run(PluginDataAnalysis(models, TEMPLATES, tables), cm)
    added = cm.state.merge_result[-1]
    assert added.match_type == MatchType.DATA_ANALYSIS
    assert added.knowledge_id == ingested.document.id
    assert "| Sales | 56500 |" in added.content
