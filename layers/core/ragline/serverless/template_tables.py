"""Reading ``template.yaml`` without AWS: a YAML loader for CloudFormation and the DynamoDB tables it declares.

Tests (moto) and ``scripts/deploy_local.py`` (LocalStack) create their tables from here, so the key schemas,
indexes and TTL attributes they run against are the ones that get deployed.

Nothing here runs in Lambda; it lives in the library so the tests and the script share one parser.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

TABLE_TYPES = ("AWS::DynamoDB::Table", "AWS::Serverless::SimpleTable")
_SIMPLE_TABLE_TYPES = {"String": "S", "Number": "N", "Binary": "B"}


class CfnLoader(yaml.SafeLoader):
    """SafeLoader that reads CloudFormation short forms as the long forms.

    SafeLoader that reads CloudFormation short forms (``!Ref X``, ``!GetAtt A.B``, ``!Sub``, ...) as the long forms
    (``{"Ref": "X"}``, ``{"Fn::GetAtt": ["A", "B"]}``, ``{"Fn::Sub": ...}``).
    """


def _construct_short_form(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:  # pragma: no cover - yaml has no other node kinds
        raise yaml.constructor.ConstructorError(None, None, f"unexpected node for !{suffix}", node.start_mark)
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


CfnLoader.add_multi_constructor("!", _construct_short_form)


def load_template(path: str | Path) -> dict[str, Any]:
    """The template as plain dicts and lists, intrinsic functions in their long form."""
    with Path(path).open(encoding="utf-8") as handle:
        document = yaml.load(handle, Loader=CfnLoader)  # CfnLoader is a SafeLoader
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a CloudFormation template")
    return document


@dataclass(frozen=True)
class TableSpec:
    """What ``CreateTable`` needs from one table resource (billing is always on demand)."""

    logical_id: str
    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    global_secondary_indexes: list[dict[str, Any]] = field(default_factory=list)
    local_secondary_indexes: list[dict[str, Any]] = field(default_factory=list)
    ttl_attribute: str | None = None

    @property
    def partition_key(self) -> str:
        """The table's hash key attribute."""
        return next(k["AttributeName"] for k in self.key_schema if k["KeyType"] == "HASH")

    @property
    def sort_key(self) -> str | None:
        """The table's range key attribute, or None."""
        return next((k["AttributeName"] for k in self.key_schema if k["KeyType"] == "RANGE"), None)

    def create_table_kwargs(self, table_name: str) -> dict[str, Any]:
        """The arguments of ``CreateTable`` for this table under ``table_name``."""
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "KeySchema": self.key_schema,
            "AttributeDefinitions": self.attribute_definitions,
            "BillingMode": "PAY_PER_REQUEST",
        }
        if self.global_secondary_indexes:
            kwargs["GlobalSecondaryIndexes"] = [
                {k: v for k, v in index.items() if k != "ProvisionedThroughput"}
                for index in self.global_secondary_indexes
            ]
        if self.local_secondary_indexes:
            kwargs["LocalSecondaryIndexes"] = self.local_secondary_indexes
        return kwargs


def _literal(value: Any, where: str) -> Any:
    """Table schemas must be literal: an intrinsic function there cannot be created locally."""
    if isinstance(value, dict):
        if len(value) == 1 and (next(iter(value)) == "Ref" or next(iter(value)).startswith("Fn::")):
            raise ValueError(f"{where}: intrinsic function in a table schema is not supported here")
        return {k: _literal(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_literal(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _spec(logical_id: str, resource: Mapping[str, Any]) -> TableSpec:
    props = _literal(dict(resource.get("Properties") or {}), logical_id)
    if resource["Type"] == "AWS::Serverless::SimpleTable":
        primary = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
        name = primary["Name"]
        return TableSpec(
            logical_id,
            key_schema=[{"AttributeName": name, "KeyType": "HASH"}],
            attribute_definitions=[{"AttributeName": name, "AttributeType": _SIMPLE_TABLE_TYPES[primary["Type"]]}],
        )
    ttl = props.get("TimeToLiveSpecification") or {}
    return TableSpec(
        logical_id,
        key_schema=list(props["KeySchema"]),
        attribute_definitions=list(props["AttributeDefinitions"]),
        global_secondary_indexes=list(props.get("GlobalSecondaryIndexes") or []),
        local_secondary_indexes=list(props.get("LocalSecondaryIndexes") or []),
        ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled", False) else None,
    )


def table_specs(template: Mapping[str, Any]) -> dict[str, TableSpec]:
    """Every DynamoDB table of the template by logical id, in template order."""
    resources: Mapping[str, Any] = template.get("Resources") or {}
    return {
        logical_id: _spec(logical_id, resource)
        for logical_id, resource in resources.items()
        if resource.get("Type") in TABLE_TYPES
    }


def default_table_name(logical_id: str, prefix: str = "ragline") -> str:
    """``EventsTable`` → ``ragline-events``: the names ``AwsSettings`` uses by default."""
    stem = logical_id.removesuffix("Table") or logical_id
    return f"{prefix}-" + re.sub(r"(?<!^)(?=[A-Z])", "-", stem).lower()


def create_tables(
    client: DynamoDBClient,
    template: Mapping[str, Any],
    names: Mapping[str, str] | None = None,
    *,
    exist_ok: bool = False,
) -> dict[str, str]:
    """Create every table of ``template`` (names by logical id, else ``default_table_name``); TTL included.

    Returns ``{logical_id: table_name}``. With ``exist_ok`` a table that already exists is left as it is.
    """
    specs = table_specs(template)
    unknown = set(names or {}) - set(specs)
    if unknown:
        raise ValueError(f"no such table in the template: {sorted(unknown)}")
    created: dict[str, str] = {}
    for logical_id, spec in specs.items():
        table_name = (names or {}).get(logical_id) or default_table_name(logical_id)
        try:
            client.create_table(**spec.create_table_kwargs(table_name))
        except client.exceptions.ResourceInUseException:
            if not exist_ok:
                raise
            created[logical_id] = table_name
            continue
        client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        if spec.ttl_attribute:
            client.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"AttributeName": spec.ttl_attribute, "Enabled": True},
            )
        created[logical_id] = table_name
    return created


def function_environment(
    template: Mapping[str, Any], function_id: str | None, values: Mapping[str, str]
) -> dict[str, str]:
    """A function's environment (Globals merged with its own), references resolved from ``values``.

    ``values`` maps logical ids (``EventsTable``), ``Logical.Attribute`` (``Fn.Arn``) and parameter names to
    what they stand for; parameters not in it take their template default. Variables whose value cannot be
    resolved are left out. ``function_id=None`` gives the Globals alone.
    """
    parameters = {name: str(p.get("Default", "")) for name, p in (template.get("Parameters") or {}).items()}
    known = {**parameters, **values}
    variables: dict[str, Any] = dict(
        (((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables") or {}
    )
    if function_id is not None:
        resource = (template.get("Resources") or {})[function_id]
        own = ((resource.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        variables.update(own)
    resolved: dict[str, str] = {}
    for name, value in variables.items():
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            resolved[name] = str(value)
        elif isinstance(value, dict) and list(value) == ["Ref"] and value["Ref"] in known:
            resolved[name] = known[value["Ref"]]
        elif isinstance(value, dict) and list(value) == ["Fn::GetAtt"] and ".".join(value["Fn::GetAtt"]) in known:
            resolved[name] = known[".".join(value["Fn::GetAtt"])]
    return resolved
