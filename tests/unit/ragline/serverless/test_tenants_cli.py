"""``ragline tenant create NAME --aws STACK``: the tenants table found from the stack's output or by name, the
key stored hashed as the embedded store hashes it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragline.cli import app
from ragline.store.dynamodb import DynamoTenantStore
from ragline.store.models import hash_key
from tests.unit.ragline.moto_env import moto_account


@pytest.fixture
def account():
    with moto_account() as moto:
        yield moto.fresh()


def _stack_with_output(session, table_name):
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"TenantsTableName": {"Value": table_name}},
    }
    session.client("cloudformation").create_stack(StackName="ragline-prod", TemplateBody=json.dumps(template))


def _created(output):
    lines = output.strip().splitlines()
    return lines[0], lines[-1]


def test_by_stack_name(account):
    _stack_with_output(account.session, account.tables["TenantsTable"])
    result = CliRunner().invoke(app, ["tenant", "create", "acme", "--aws", "ragline-prod"])
    assert result.exit_code == 0, result.output
    header, key = _created(result.output)
    assert header.startswith("tenant acme (")
    store = DynamoTenantStore(account.table("TenantsTable"))
    tenant = store.for_key(key)
    assert tenant is not None
    assert tenant.name == "acme"
    # The same hash the embedded (SQLite) store keeps: the key itself is stored nowhere.
    item = account.table("TenantsTable").get_item(Key={"pk": f"key#{hash_key(key)}"})["Item"]
    assert item["tenant_id"] == tenant.id
    assert key not in json.dumps(account.client("dynamodb").scan(TableName=account.tables["TenantsTable"]))


def test_by_table_name_and_a_clear_error_otherwise(account):
    result = CliRunner().invoke(app, ["tenant", "create", "beta", "--aws", account.tables["TenantsTable"]])
    assert result.exit_code == 0, result.output
    _, key = _created(result.output)
    assert DynamoTenantStore(account.table("TenantsTable")).for_key(key) is not None
    missing = CliRunner().invoke(app, ["tenant", "create", "gamma", "--aws", "no-such-stack"])
    assert missing.exit_code == 2
    assert "neither a stack" in missing.output
