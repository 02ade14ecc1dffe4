"""The AWS adapters under test run in moto, against the tables of template.yaml."""

import pytest

from tests.unit.ragline.moto_env import moto_account


@pytest.fixture(scope="module")
def aws_account():
    with moto_account() as account:
        yield account


@pytest.fixture
def aws(aws_account):
    """An empty moto account with the template's tables and the state bucket."""
    return aws_account.fresh()
