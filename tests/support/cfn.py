"""template.yaml as CloudFormation would deploy it, without AWS: the SAM transform and an intrinsic resolver.

``sam_transform`` runs the SAM translator offline (its bundled managed-policy map; the loader that would ask
IAM fails if it is ever called), which expands the policy templates (``DynamoDBCrudPolicy``...) into the
roles' statements. ``Resolver`` then evaluates ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ``Fn::If``,
``Fn::Join``, ``Fn::Select``, ``Fn::Split`` and the conditions against the names a test gave the resources,
so a function's environment and its role's statements read exactly as they would in the deployed stack.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from samtranslator.translator.transform import transform

from ragline.serverless.template_tables import load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = ROOT / "template.yaml"
REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
PARTITION = "aws"

# What the two managed policies SAM attaches to every function role allow (the AWS-managed documents,
# abridged to the actions a function's own code could call).
MANAGED_POLICIES: dict[str, list[dict[str, Any]]] = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": [
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": "*",
        }
    ],
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": [
        {
            "Effect": "Allow",
            "Action": [
                "xray:PutTraceSegments",
                "xray:PutTelemetryRecords",
                "xray:GetSamplingRules",
                "xray:GetSamplingTargets",
                "xray:GetSamplingStatisticSummaries",
            ],
            "Resource": "*",
        }
    ],
}


class OfflineManagedPolicyLoader:
    """Stands in for the loader that lists IAM managed policies: the bundled map must be enough."""

    def load(self) -> dict[str, str]:
        raise AssertionError("the SAM translator asked IAM for managed policies (needs AWS credentials)")


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """The template as ``sam package`` leaves it: local code, layer and definition paths become S3 URIs."""
    result = copy.deepcopy(template)
    for resource in result["Resources"].values():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://ragline-artifacts/{props[key].strip('/').replace('/', '-')}"
    return result


def sam_transform(
    template: dict[str, Any] | None = None, parameters: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The CloudFormation template SAM generates (roles with their policy templates expanded)."""
    template = template if template is not None else load_template(TEMPLATE_PATH)
    with mock.patch.dict(os.environ, {"AWS_DEFAULT_REGION": REGION}):
        return transform(packaged(template), dict(parameters or {}), OfflineManagedPolicyLoader())


class Unresolved(LookupError):
    """A reference the resolver was given no value for."""


@dataclass
class Resolver:
    """Evaluates intrinsic functions of a transformed template against given physical names.

    ``refs`` maps a logical id to what ``Ref`` returns (a table's name, a state machine's ARN);
    ``attributes`` maps ``"Logical.Attribute"`` to what ``Fn::GetAtt`` returns. Parameters not given take
    their template defaults.
    """

    template: Mapping[str, Any]
    parameters: Mapping[str, str] = field(default_factory=dict)
    refs: Mapping[str, str] = field(default_factory=dict)
    attributes: Mapping[str, str] = field(default_factory=dict)
    region: str = REGION
    account_id: str = ACCOUNT_ID
    stack_name: str = "ragline"

    def __post_init__(self) -> None:
        declared = self.template.get("Parameters") or {}
        unknown = set(self.parameters) - set(declared)
        if unknown:
            raise ValueError(f"no such parameter in the template: {sorted(unknown)}")
        self._parameters = {name: str(p.get("Default", "")) for name, p in declared.items()}
        self._parameters.update(self.parameters)
        self._pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account_id,
            "AWS::Partition": PARTITION,
            "AWS::StackName": self.stack_name,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{self.account_id}:stack/{self.stack_name}/1",
            "AWS::URLSuffix": "amazonaws.com",
        }
        self._conditions: dict[str, bool] = {}

    # ------------------------------------------------------------------------------------------ values
    def parameter(self, name: str) -> str:
        return self._parameters[name]

    def ref(self, name: str) -> Any:
        if name in self._pseudo:
            return self._pseudo[name]
        if name in self._parameters:
            declared = (self.template.get("Parameters") or {})[name]
            value = self._parameters[name]
            if declared.get("Type") == "CommaDelimitedList":
                return [part.strip() for part in value.split(",")] if value else []
            return value
        if name in self.refs:
            return self.refs[name]
        raise Unresolved(f"Ref {name}")

    def get_att(self, logical_id: str, attribute: str) -> str:
        key = f"{logical_id}.{attribute}"
        if key not in self.attributes:
            raise Unresolved(f"Fn::GetAtt {key}")
        return self.attributes[key]

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            self._conditions[name] = bool(self._condition_value((self.template.get("Conditions") or {})[name]))
        return self._conditions[name]

    def _condition_value(self, node: Any) -> Any:
        if isinstance(node, dict) and len(node) == 1:
            ((key, value),) = node.items()
            if key == "Fn::Equals":
                left, right = (self.resolve(v) for v in value)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self._condition_value(value[0])
            if key == "Fn::And":
                return all(self._condition_value(v) for v in value)
            if key == "Fn::Or":
                return any(self._condition_value(v) for v in value)
            if key == "Condition":
                return self.condition(value)
        return self.resolve(node)

    # --------------------------------------------------------------------------------------- resolution
    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic evaluated; ``AWS::NoValue`` entries are dropped from lists/maps."""
        value = self._resolve(node)
        return value

    def _resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            items = [self._resolve(item) for item in node]
            return [item for item in items if item is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, value),) = node.items()
            if key == "Ref":
                return _NO_VALUE if value == "AWS::NoValue" else self.ref(value)
            if key == "Fn::GetAtt":
                logical_id, attribute = value.split(".", 1) if isinstance(value, str) else value
                return self.get_att(logical_id, attribute)
            if key == "Fn::Sub":
                return self._sub(value)
            if key == "Fn::If":
                name, when_true, when_false = value
                return self._resolve(when_true if self.condition(name) else when_false)
            if key == "Fn::Join":
                separator, items = value
                return str(separator).join(str(item) for item in self._resolve(items))
            if key == "Fn::Select":
                index, items = value
                return self._resolve(items)[int(self._resolve(index))]
            if key == "Fn::Split":
                separator, text = value
                return str(self._resolve(text)).split(separator)
            if key == "Condition":
                return self.condition(value)
            if key.startswith("Fn::"):
                raise NotImplementedError(f"intrinsic {key} is not supported by the resolver")
        resolved = {k: self._resolve(v) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _sub(self, value: Any) -> str:
        text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])
        local = {name: self._resolve(v) for name, v in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in local:
                return str(local[name])
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)

    # --------------------------------------------------------------------------------------- resources
    def resources(self, resource_type: str | None = None) -> dict[str, dict[str, Any]]:
        """Resources (optionally of one type) whose Condition holds, properties unresolved."""
        found: dict[str, dict[str, Any]] = {}
        for logical_id, resource in (self.template.get("Resources") or {}).items():
            if resource_type is not None and resource["Type"] != resource_type:
                continue
            if "Condition" in resource and not self.condition(resource["Condition"]):
                continue
            found[logical_id] = resource
        return found

    def environment(self, function_id: str) -> dict[str, str]:
        """A function's environment variables as deployed (the transform merged Globals into it)."""
        props = self.template["Resources"][function_id]["Properties"]
        variables = self.resolve((props.get("Environment") or {}).get("Variables") or {})
        return {name: str(value) for name, value in variables.items()}

    def role_statements(self, role_id: str) -> list[dict[str, Any]]:
        """Every statement a role allows or denies: its inline policies and the managed ones SAM attaches."""
        props = self.template["Resources"][role_id]["Properties"]
        statements: list[dict[str, Any]] = []
        for policy in self.resolve(props.get("Policies") or []):
            document = policy["PolicyDocument"]
            listed = document["Statement"]
            statements.extend(listed if isinstance(listed, list) else [listed])
        for arn in self.resolve(props.get("ManagedPolicyArns") or []):
            if arn not in MANAGED_POLICIES:
                raise ValueError(f"{role_id}: managed policy {arn} is not known to the grant checker")
            statements.extend(MANAGED_POLICIES[arn])
        return statements

    def function_role(self, function_id: str) -> str:
        role = self.template["Resources"][function_id]["Properties"]["Role"]
        if isinstance(role, dict) and "Fn::GetAtt" in role:
            return str(role["Fn::GetAtt"][0])
        raise ValueError(f"{function_id}: its role is not one of the template's")


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


_NO_VALUE = _NoValue()
