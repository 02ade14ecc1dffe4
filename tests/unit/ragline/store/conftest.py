"""Fixtures of the store tests: a ticking clock, moto with the template's tables."""

import pytest

from tests.unit.ragline.moto_env import moto_account
from tests.unit.ragline.store.adapters import CLOCKED_MODULES, Clock


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
    """An empty moto account with the template's tables and the state bucket."""
    return aws_account.fresh()
