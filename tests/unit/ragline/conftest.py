"""Shared fixtures for the ragline unit tests."""

from __future__ import annotations

import pytest

from ragline.store.db import Database
from ragline.types import PipelineRequest
from tests.unit.ragline.moto_env import moto_account


@pytest.fixture
def db(tmp_path):
    """A real SQLite database file in the test's temporary directory."""
    database = Database(tmp_path / "ragline.db")
    yield database
    database.close()


@pytest.fixture
def make_request():
    """A factory of minimal valid requests; keyword arguments override fields."""

    def factory(**overrides) -> PipelineRequest:
        values = {"query": "What is ragline?", "request_id": "req-1", "session_id": "sess-1", "tenant_id": "t-1"}
        values.update(overrides)
        return PipelineRequest(**values)

    return factory


@pytest.fixture(scope="module")
def aws_account():
    """One moto account per test module (clients are slow to build)."""
    with moto_account() as account:
        yield account


@pytest.fixture
def aws(aws_account):
    """An empty moto account with the template's tables and the state bucket."""
    return aws_account.fresh()
