"""Fixtures of the memory tests: a ticking clock and a store per backend (moto is the parent's ``aws``)."""

import pytest

from tests.unit.ragline.store.adapters import install_clock

CLOCKED_MODULES = ("ragline.memory.models", "ragline.memory.store")
BACKENDS = ["sqlite", "dynamodb"]


@pytest.fixture
def clock(monkeypatch):
    return install_clock(monkeypatch, CLOCKED_MODULES)


@pytest.fixture
def sqlite_store(db):
    from ragline.memory.sqlite import SqliteMemoryStore

    return SqliteMemoryStore(db)


@pytest.fixture(params=BACKENDS)
def store(request, clock):
    """The same store port on SQLite and on DynamoDB (the knowledge table of template.yaml, in moto)."""
    if request.param == "dynamodb":
        from ragline.memory.dynamodb import DynamoMemoryStore

        return DynamoMemoryStore(request.getfixturevalue("aws").table("KnowledgeTable"))
    return request.getfixturevalue("sqlite_store")
