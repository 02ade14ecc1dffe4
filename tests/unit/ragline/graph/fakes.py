"""Fakes for the graph tests: a scripted chat model and a Neo4j driver that records Cypher."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ragline.models.base import ChatChunk, ChatResponse
from ragline.models.registry import ModelRegistry


class ScriptedChatModel:
    """Replies with ``reply(prompt)`` (or raises what it returns); records prompts and peak concurrency."""

    def __init__(self, model_id: str = "scripted", reply: Callable[[str], object] | str = "[]", delay_s: float = 0.0):
        self.model_id = model_id
        self._reply = reply
        self._delay_s = delay_s
        self.prompts: list[str] = []
        self.options: list[object] = []
        self.in_flight = 0
        self.peak = 0

    async def chat(self, messages, options):
        prompt = messages[-1].content
        self.prompts.append(prompt)
        self.options.append(options)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self._delay_s:
                await asyncio.sleep(self._delay_s)
            reply = self._reply(prompt) if callable(self._reply) else self._reply
        finally:
            self.in_flight -= 1
        if isinstance(reply, BaseException):
            raise reply
        return ChatResponse(str(reply), finish_reason="stop")

    async def chat_stream(self, messages, options):
        response = await self.chat(messages, options)
        yield ChatChunk("answer", response.content)
        yield ChatChunk("end", finish_reason=response.finish_reason)


def registry_with(*models) -> ModelRegistry:
    """A registry whose default chat model is the last one given."""
    registry = ModelRegistry()
    for model in models:
        registry.add_chat_model(model.model_id, lambda model=model: model, default=True)
    return registry


# Neo4j ---------------------------------------------------------------------------------------------------


class FakeResult:
    def __init__(self, rows: list[dict]) -> None:
        self._rows = rows
        self.consumed = False

    def data(self) -> list[dict]:
        return list(self._rows)

    def consume(self) -> None:
        self.consumed = True


class FakeTransaction:
    def __init__(self, driver: FakeDriver, kind: str) -> None:
        self._driver = driver
        self._kind = kind

    def run(self, query, parameters=None):
        return self._driver.record(self._kind, query, parameters)


class FakeSession:
    def __init__(self, driver: FakeDriver, database) -> None:
        self._driver = driver
        self.database = database

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc) -> None:
        self._driver.sessions_closed += 1

    def run(self, query, parameters=None):
        return self._driver.record("auto", query, parameters)

    def execute_write(self, fn, *args):
        self._driver.transactions.append("write")
        return fn(FakeTransaction(self._driver, "write"), *args)

    def execute_read(self, fn, *args):
        self._driver.transactions.append("read")
        return fn(FakeTransaction(self._driver, "read"), *args)


class FakeDriver:
    """Records every statement as (kind, query, parameters): kind is "auto", "write" or "read".

    ``rows`` maps a query to the rows it returns (default: none).
    """

    def __init__(self, rows: dict[str, list[dict]] | None = None) -> None:
        self.rows = rows or {}
        self.calls: list[tuple[str, str, dict | None]] = []
        self.databases: list[object] = []
        self.transactions: list[str] = []
        self.sessions_closed = 0
        self.closed = False

    def session(self, database=None, **config) -> FakeSession:
        self.databases.append(database)
        return FakeSession(self, database)

    def record(self, kind: str, query: str, parameters) -> FakeResult:
        self.calls.append((kind, query, parameters))
        return FakeResult(self.rows.get(query, []))

    def close(self) -> None:
        self.closed = True

    def queries(self, kind: str | None = None) -> list[str]:
        return [query for k, query, _ in self.calls if kind is None or k == kind]
