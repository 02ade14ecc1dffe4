"""Fixtures of the store tests: a ticking clock (moto with the template's tables is the parent's ``aws``)."""

import pytest

from tests.unit.ragline.store.adapters import CLOCKED_MODULES, install_clock


@pytest.fixture
def clock(monkeypatch):
    return install_clock(monkeypatch, CLOCKED_MODULES)
