"""Fakes for the graph tests: a Neo4j driver that records Cypher (and the scripted chat model, re-exported)."""

from __future__ import annotations

from tests.support.chat_models import ScriptedChatModel, registry_with

__all__ = ["ScriptedChatModel", "registry_with"]


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
