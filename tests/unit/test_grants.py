"""The grant checker the deployed-stack tests rely on (tests/support/grants.py): IAM requests per API call and
the policy evaluation, including the template's own statements resolved for a deployment."""

from __future__ import annotations

import pytest
from boto3.dynamodb.conditions import Key

from tests.support.cfn import Resolver, sam_transform
from tests.support.grants import IamRequest, Policy, UnknownOperation, requests_for

REGION, ACCOUNT = "us-east-1", "123456789012"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/t"


def _requests(service, operation, params, partitions=None):
    return requests_for(service, operation, params, REGION, ACCOUNT, partitions)


# ------------------------------------------------------------------------------------------ call → IAM
def test_dynamodb_requests_name_the_table_or_its_index():
    assert _requests("dynamodb", "GetItem", {"TableName": "t", "Key": {"pk": "a"}}) == [
        IamRequest("dynamodb:GetItem", TABLE)
    ]
    [query] = _requests("dynamodb", "Query", {"TableName": "t", "IndexName": "by-name"})
    assert query.resource == f"{TABLE}/index/by-name"


def test_batches_and_transactions_name_every_table():
    batch = _requests("dynamodb", "BatchWriteItem", {"RequestItems": {"a": [], "b": []}})
    assert {(r.action, r.resource.rsplit("/", 1)[1]) for r in batch} == {
        ("dynamodb:BatchWriteItem", "a"),
        ("dynamodb:BatchWriteItem", "b"),
    }
    transaction = _requests(
        "dynamodb",
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "a", "Item": {}}},
                {"Update": {"TableName": "b", "Key": {}}},
                {"ConditionCheck": {"TableName": "c", "Key": {}}},
            ]
        },
    )
    assert [(r.action, r.resource.rsplit("/", 1)[1]) for r in transaction] == [
        ("dynamodb:PutItem", "a"),
        ("dynamodb:UpdateItem", "b"),
        ("dynamodb:ConditionCheckItem", "c"),
    ]


def test_leading_keys_from_items_keys_batches_and_key_conditions():
    partitions = {"t": "pk"}
    [put] = _requests("dynamodb", "PutItem", {"TableName": "t", "Item": {"pk": {"S": "memory#a#b"}}}, partitions)
    assert put.context == {"dynamodb:LeadingKeys": ["memory#a#b"]}
    [batch] = _requests(
        "dynamodb",
        "BatchWriteItem",
        {
            "RequestItems": {
                "t": [{"PutRequest": {"Item": {"pk": "memory#1"}}}, {"DeleteRequest": {"Key": {"pk": "doc#2"}}}]
            }
        },
        partitions,
    )
    assert batch.context == {"dynamodb:LeadingKeys": ["memory#1", "doc#2"]}
    [high_level] = _requests(
        "dynamodb",
        "Query",
        {"TableName": "t", "KeyConditionExpression": Key("pk").eq("p1") & Key("sk").gt("x")},
        partitions,
    )
    assert high_level.context == {"dynamodb:LeadingKeys": ["p1"]}
    [expression] = _requests(
        "dynamodb",
        "Query",
        {
            "TableName": "t",
            "KeyConditionExpression": "#n0 = :v0 AND begins_with(#n1, :v1)",
            "ExpressionAttributeNames": {"#n0": "pk", "#n1": "sk"},
            "ExpressionAttributeValues": {":v0": {"S": "p2"}, ":v1": {"S": "mem#"}},
        },
        partitions,
    )
    assert expression.context == {"dynamodb:LeadingKeys": ["p2"]}


def test_s3_step_functions_ssm_secrets_and_lambda():
    assert _requests("s3", "HeadObject", {"Bucket": "b", "Key": "k/1"}) == [
        IamRequest("s3:GetObject", "arn:aws:s3:::b/k/1")
    ]
    assert _requests("s3", "ListObjectsV2", {"Bucket": "b", "Prefix": "p/"})[0] == IamRequest(
        "s3:ListBucket", "arn:aws:s3:::b", {"s3:prefix": "p/"}
    )
    assert [
        r.resource for r in _requests("s3", "DeleteObjects", {"Bucket": "b", "Delete": {"Objects": [{"Key": "x"}]}})
    ] == ["arn:aws:s3:::b/x"]
    assert _requests("states", "StopExecution", {"executionArn": "arn:x"}) == [
        IamRequest("states:StopExecution", "arn:x")
    ]
    assert _requests("ssm", "GetParameter", {"Name": "/app/key"})[0].resource == (
        f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/app/key"
    )
    assert _requests("secretsmanager", "GetSecretValue", {"SecretId": "arn:aws:secretsmanager:x"})[0].resource == (
        "arn:aws:secretsmanager:x"
    )
    assert _requests("lambda", "Invoke", {"FunctionName": "f"}) == [
        IamRequest("lambda:InvokeFunction", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:f")
    ]
    with pytest.raises(UnknownOperation):
        _requests("sqs", "SendMessage", {})
    with pytest.raises(UnknownOperation):
        _requests("s3", "PutBucketPolicy", {"Bucket": "b"})


# ------------------------------------------------------------------------------------------- evaluation
def test_allow_needs_action_and_resource_and_an_explicit_deny_wins():
    policy = Policy(
        [
            {"Effect": "Allow", "Action": ["dynamodb:Get*", "dynamodb:Query"], "Resource": [TABLE, f"{TABLE}/index/*"]},
            {"Effect": "Deny", "Action": "dynamodb:GetItem", "Resource": f"{TABLE}-secret"},
            {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": f"{TABLE}-secret"},
        ]
    )
    assert policy.allows(IamRequest("dynamodb:GetItem", TABLE))
    assert policy.allows(IamRequest("DynamoDB:getitem", TABLE))  # actions are case-insensitive
    assert policy.allows(IamRequest("dynamodb:Query", f"{TABLE}/index/by-name"))
    assert not policy.allows(IamRequest("dynamodb:PutItem", TABLE))  # implicit deny
    assert not policy.allows(IamRequest("dynamodb:GetItem", f"{TABLE}2"))
    assert not policy.allows(IamRequest("dynamodb:GetItem", f"{TABLE}-secret"))  # explicit deny


def test_conditions():
    policy = Policy(
        [
            {
                "Effect": "Allow",
                "Action": "dynamodb:PutItem",
                "Resource": TABLE,
                "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["memory#*"]}},
            },
            {
                "Effect": "Deny",
                "Action": "s3:*",
                "Resource": "*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"},
        ]
    )
    assert policy.allows(IamRequest("dynamodb:PutItem", TABLE, {"dynamodb:LeadingKeys": ["memory#t#u"]}))
    assert not policy.allows(IamRequest("dynamodb:PutItem", TABLE, {"dynamodb:LeadingKeys": ["memory#t#u", "kb#1"]}))
    assert not policy.allows(IamRequest("dynamodb:PutItem", TABLE, {"dynamodb:LeadingKeys": ["doc#1"]}))
    assert policy.allows(IamRequest("s3:GetObject", "arn:aws:s3:::b/k", {"aws:SecureTransport": "true"}))
    assert not policy.allows(IamRequest("s3:GetObject", "arn:aws:s3:::b/k", {"aws:SecureTransport": "false"}))
    with pytest.raises(ValueError, match="not supported"):
        Policy([{"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"IpAddress": {"k": "v"}}}]).allows(
            IamRequest("s3:GetObject", "x", {"k": "v"})
        )


def test_the_template_roles_resolve_to_statements_on_the_deployed_names():
    cfn = sam_transform()
    resolver = Resolver(
        cfn,
        {"ChatApiKeyParameter": "/ragline/chat"},
        refs={logical: f"phys-{logical}" for logical in cfn["Resources"]},
        attributes={
            **{
                f"{logical}.Arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/phys-{logical}"
                for logical in cfn["Resources"]
            },
            "PipelineStateMachine.Name": "machine",
            "StateBucket.Arn": "arn:aws:s3:::bucket",
            "StreamReaderFunctionUrl.FunctionUrl": "https://reader.lambda-url.us-east-1.on.aws/",
            "SearchDomain.DomainEndpoint": "search-phys.us-east-1.es.amazonaws.com",
            "SearchDomain.Arn": f"arn:aws:es:{REGION}:{ACCOUNT}:domain/phys-search",
        },
    )
    policy = Policy(resolver.role_statements("PipelineStepFunctionRole"))
    sessions = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/phys-SessionsTable"
    knowledge = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/phys-KnowledgeTable"
    assert policy.allows(IamRequest("dynamodb:UpdateItem", sessions))  # the session title
    assert policy.allows(IamRequest("dynamodb:Query", f"{sessions}/index/any"))  # SAM's read policy: /index/*
    assert policy.allows(IamRequest("dynamodb:PutItem", knowledge, {"dynamodb:LeadingKeys": ["memory#t#u"]}))
    assert not policy.allows(IamRequest("dynamodb:PutItem", knowledge, {"dynamodb:LeadingKeys": ["kb#t"]}))
    assert policy.allows(IamRequest("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/ragline/chat"))
    assert policy.allows(IamRequest("s3:PutObject", "arn:aws:s3:::bucket/state/x"))
    assert not policy.allows(IamRequest("states:StartExecution", "arn:aws:states:x"))
    reader = Policy(resolver.role_statements("StreamReaderFunctionRole"))
    assert reader.allows(IamRequest("dynamodb:PutItem", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/phys-StateTable"))
    assert not reader.allows(IamRequest("ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/ragline/chat"))
    assert policy.allows(
        IamRequest("es:ESHttpPost", f"arn:aws:es:{REGION}:{ACCOUNT}:domain/phys-search/ragline-chunks/_search")
    )
    assert not reader.allows(IamRequest("es:ESHttpPost", f"arn:aws:es:{REGION}:{ACCOUNT}:domain/phys-search/x/_search"))
    env = resolver.environment("IngestTurnFunction")
    assert env["RAGLINE_EVENTS_TABLE"] == "phys-EventsTable"
    assert env["RAGLINE_CHAT_API_KEY_PARAMETER"] == "/ragline/chat"
    assert env["RAGLINE_STREAM_BASE_URL"] == "https://reader.lambda-url.us-east-1.on.aws/"


# --------------------------------------------------------------------------------------------- metering
def test_item_sizes_and_capacity_units_as_dynamodb_bills_them():
    from tests.support.grants import Usage, dynamodb_usage, item_size

    # Attribute names count; a number takes (significant digits + 1) / 2 + 1 bytes.
    assert item_size({"pk": {"S": "abc"}, "n": {"N": "123"}}) == 2 + 3 + 1 + 3
    assert item_size({"m": {"M": {"a": {"BOOL": True}}}, "l": {"L": [{"S": "xy"}]}}) == (1 + 3 + 1 + 1 + 1) + (
        1 + 3 + 2 + 1
    )
    big = {"pk": {"S": "k"}, "body": {"S": "x" * 1100}}
    assert dynamodb_usage("PutItem", {"Item": big}, {}) == [Usage(item_size(big), 2.0)]
    # Reads: 4 KB a unit on the sum returned, half when eventually consistent; an empty answer still costs one.
    items = [{"pk": {"S": "k"}, "body": {"S": "x" * 3000}}] * 2
    assert dynamodb_usage("Query", {}, {"Items": items})[0].units == 1.0
    assert dynamodb_usage("Query", {"ConsistentRead": True}, {"Items": items})[0].units == 2.0
    assert dynamodb_usage("GetItem", {}, {}) == [Usage(0, 0.5)]
    # An update is a floor (key and values) naming its item; a transaction costs twice, item by item.
    [update] = dynamodb_usage(
        "UpdateItem", {"Key": {"pk": {"S": "k"}}, "ExpressionAttributeValues": {":v": {"S": "abc"}}}, {}
    )
    assert (update.bytes, update.units, update.key) == (2 + 1 + 3, 1.0, '{"pk": {"S": "k"}}')
    transaction = dynamodb_usage(
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "a", "Item": big}},
                {"ConditionCheck": {"TableName": "c", "Key": {}}},
            ]
        },
        {},
    )
    assert [u.units for u in transaction] == [4.0, 2.0]
    # A batch: one usage per table, in the order of its IAM requests.
    batch = {"RequestItems": {"a": [{"PutRequest": {"Item": big}}, {"DeleteRequest": {"Key": {}}}], "b": []}}
    assert [u.units for u in dynamodb_usage("BatchWriteItem", batch, {})] == [2.0 + 1.0, 0.0]
    assert len(_requests("dynamodb", "BatchWriteItem", batch)) == 2


def test_the_sandbox_hook_logs_each_allowed_call_once_answered_with_what_it_wrote_or_read(tmp_path, monkeypatch):
    """Installed as in a sandbox (against moto in this process): puts, reads and S3 objects carry their sizes;
    a denied call is logged at once, unsent."""
    import json

    import boto3
    from botocore.session import Session
    from moto import mock_aws

    from tests.support import grants

    config = tmp_path / "grants.json"
    config.write_text(
        json.dumps(
            {
                "function": "F",
                "region": REGION,
                "account": ACCOUNT,
                "log": str(tmp_path / "calls.jsonl"),
                "statements": [
                    {"Effect": "Allow", "Action": ["dynamodb:*", "s3:*"], "Resource": "*"},
                    {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": "*"},
                ],
            }
        )
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setattr(Session, "create_client", Session.create_client)  # restored after the test
    with mock_aws():
        admin = boto3.client("dynamodb", region_name=REGION)
        admin.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        boto3.client("s3", region_name=REGION).create_bucket(Bucket="bucket-b")
        grants.install(str(config))
        table = boto3.resource("dynamodb", region_name=REGION).Table("t")
        table.put_item(Item={"pk": "a", "body": "x" * 2000})
        table.get_item(Key={"pk": "a"})
        table.update_item(Key={"pk": "a"}, UpdateExpression="SET n = :n", ExpressionAttributeValues={":n": 7})
        with pytest.raises(Exception, match="AccessDenied"):
            table.delete_item(Key={"pk": "a"})
        s3 = boto3.client("s3", region_name=REGION)
        s3.put_object(Bucket="bucket-b", Key="k", Body=b"y" * 300)
        s3.get_object(Bucket="bucket-b", Key="k")["Body"].read()
    calls = grants.read_calls(str(tmp_path / "calls.jsonl"))
    by_operation = {c.operation: c for c in calls}
    assert [c.operation for c in calls] == ["PutItem", "GetItem", "UpdateItem", "DeleteItem", "PutObject", "GetObject"]
    assert (by_operation["PutItem"].bytes, by_operation["PutItem"].units) == (2 + 1 + 4 + 2000, 2.0)
    assert (by_operation["GetItem"].bytes, by_operation["GetItem"].units) == (2 + 1 + 4 + 2000, 0.5)
    assert by_operation["UpdateItem"].key == '{"pk": {"S": "a"}}'
    assert not by_operation["DeleteItem"].allowed
    assert by_operation["DeleteItem"].units == 0
    assert by_operation["PutObject"].bytes == 300
    assert by_operation["GetObject"].bytes == 300
    assert len({c.request for c in calls}) == len(calls)
