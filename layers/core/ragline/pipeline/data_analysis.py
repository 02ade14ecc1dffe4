"""DATA_ANALYSIS: answer a question about a table by running one SQL query over the table's rows.

Search finds a table through its description chunks, but a description cannot say what the average
salary per department is. When the request enables analysis and a table is among the merged results,
this stage loads the first such table into a DuckDB sandbox, shows the model the table's schema and a
few rows, lets it write one query, and adds the query and its result as one more passage (match type
``data_analysis``, score 1.0), which the answer then reads like any other.

Off by default (``data_analysis_enabled``). Analysis is an enhancement: no generative model, a table
that cannot be loaded, a reply without a query, a refused query, a failed or slow query all leave the
results as they were, and the turn goes on. This stage never returns an error of its own.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence

from ragline.config import PromptTemplates, render_placeholders
from ragline.models.base import ChatMessage, ChatModel, is_generative
from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.pipeline.plugin import NextFn, PluginError
from ragline.tables.chunks import TABLE_CHUNK_TYPES, TABLE_KEY, short
from ragline.tables.parse import TableData, load_stored_table, sql_identifier
from ragline.tables.sql import (
    DEFAULT_MAX_ROWS,
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_TIMEOUT_S,
    QueryError,
    QueryResult,
    UnsafeSQL,
    run_table_query,
    sandbox_table_name,
    table_schema,
)
from ragline.tables.store import TableNotFound, TableStore
from ragline.types import ChatManage, ChatOptions, ChunkType, EventType, MatchType, SearchResult

logger = logging.getLogger(__name__)

TEMPLATE_FILE = "data_analysis"
DEFAULT_TEMPLATE_ID = "default"
# Writing SQL is not creative: a low temperature, no reasoning (it would eat the budget), a budget
# that fits a query with a few CTEs.
ANALYSIS_TEMPERATURE = 0.1
ANALYSIS_MAX_TOKENS = 512
# Rows shown to the model with the schema: enough to see value formats (dates, codes, casing).
PROMPT_EXAMPLE_ROWS = 5
# Characters of a cell shown in those rows: a free-text column must not fill the prompt.
PROMPT_CELL_CHARS = 80
# The synthetic result outranks every retrieved passage: it is computed from the data, not matched.
ANALYSIS_SCORE = 1.0
RESULT_ID_PREFIX = "analysis-"
# What the model replies when the table cannot answer the question.
NO_QUERY_REPLY = "NONE"

_SQL_FENCE = re.compile(r"```[ \t]*(?:sql|duckdb|postgresql)[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
_ANY_FENCE = re.compile(r"```[^\n]*\r?\n(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_BARE_QUERY = re.compile(r"(?:select|with)\b", re.IGNORECASE)


def extract_sql(reply: str) -> str | None:
    """The query of a model's reply: a ```sql block, else any fenced block, else a bare SELECT/WITH reply.

    ``None`` when there is none, including the agreed "NONE" for a question the table cannot answer.
    """
    text = _THINK.sub("", reply).strip()
    for pattern in (_SQL_FENCE, _ANY_FENCE):
        match = pattern.search(text)
        if match is not None:
            query = match.group(1).strip()
            return query or None
    if _BARE_QUERY.match(text):
        return text
    return None


def first_table_result(results: Sequence[SearchResult]) -> SearchResult | None:
    """The best-ranked table passage (summary or column): its document is the table analysed."""
    for result in results:
        if result.chunk_type in TABLE_CHUNK_TYPES and result.knowledge_id:
            return result
    return None


def result_id(document_id: str) -> str:
    """The id of the analysis result for a table document (one per document, so a retried step adds it once)."""
    return f"{RESULT_ID_PREFIX}{document_id}"


def _example_rows(table: TableData) -> str:
    header = "| " + " | ".join(table.columns) + " |"
    rule = "| " + " | ".join("---" for _ in table.columns) + " |"
    rows = [
        "| " + " | ".join(short(cell, PROMPT_CELL_CHARS).replace("|", "\\|") for cell in row) + " |"
        for row in table.rows[:PROMPT_EXAMPLE_ROWS]
    ]
    return "\n".join([header, rule, *rows]) if rows else "(the table has no rows)"


def analysis_content(question: str, table: TableData, filename: str, sql: str, result: QueryResult) -> str:
    """The passage the answer reads: what was asked, of which table, the query, and what it returned."""
    source = f"{filename}, " if filename else ""
    return "\n".join(
        [
            f'Data analysis of the table "{table.title}" ({source}{table.row_count} rows)',
            f"Question: {question}",
            "SQL query:",
            "```sql",
            sql,
            "```",
            f"Result ({len(result.rows)} rows):",
            result.to_markdown(),
        ]
    )


class PluginDataAnalysis:
    """One DuckDB query over the first table among the merged results.

    ``max_rows``, ``timeout_s`` and ``memory_limit`` bound the query (see :mod:`ragline.tables.sql`).
    """

    def __init__(
        self,
        models: ModelRegistry,
        templates: PromptTemplates,
        tables: TableStore,
        *,
        max_rows: int = DEFAULT_MAX_ROWS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
        template_id: str = DEFAULT_TEMPLATE_ID,
    ) -> None:
        """An analysis stage asking ``models`` for SQL with ``templates`` and reading tables from ``tables``."""
        self._models = models
        self._templates = templates
        self._tables = tables
        self._max_rows = max_rows
        self._timeout_s = timeout_s
        self._memory_limit = memory_limit
        self._template_id = template_id

    def activation_events(self) -> list[EventType]:
        """Runs at DATA_ANALYSIS."""
        return [EventType.DATA_ANALYSIS]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Query the first table among the merged results and add the result as a passage, when analysis is on."""
        if not cm.request.data_analysis_enabled or cm.context.cancelled():
            return await next()
        target = first_table_result(cm.state.merge_result)
        if target is None:
            return await next()
        # A retried step (serverless) finds its result already there: add it once.
        if any(result.id == result_id(target.knowledge_id) for result in cm.state.merge_result):
            return await next()
        log = {"stage": event_type.value, "session_id": cm.request.session_id, "document_id": target.knowledge_id}
        try:
            analysis = await self._analyse(cm, target, log)
        except Exception:  # analysis is optional: whatever broke, the turn goes on without it
            logger.warning("data analysis failed", exc_info=True, extra=log)
            analysis = None
        if analysis is not None:
            cm.state.merge_result.append(analysis)
        return await next()

    def _model(self, cm: ChatManage, log: dict[str, str]) -> ChatModel | None:
        try:
            model = self._models.chat_model(cm.request.chat_model_id)
        except UnknownModel:
            logger.info("no chat model for data analysis", extra=log)
            return None
        if not is_generative(model):
            logger.info("the extractive model writes no SQL; data analysis skipped", extra=log)
            return None
        return model

    def _messages(self, cm: ChatManage, table: TableData) -> list[ChatMessage]:
        values = {
            # A plain identifier by construction (sql_identifier, then no reserved word): written unquoted.
            "table": table.name,
            "schema": table_schema(table),
            "row_count": str(table.row_count),
            "examples": _example_rows(table),
            "query": cm.search_query,
            "language": cm.request.language,
        }
        system = self._templates.get(TEMPLATE_FILE, self._template_id, "system")
        user = self._templates.get(TEMPLATE_FILE, self._template_id, "user")
        return [
            ChatMessage("system", render_placeholders(system, values)),
            ChatMessage("user", render_placeholders(user, values)),
        ]

    async def _analyse(self, cm: ChatManage, target: SearchResult, log: dict[str, str]) -> SearchResult | None:
        model = self._model(cm, log)
        if model is None:
            return None
        try:
            csv_bytes = await asyncio.to_thread(self._tables.load, target.knowledge_id)
        except TableNotFound:
            logger.warning("no stored rows for this table document", extra=log)
            return None
        # The stored name is re-sanitised: the sandbox only ever sees an identifier of our own making.
        stored_name = str(target.chunk_metadata.get(TABLE_KEY) or target.knowledge_title or "")
        name = sandbox_table_name(sql_identifier(stored_name))
        title = target.knowledge_title or name
        table = await asyncio.to_thread(load_stored_table, csv_bytes, name=name, title=title)

        options = ChatOptions(temperature=ANALYSIS_TEMPERATURE, max_tokens=ANALYSIS_MAX_TOKENS, thinking=False)
        reply = await model.chat(self._messages(cm, table), options)
        sql = extract_sql(reply.content)
        if sql is None:
            reason = "the table cannot answer" if reply.content.strip().upper() == NO_QUERY_REPLY else "no query"
            logger.info("data analysis: model wrote no query (%s)", reason, extra=log)
            return None
        try:
            result = await asyncio.to_thread(
                run_table_query,
                table,
                sql,
                max_rows=self._max_rows,
                timeout_s=self._timeout_s,
                memory_limit=self._memory_limit,
            )
        except UnsafeSQL as exc:
            logger.warning("data analysis: query refused: %s", exc.reason, extra=log)
            return None
        except QueryError as exc:
            logger.warning("data analysis: query failed: %s", exc, extra=log)
            return None
        logger.info(
            "data analysis done",
            extra={**log, "rows": len(result.rows), "truncated": result.truncated, "elapsed_ms": result.elapsed_ms},
        )
        return SearchResult(
            id=result_id(target.knowledge_id),
            content=analysis_content(cm.search_query, table, target.knowledge_filename, sql, result),
            knowledge_id=target.knowledge_id,
            knowledge_base_id=target.knowledge_base_id,
            knowledge_title=title,
            knowledge_filename=target.knowledge_filename,
            knowledge_description=target.knowledge_description,
            knowledge_source=target.knowledge_source,
            header=title,
            chunk_type=ChunkType.TEXT,
            score=ANALYSIS_SCORE,
            match_type=MatchType.DATA_ANALYSIS,
            metadata={
                "sql": sql,
                "result_rows": str(len(result.rows)),
                "truncated": "true" if result.truncated else "false",
                "elapsed_ms": str(result.elapsed_ms),
            },
        )
