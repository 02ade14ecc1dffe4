"""Tenants of a deployed stack, from an operator's machine: ``ragline tenant create NAME --aws STACK``.

The key is hashed exactly as the embedded store hashes it (``DynamoTenantStore``), in the stack's
TenantsTable: named by the stack's ``TenantsTableName`` output, or given as a table name. The caller's own
AWS credentials and region are used (``AWS_PROFILE``, ``AWS_REGION``...; ``AWS_ENDPOINT_URL`` for LocalStack
or moto).
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.exceptions import ClientError

from ragline.store.dynamodb import DynamoTenantStore

TENANTS_OUTPUT = "TenantsTableName"


class StackNotFound(LookupError):
    """Neither a stack with a TenantsTableName output nor a DynamoDB table goes by that name."""


def tenants_table_name(name: str, session: boto3.Session | None = None) -> str:
    """The tenants table of the stack called ``name``, or ``name`` itself when it is a table."""
    session = session or boto3.Session()
    try:
        stacks = session.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except ClientError:
        stacks = []
    for stack in stacks:
        for output in stack.get("Outputs", []):
            if output.get("OutputKey") == TENANTS_OUTPUT:
                return str(output["OutputValue"])
    try:
        session.client("dynamodb").describe_table(TableName=name)
    except ClientError as error:
        raise StackNotFound(
            f"{name!r} is neither a stack with a {TENANTS_OUTPUT} output nor a DynamoDB table"
        ) from error
    return name


def aws_tenant_store(name: str, session: boto3.Session | None = None) -> DynamoTenantStore:
    """The tenant store of the stack (or table) ``name``."""
    session = session or boto3.Session()
    table: Any = session.resource("dynamodb").Table(tenants_table_name(name, session))
    return DynamoTenantStore(table)
