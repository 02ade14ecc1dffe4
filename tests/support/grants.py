"""IAM for the tests: what each AWS call needs, and whether a function's role allows it.

``requests_for`` turns one API call (service, operation, parameters) into the IAM requests AWS evaluates:
action, resource ARN (a DynamoDB index is ``table/NAME/index/INDEX``; a batch or transaction names each
table; S3 actions are not the operation names) and the request's condition keys. ``Policy`` evaluates
identity-policy statements as IAM does: an explicit Deny wins, then any Allow whose Action, Resource and
Condition all match; anything else is an implicit deny. Unknown operations and condition operators raise,
so a call the checker cannot judge fails loudly instead of passing.

``install`` runs inside a function's process (the sandbox's ``sitecustomize`` loads this file by path:
stdlib and botocore only): every botocore client, and the OpenSearch client's connection, checks each call
before it is sent. A denied call is recorded (function, action, resource) and answered as AWS answers it,
``AccessDeniedException``, so the code meets the failure it would meet when deployed. An allowed call is
recorded once answered, with what it wrote or read (``usage``: DynamoDB item bytes and capacity units, S3
object bytes), which is what the cost benchmark bills.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

PARTITION = "aws"


@dataclass(frozen=True)
class IamRequest:
    action: str
    resource: str
    context: Mapping[str, Any] = field(default_factory=dict)


class UnknownOperation(LookupError):
    """An AWS operation the checker has no IAM mapping for (add one to ``requests_for``)."""


# ------------------------------------------------------------------------------------------------ actions
def _table_arn(region: str, account: str, table: str) -> str:
    if table.startswith("arn:"):
        return table
    return f"arn:{PARTITION}:dynamodb:{region}:{account}:table/{table}"


_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
_DYNAMODB_NO_TABLE = {"ListTables", "DescribeLimits", "DescribeEndpoints"}


def _plain(value: Any) -> Any:
    """A key value as the request carries it: Python (boto3's resource layer) or typed ({"S": "..."})."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("S", "N", "B"):
        return next(iter(value.values()))
    return value


def _key_condition_partition(params: Mapping[str, Any], partition: str) -> list[Any]:
    """The partition key value a Query's key condition names (a boto3 condition object or an expression)."""
    condition = params.get("KeyConditionExpression")
    if condition is None:
        return []
    if not isinstance(condition, str):
        found: list[Any] = []

        def walk(node: Any) -> None:
            expression = node.get_expression()
            values = expression["values"]
            if expression["operator"] == "=" and getattr(values[0], "name", None) == partition:
                found.append(values[1])
            for value in values:
                if hasattr(value, "get_expression"):
                    walk(value)

        walk(condition)
        return found
    reverse = dict(params.get("ExpressionAttributeNames") or {})
    values = params.get("ExpressionAttributeValues") or {}
    found = []
    for left, right in re.findall(r"([#\w.]+)\s*=\s*(:\w+)", condition):
        if reverse.get(left, left) == partition and right in values:
            found.append(_plain(values[right]))
    return found


def _leading_keys(operation: str, body: Mapping[str, Any], partition: str | None) -> dict[str, Any]:
    """``dynamodb:LeadingKeys``: the partition key values a request touches (when the checker knows them)."""
    if partition is None:
        return {}
    if operation == "Query":
        values = _key_condition_partition(body, partition)
    elif "Item" in body:
        values = [_plain(body["Item"].get(partition))]
    elif "Key" in body:
        values = [_plain(body["Key"].get(partition))]
    else:
        return {}
    return {"dynamodb:LeadingKeys": [v for v in values if v is not None]}


def _dynamodb(
    operation: str, params: Mapping[str, Any], region: str, account: str, partitions: Mapping[str, str]
) -> list[IamRequest]:
    if operation in _DYNAMODB_NO_TABLE:
        return [IamRequest(f"dynamodb:{operation}", "*")]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        found = []
        for table, body in params.get("RequestItems", {}).items():
            keys: list[Any] = []
            partition = partitions.get(table)
            entries = body.get("Keys", []) if operation == "BatchGetItem" else body
            for entry in entries:
                if operation == "BatchGetItem":
                    keys.append(_plain(entry.get(partition)) if partition else None)
                else:
                    request = entry.get("PutRequest", {}).get("Item") or entry.get("DeleteRequest", {}).get("Key", {})
                    keys.append(_plain(request.get(partition)) if partition else None)
            context = {"dynamodb:LeadingKeys": [k for k in keys if k is not None]} if partition else {}
            found.append(IamRequest(f"dynamodb:{operation}", _table_arn(region, account, table), context))
        return found
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for item in params.get("TransactItems", []):
            for kind, body in item.items():
                action = "GetItem" if kind == "Get" else _TRANSACT[kind]
                table = str(body["TableName"])
                context = _leading_keys(action, body, partitions.get(table))
                found.append(IamRequest(f"dynamodb:{action}", _table_arn(region, account, table), context))
        return found
    if "TableName" not in params:
        raise UnknownOperation(f"dynamodb:{operation} without TableName")
    table = str(params["TableName"])
    arn = _table_arn(region, account, table)
    if params.get("IndexName"):
        arn = f"{arn}/index/{params['IndexName']}"
    return [IamRequest(f"dynamodb:{operation}", arn, _leading_keys(operation, params, partitions.get(table)))]


_S3_OBJECT = {
    "GetObject": "s3:GetObject",
    "HeadObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject",
    "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "DeleteObject": "s3:DeleteObject",
    "GetObjectTagging": "s3:GetObjectTagging",
    "PutObjectTagging": "s3:PutObjectTagging",
}
_S3_BUCKET = {
    "ListObjects": "s3:ListBucket",
    "ListObjectsV2": "s3:ListBucket",
    "HeadBucket": "s3:ListBucket",
    "ListMultipartUploads": "s3:ListBucketMultipartUploads",
}


def _s3(operation: str, params: Mapping[str, Any]) -> list[IamRequest]:
    bucket = str(params.get("Bucket", ""))
    if operation in _S3_OBJECT:
        return [IamRequest(_S3_OBJECT[operation], f"arn:{PARTITION}:s3:::{bucket}/{params['Key']}")]
    if operation == "DeleteObjects":
        return [
            IamRequest("s3:DeleteObject", f"arn:{PARTITION}:s3:::{bucket}/{obj['Key']}")
            for obj in params.get("Delete", {}).get("Objects", [])
        ]
    if operation == "CopyObject":
        source = params["CopySource"]
        if isinstance(source, str):
            source_bucket, _, source_key = unquote(source.lstrip("/")).partition("/")
        else:
            source_bucket, source_key = source["Bucket"], source["Key"]
        return [
            IamRequest("s3:GetObject", f"arn:{PARTITION}:s3:::{source_bucket}/{source_key}"),
            IamRequest("s3:PutObject", f"arn:{PARTITION}:s3:::{bucket}/{params['Key']}"),
        ]
    if operation in _S3_BUCKET:
        context = {"s3:prefix": params["Prefix"]} if "Prefix" in params else {}
        return [IamRequest(_S3_BUCKET[operation], f"arn:{PARTITION}:s3:::{bucket}", context)]
    raise UnknownOperation(f"s3:{operation}")


def _states(operation: str, params: Mapping[str, Any]) -> list[IamRequest]:
    for name in ("executionArn", "stateMachineArn", "activityArn"):
        if name in params:
            return [IamRequest(f"states:{operation}", str(params[name]))]
    if operation in ("ListStateMachines", "ListActivities"):
        return [IamRequest(f"states:{operation}", "*")]
    raise UnknownOperation(f"states:{operation}")


def _ssm(operation: str, params: Mapping[str, Any], region: str, account: str) -> list[IamRequest]:
    names = params.get("Names") or ([params["Name"]] if "Name" in params else [])
    if not names:
        raise UnknownOperation(f"ssm:{operation}")
    return [
        IamRequest(f"ssm:{operation}", f"arn:{PARTITION}:ssm:{region}:{account}:parameter/{str(name).lstrip('/')}")
        for name in names
    ]


def _secretsmanager(operation: str, params: Mapping[str, Any], region: str, account: str) -> list[IamRequest]:
    secret = str(params.get("SecretId", ""))
    if not secret:
        raise UnknownOperation(f"secretsmanager:{operation}")
    if not secret.startswith("arn:"):
        # IAM matches the full ARN, which ends in a random suffix; a name can only match a "name-*" pattern.
        secret = f"arn:{PARTITION}:secretsmanager:{region}:{account}:secret:{secret}-??????"
    return [IamRequest(f"secretsmanager:{operation}", secret)]


def _lambda(operation: str, params: Mapping[str, Any], region: str, account: str) -> list[IamRequest]:
    name = str(params.get("FunctionName", ""))
    if not name:
        raise UnknownOperation(f"lambda:{operation}")
    arn = name if name.startswith("arn:") else f"arn:{PARTITION}:lambda:{region}:{account}:function:{name}"
    action = "lambda:InvokeFunction" if operation in ("Invoke", "InvokeAsync") else f"lambda:{operation}"
    return [IamRequest(action, arn)]


def requests_for(
    service: str,
    operation: str,
    params: Mapping[str, Any],
    region: str,
    account: str,
    partitions: Mapping[str, str] | None = None,
) -> list[IamRequest]:
    """The IAM requests one call makes (``service`` is the signing name: dynamodb, s3, states, ...).

    ``partitions`` maps DynamoDB table names to their partition key, for ``dynamodb:LeadingKeys``.
    """
    if service == "dynamodb":
        return _dynamodb(operation, params, region, account, partitions or {})
    if service == "s3":
        return _s3(operation, params)
    if service == "states":
        return _states(operation, params)
    if service == "ssm":
        return _ssm(operation, params, region, account)
    if service == "secretsmanager":
        return _secretsmanager(operation, params, region, account)
    if service == "lambda":
        return _lambda(operation, params, region, account)
    if service == "sts" and operation == "GetCallerIdentity":
        return []  # needs no permission
    raise UnknownOperation(f"{service}:{operation}")


def opensearch_requests(method: str, path: str, target: Mapping[str, str]) -> list[IamRequest]:
    """An HTTP request to OpenSearch: ``es:ESHttp<Method>`` on the domain's path."""
    return [IamRequest(f"es:ESHttp{method.capitalize()}", f"{target['arn']}/{path.lstrip('/')}")]


# ---------------------------------------------------------------------------------------------- metering
@dataclass(frozen=True)
class Usage:
    """What one IAM request of a call wrote or read: item (or object) bytes and DynamoDB capacity units.

    An UpdateItem is billed by the larger of the item before and after; the request alone shows neither, so
    its units here are a floor (the key and the values it sets) and ``key`` names the item, for a reader that
    can look the stored item up.
    """

    bytes: int = 0
    units: float = 0.0
    key: str = ""


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def value_size(value: Mapping[str, Any]) -> int:
    """The DynamoDB size of one typed attribute value (``{"S": "..."}``), as the service bills it."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "N":
        return _number_size(inner)
    if kind == "B":
        return len(base64.b64decode(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(v.encode("utf-8")) for v in inner)
    if kind == "NS":
        return sum(_number_size(v) for v in inner)
    if kind == "BS":
        return sum(len(base64.b64decode(v)) for v in inner)
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + value_size(v) + 1 for k, v in inner.items())
    return 0


def item_size(item: Mapping[str, Any] | None) -> int:
    return sum(len(name.encode("utf-8")) + value_size(v) for name, v in (item or {}).items())


def write_units(size: int) -> float:
    return float(max(1, math.ceil(size / 1024)))


def read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


def _update_floor(body: Mapping[str, Any]) -> int:
    return item_size(body.get("Key")) + sum(
        value_size(v) for v in (body.get("ExpressionAttributeValues") or {}).values()
    )


def dynamodb_usage(operation: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> list[Usage]:
    """One Usage per IAM request of the call, in ``requests_for``'s order, from the wire bodies (typed JSON):
    writes by the item's size (1 KB a unit), reads by the size returned (4 KB a unit, half when eventually
    consistent), transactions twice."""
    consistent = bool(request.get("ConsistentRead"))
    if operation == "PutItem":
        size = item_size(request.get("Item"))
        return [Usage(size, write_units(size))]
    if operation == "UpdateItem":
        size = _update_floor(request)
        return [Usage(size, write_units(size), json.dumps(request.get("Key"), sort_keys=True))]
    if operation == "DeleteItem":
        return [Usage(0, write_units(item_size(request.get("Key"))))]
    if operation == "GetItem":
        size = item_size(response.get("Item"))
        return [Usage(size, read_units(size, consistent))]
    if operation in ("Query", "Scan"):
        size = sum(item_size(i) for i in response.get("Items", []))
        return [Usage(size, read_units(size, consistent))]
    if operation == "BatchWriteItem":
        found = []
        for entries in request.get("RequestItems", {}).values():
            sizes = [item_size(e["PutRequest"]["Item"]) if "PutRequest" in e else 0 for e in entries]
            found.append(Usage(sum(sizes), sum((write_units(size) for size in sizes), 0.0)))
        return found
    if operation == "BatchGetItem":
        found = []
        for table, body in request.get("RequestItems", {}).items():
            sizes = [item_size(i) for i in response.get("Responses", {}).get(table, [])]
            consistent = bool(body.get("ConsistentRead"))
            found.append(Usage(sum(sizes), sum((read_units(size, consistent) for size in sizes), 0.0)))
        return found
    if operation == "TransactWriteItems":
        found = []
        for entry in request.get("TransactItems", []):
            ((kind, body),) = entry.items()
            if kind == "Put":
                size = item_size(body.get("Item"))
                found.append(Usage(size, 2 * write_units(size)))
            elif kind == "Update":
                size = _update_floor(body)
                found.append(Usage(size, 2 * write_units(size), json.dumps(body.get("Key"), sort_keys=True)))
            else:
                found.append(Usage(0, 2 * write_units(item_size(body.get("Key")))))
        return found
    if operation == "TransactGetItems":
        responses = response.get("Responses", [])
        sizes = [item_size(r.get("Item")) for r in responses] or [0] * len(request.get("TransactItems", []))
        return [Usage(size, 2 * read_units(size, True)) for size in sizes]
    return []


def usage_of(
    service: str, operation: str, body: bytes | str | None, headers: Mapping[str, Any], response: Any
) -> list[Usage]:
    """What a call wrote or read, per IAM request, from its request body and headers and its HTTP response."""
    if service == "dynamodb":
        raw = response.content or b"{}"
        return dynamodb_usage(operation, json.loads(body or b"{}"), json.loads(raw) if raw[:1] == b"{" else {})
    if service == "s3" and operation in _S3_OBJECT:
        if operation in ("PutObject", "UploadPart"):
            return [Usage(int(headers.get(_OBJECT_LENGTH) or 0))]
        length = response.headers.get("content-length", 0) if operation == "GetObject" else 0
        return [Usage(int(length or 0))]
    return []


_OBJECT_LENGTH = "x-sandbox-object-length"


def _object_length(params: Mapping[str, Any]) -> int:
    """The bytes an S3 upload sends: its Body (bytes, text or a seekable file) or its ContentLength."""
    body = params.get("Body")
    if isinstance(body, (bytes, bytearray)):
        return len(body)
    if isinstance(body, str):
        return len(body.encode("utf-8"))
    if body is not None and hasattr(body, "seek") and hasattr(body, "tell"):
        start = body.tell()
        end = body.seek(0, os.SEEK_END)
        body.seek(start)
        return int(end - start)
    return int(params.get("ContentLength") or 0)


# ---------------------------------------------------------------------------------------------- policies
def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _glob(pattern: str, value: str, case_sensitive: bool) -> bool:
    # IAM wildcards: * any run of characters (including /), ? exactly one.
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.IGNORECASE) is not None


def _condition_holds(operator: str, key: str, expected: Any, context: Mapping[str, Any]) -> bool:
    quantifier = ""
    if ":" in operator:
        quantifier, operator = operator.split(":", 1)
    if_exists = operator.endswith("IfExists")
    operator = operator.removesuffix("IfExists")
    wanted = [str(v) for v in _as_list(expected)]
    if operator == "Null":
        return (key not in context) == (wanted[0].lower() == "true")
    if key not in context:
        return if_exists or quantifier == "ForAllValues"
    values = [str(v) for v in _as_list(context[key])]

    def one(value: str) -> bool:
        if operator == "StringEquals" or operator == "ArnEquals":
            return value in wanted
        if operator == "StringNotEquals" or operator == "ArnNotEquals":
            return value not in wanted
        if operator == "StringEqualsIgnoreCase":
            return value.lower() in (w.lower() for w in wanted)
        if operator in ("StringLike", "ArnLike"):
            return any(_glob(w, value, True) for w in wanted)
        if operator in ("StringNotLike", "ArnNotLike"):
            return not any(_glob(w, value, True) for w in wanted)
        if operator == "Bool":
            return value.lower() in (w.lower() for w in wanted)
        if operator.startswith("Numeric"):
            number = float(value)
            checks = {
                "NumericEquals": lambda w: number == w,
                "NumericNotEquals": lambda w: number != w,
                "NumericLessThan": lambda w: number < w,
                "NumericLessThanEquals": lambda w: number <= w,
                "NumericGreaterThan": lambda w: number > w,
                "NumericGreaterThanEquals": lambda w: number >= w,
            }
            if operator not in checks:
                raise ValueError(f"condition operator {operator} is not supported by the grant checker")
            return any(checks[operator](float(w)) for w in wanted)
        raise ValueError(f"condition operator {operator} is not supported by the grant checker")

    if quantifier == "ForAllValues":
        return all(one(v) for v in values)
    return any(one(v) for v in values)


def _statement_matches(statement: Mapping[str, Any], request: IamRequest) -> bool:
    if "Action" in statement:
        if not any(_glob(a, request.action, False) for a in _as_list(statement["Action"])):
            return False
    elif any(_glob(a, request.action, False) for a in _as_list(statement.get("NotAction", []))):
        return False
    if "Resource" in statement:
        if not any(_glob(r, request.resource, True) for r in _as_list(statement["Resource"])):
            return False
    elif any(_glob(r, request.resource, True) for r in _as_list(statement.get("NotResource", []))):
        return False
    for operator, clauses in (statement.get("Condition") or {}).items():
        for key, expected in clauses.items():
            if not _condition_holds(operator, key, expected, request.context):
                return False
    return True


@dataclass
class Policy:
    """The identity-policy statements of one role."""

    statements: list[dict[str, Any]]

    def allows(self, request: IamRequest) -> bool:
        matching = [s for s in self.statements if _statement_matches(s, request)]
        if any(s.get("Effect") == "Deny" for s in matching):
            return False
        return any(s.get("Effect") == "Allow" for s in matching)


# --------------------------------------------------------------------------------------------- the hook
@dataclass
class Call:
    """One IAM request a function made, as written to the call log."""

    function: str
    action: str
    resource: str
    allowed: bool
    operation: str
    at: float
    # The sandbox (execution environment) that made the call.
    sandbox: str = ""
    # The API call this IAM request is part of (a batch names several tables), within its sandbox.
    request: str = ""
    # What it wrote or read (``Usage``); -1 bytes when the answer could not be measured.
    bytes: int = 0
    units: float = 0.0
    key: str = ""


class Checker:
    """Checks (and logs) every call of one function against its role."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.function = str(config["function"])
        self.region = str(config["region"])
        self.account = str(config["account"])
        self.policy = Policy(list(config["statements"]))
        self.opensearch: dict[str, str] | None = config.get("opensearch")
        self.partitions: dict[str, str] = dict(config.get("partitions") or {})
        self.faults = Faults(str(config.get("faults") or ""))
        self._log_path = str(config["log"])
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def check(self, requests: Iterable[IamRequest], operation: str) -> IamRequest | None:
        """The first request the role denies (None when all are allowed); every request is logged now."""
        calls, denied = self.evaluate(requests, operation)
        self.log(calls)
        return denied

    def evaluate(self, requests: Iterable[IamRequest], operation: str) -> tuple[list[Call], IamRequest | None]:
        """Each request as a call to log, and the first one the role denies (None when all are allowed)."""
        denied: IamRequest | None = None
        calls = []
        number = f"{os.environ.get('AWS_LAMBDA_LOG_STREAM_NAME', '')}:{next(self._numbers)}"
        for request in requests:
            request = IamRequest(
                request.action,
                request.resource,
                {"aws:SecureTransport": "true", "aws:RequestedRegion": self.region, **request.context},
            )
            allowed = self.policy.allows(request)
            if not allowed and denied is None:
                denied = request
            calls.append(
                Call(
                    self.function,
                    request.action,
                    request.resource,
                    allowed,
                    operation,
                    time.time(),
                    os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", ""),
                    number,
                )
            )
        return calls, denied

    def log(self, calls: Iterable[Call]) -> None:
        lines = [json.dumps(asdict(call)) for call in calls]
        if lines:
            with self._lock, open(self._log_path, "a", encoding="utf-8") as log:
                log.write("\n".join(lines) + "\n")

    def message(self, request: IamRequest) -> str:
        return (
            f"User: arn:aws:sts::{self.account}:assumed-role/{self.function}-role/{self.function} is not authorized "
            f"to perform: {request.action} on resource: {request.resource} because no identity-based policy "
            f"allows the {request.action} action"
        )


class Faults:
    """Failures a test injects at one AWS call of a function (``DeployedStack.fault``), each fired once (or, with
    ``repeat``, at every matching call).

    A rule matches an IAM action, a substring of the resource and one of the request's parameters (and, with
    ``after``, only once the same sandbox made a call whose parameters contain that text). Effects:
    ``timeout`` ends the sandbox as Lambda ends one at its deadline (the caller sees ``Sandbox.Timedout``: what
    the function wrote before that call stays written, nothing after it happens), ``error:<Code>`` raises the
    service error ``<Code>``.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._armed: set[str] = set()

    def rules(self) -> list[dict[str, Any]]:
        if not self.path or not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as handle:
            return list(json.load(handle))

    def fire(self, request: IamRequest, params: Mapping[str, Any]) -> str | None:
        rules = self.rules()
        if not rules:
            return None
        text = json.dumps(params, default=str)
        for rule in rules:
            # A rule with "after" waits, in this sandbox, for a call whose parameters contain that text.
            if rule.get("after") and rule["id"] not in self._armed:
                if rule["after"] in text:
                    self._armed.add(rule["id"])
                continue
            if not _glob(rule["action"], request.action, False) or rule.get("resource", "") not in request.resource:
                continue
            if rule.get("params", "") not in text:
                continue
            if rule.get("repeat"):  # every matching call (a throttle that outlasts the client's own retries)
                return str(rule["effect"])
            try:  # once: the first sandbox to get here fires it
                os.close(os.open(f"{self.path}.{rule['id']}.fired", os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            return str(rule["effect"])
        return None


_PENDING = "sandbox_calls"
_SENT = "sandbox_sent"


def _botocore_hook(checker: Checker) -> None:
    from botocore.exceptions import ClientError
    from botocore.session import Session

    original = Session.create_client

    def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = original(self, *args, **kwargs)
        service = client.meta.service_model.signing_name
        region = client.meta.region_name or checker.region

        def before(params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            try:
                requests = requests_for(service, model.name, params, region, checker.account, checker.partitions)
            except UnknownOperation as error:
                # Logged as a denial too, so the test fails even when the code swallows the error.
                checker.check([IamRequest(f"{service}:{model.name}", f"unmapped ({error})")], model.name)
                raise
            calls, denied = checker.evaluate(requests, model.name)
            if denied is not None or context.get("is_presign_request"):
                checker.log(calls)  # refused here, or a URL signed for someone else to use
            else:
                context[_PENDING] = calls  # logged once answered, with what the call wrote or read
                if service == "s3":
                    context[_SENT] = (b"", {_OBJECT_LENGTH: _object_length(params)})
            if denied is not None:
                raise ClientError(
                    {
                        "Error": {"Code": "AccessDeniedException", "Message": checker.message(denied)},
                        "ResponseMetadata": {"HTTPStatusCode": 400},
                    },
                    model.name,
                )
            for request in requests:
                effect = checker.faults.fire(request, params)
                if effect is not None:
                    checker.log(context.pop(_PENDING, []))  # made, whatever happens to it now
                if effect == "timeout":
                    marker = os.path.join(os.environ.get("TMPDIR", "/tmp"), ".timed-out")
                    open(marker, "w").close()
                    os._exit(1)
                if effect is not None and effect.startswith("error:"):
                    code = effect.split(":", 1)[1]
                    raise ClientError(
                        {
                            "Error": {"Code": code, "Message": f"injected {code}"},
                            "ResponseMetadata": {"HTTPStatusCode": 500},
                        },
                        model.name,
                    )

        def sent(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
            if _PENDING in context and service != "s3":
                context[_SENT] = (params.get("body"), {})

        def answered(http_response: Any, model: Any, context: dict[str, Any], **_: Any) -> None:
            calls: list[Call] | None = context.pop(_PENDING, None)
            if calls is None:
                return
            body, headers = context.pop(_SENT, (b"", {}))
            try:
                usage = usage_of(service, model.name, body, headers, http_response)
            except Exception:  # measuring must never break the function: marked unmeasured instead
                usage = [Usage(-1)] * len(calls)
            for call, used in zip(calls, usage, strict=False):
                call.bytes, call.units, call.key = used.bytes, used.units, used.key
            checker.log(calls)

        def failed(context: dict[str, Any], **_: Any) -> None:
            checker.log(context.pop(_PENDING, []))  # sent, never answered (a connection error)

        client.meta.events.register("before-parameter-build", before)
        client.meta.events.register("before-call", sent)
        client.meta.events.register("after-call", answered)
        client.meta.events.register("after-call-error", failed)
        return client

    Session.create_client = create_client  # type: ignore[method-assign]


def _opensearch_hook(checker: Checker) -> None:
    target = checker.opensearch
    if not target:
        return
    try:
        from opensearchpy import AuthorizationException
        from opensearchpy.connection.http_requests import RequestsHttpConnection
        from opensearchpy.connection.http_urllib3 import Urllib3HttpConnection
    except ImportError:  # a function without the OpenSearch client cannot call it
        return

    route_to = target.get("route_to")
    if route_to:
        _route_domain(urlsplit(target["url"]).hostname or "", urlsplit(route_to), Urllib3HttpConnection)
    for connection in (Urllib3HttpConnection, RequestsHttpConnection):
        original = connection.perform_request

        def perform_request(self: Any, method: str, url: str, *args: Any, __original: Any = original, **kwargs: Any):  # type: ignore[no-untyped-def]
            path = urlsplit(url).path
            denied = checker.check(opensearch_requests(method, path, target), f"{method} {path}")
            if denied is not None:
                raise AuthorizationException(403, "security_exception", {"error": checker.message(denied)})
            return __original(self, method, url, *args, **kwargs)

        connection.perform_request = perform_request  # type: ignore[method-assign]


def _route_domain(domain_host: str, local: Any, connection: type) -> None:
    """Connections to the stack's domain host go to the local node instead (plain HTTP), as DNS would send them.

    The function is configured, signs and is checked as for the provisioned domain; only the socket differs.
    ``connection``: the class the function's client connects with (urllib3's, under SigV4 auth).
    """
    original_init = connection.__init__  # type: ignore[misc]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("host") == domain_host:
            kwargs.update(host=local.hostname, port=local.port, use_ssl=False, verify_certs=False)
        original_init(self, *args, **kwargs)

    connection.__init__ = __init__  # type: ignore[misc]


def install(config_path: str) -> Checker:
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    checker = Checker(config)
    _botocore_hook(checker)
    _opensearch_hook(checker)
    return checker


def read_calls(path: str) -> list[Call]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as log:
        return [Call(**json.loads(line)) for line in log if line.strip()]
