import pytest


@pytest.fixture(autouse=True)
def _fresh_scripts(fresh_scripts):
    """No scripted reply or recorded request survives from one integration test to the next."""
    return
