"""Fixtures of the memory tests: a ticking clock, moto with the template's tables, a store per backend."""

import pytest

from tests.unit.ragline.moto_env import moto_account
from tests.unit.ragline.store.adapters import Clock

CLOCKED_MODULES = ("ragline.memory.models", "ragline.memory.store")
BACKENDS = ["sqlite", "dynamodb"]


@pytest.fixture
def clock(monkeypatch):
    ticking = Clock()
    for module in CLOCKED_MODULES:
        monkeypatch.setattr(f"{module}.utc_now", ticking)
    return ticking


@pytest.fixture(scope="module")
def aws_account():
    with moto_account() as account:
        yield account


@pytest.fixture
def aws(aws_account):
    """An empty moto account with the template's tables."""
    return aws_account.fresh()


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
