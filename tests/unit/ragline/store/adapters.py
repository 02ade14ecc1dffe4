"""The store adapters under test: SQLite on a temporary file, DynamoDB in moto (tables from template.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.unit.ragline.moto_env import MotoAws

CLOCKED_MODULES = (
    "ragline.store.models",
    "ragline.store.tenants",
    "ragline.store.knowledge",
    "ragline.store.sessions",
    "ragline.store.dynamodb.tenants",
    "ragline.store.dynamodb.knowledge",
    "ragline.store.dynamodb.sessions",
    "ragline.store.dynamodb.tags",
    "ragline.store.tags",
)


class Clock:
    """``utc_now`` one millisecond later on every call: orderings by time are deterministic, not racy."""

    def __init__(self) -> None:
        self.now = datetime(2024, 1, 1, tzinfo=UTC)

    def __call__(self) -> str:
        self.now += timedelta(milliseconds=1)
        return self.now.isoformat(timespec="milliseconds")


def install_clock(monkeypatch: Any, modules: tuple[str, ...]) -> Clock:
    """A ticking clock in place of ``utc_now`` in each of ``modules``."""
    ticking = Clock()
    for module in modules:
        monkeypatch.setattr(f"{module}.utc_now", ticking)
    return ticking


@dataclass
class Stores:
    """The store ports of one backend."""

    backend: str
    tenants: Any
    knowledge: Any
    sessions: Any
    tags: Any = None


def dynamo_stores(aws: MotoAws) -> Stores:
    from ragline.store.dynamodb import DynamoKnowledgeStore, DynamoSessionStore, DynamoTagStore, DynamoTenantStore

    return Stores(
        backend="dynamodb",
        tenants=DynamoTenantStore(aws.table("TenantsTable")),
        knowledge=DynamoKnowledgeStore(aws.table("KnowledgeTable")),
        # As deployed: the messages table's sparse index of open turns (template.yaml).
        sessions=DynamoSessionStore(aws.table("SessionsTable"), aws.table("MessagesTable"), open_index="OpenTurns"),
        tags=DynamoTagStore(aws.table("KnowledgeTable")),
    )


def sqlite_stores(path: Path) -> tuple[Stores, Any]:
    """The SQLite adapters on one database file, and the database (to close)."""
    from ragline.store.db import Database
    from ragline.store.knowledge import SqliteKnowledgeStore
    from ragline.store.sessions import SqliteSessionStore
    from ragline.store.tags import SqliteTagStore
    from ragline.store.tenants import SqliteTenantStore

    db = Database(path)
    stores = Stores(
        "sqlite", SqliteTenantStore(db), SqliteKnowledgeStore(db), SqliteSessionStore(db), SqliteTagStore(db)
    )
    return stores, db
