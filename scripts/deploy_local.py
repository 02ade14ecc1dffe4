#!/usr/bin/env python
"""Deploy ragline to LocalStack from template.yaml: tables, state bucket, the five functions, the workflow.

    make deploy-local DEPLOY_LOCAL_ARGS="--opensearch-endpoint http://localhost:4566/..."   # LocalStack on :4566
    .venv/bin/python scripts/deploy_local.py --help                                         # options

Endpoints come from ``localstack-client`` (``LOCALSTACK_HOST=host:port``, or ``--localstack-host``). Running it
again updates what exists. Each function gets exactly the environment CloudFormation would give it: the
template is transformed by SAM and its intrinsics resolved by the resolver the deployed-stack tests use
(``tests/support/cfn.py``), against the names this script gives the resources (``PREFIX-events``,
``PREFIX-pipeline-step``, ...) and the stack parameters (``--opensearch-endpoint`` is ``OpenSearchEndpoint``:
LocalStack provisions no domain from here, so the search endpoint is a parameter; ``--parameter NAME=VALUE``
sets any other). The one variable set otherwise is ``RAGLINE_CONFIG_DIR`` (``/var/task/config``): layers are a
LocalStack Pro feature, so each function's zip carries what the layers would: the run-time dependencies
(installed for python3.12 on the chosen architecture), the ragline package and ``config/``. HTTP APIs are Pro
too: ingest_turn gets a function URL (same payload 2.0 events, same Mangum handler). stream_reader needs the
Lambda Web Adapter layer (``--web-adapter-layer``); without it, serve it locally with the command printed at
the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localstack_client.session import Session

from ragline.serverless.template_tables import create_tables, default_table_name, load_template, table_specs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The deployed-stack tests' own SAM transform and resolver: what they test is what this deploys.
from tests.support.cfn import Resolver, sam_transform  # noqa: E402
from tests.support.serverless import generated_secret  # noqa: E402

TEMPLATE = ROOT / "template.yaml"
ASL = ROOT / "statemachine" / "pipeline.asl.json"
REQUIREMENTS = ROOT / "layers" / "core" / "requirements.txt"
# Pure-Python packages published as source only: pip cannot fetch them for another platform, and need not.
SOURCE_ONLY = {"jieba"}
# Present in every Lambda Python runtime; aws-xray-sdk pulls botocore in again (~24 MB).
IN_RUNTIME = ("boto3", "botocore", "s3transfer")
# The functions of template.yaml and the names they get here (PREFIX-<name>).
FUNCTION_NAMES = {
    "IngestTurnFunction": "ingest-turn",
    "IndexDocumentFunction": "index-document",
    "PipelineStepFunction": "pipeline-step",
    "StreamReaderFunction": "stream-reader",
    "SweepFunction": "sweep",
}
# Where config/ lands in the zip (in AWS the ConfigLayer puts it at /opt).
CONFIG_DIR = "/var/task/config"
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
STATES_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


def log(message: str) -> None:
    print(f"[deploy-local] {message}", flush=True)


# ------------------------------------------------------------------------------------------- packaging
def _files(directory: Path) -> Iterator[Path]:
    for path in sorted(directory.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            yield path


def install_dependencies(build: Path, arch: str) -> Path:
    """The CoreLayer's requirements for python3.12 on ``arch``, cached on the requirements' hash."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]
    target = build / f"deps-{arch}-{digest}"
    if (target / ".complete").is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    lines = [line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines()]
    specs = [line for line in lines if line]
    binary = [s for s in specs if not any(s.lower().startswith(name) for name in SOURCE_ONLY)]
    source = [s for s in specs if s not in binary]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target)]
    machine = "aarch64" if arch == "arm64" else "x86_64"
    # The python3.12 runtime is Amazon Linux 2023 (glibc 2.34): any manylinux wheel up to 2_34 runs there.
    platforms = [f"--platform=manylinux_2_{glibc}_{machine}" for glibc in (34, 28, 27, 17)]
    log(f"installing {len(specs)} dependencies for python3.12/{arch} into {target}")
    subprocess.run(
        [*pip, *platforms, "--implementation", "cp", "--python-version", "3.12", "--only-binary=:all:", *binary],
        check=True,
    )
    if source:
        subprocess.run([*pip, "--no-deps", *source], check=True)
    for name in IN_RUNTIME:
        for path in target.glob(f"{name}*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    (target / ".complete").touch()
    return target


def build_zips(template: dict[str, Any], build: Path, deps: Path | None) -> dict[str, Path]:
    """One zip per function: its code, plus what the core and config layers hold in AWS."""
    build.mkdir(parents=True, exist_ok=True)
    base = build / "base.zip"
    with zipfile.ZipFile(base, "w", zipfile.ZIP_DEFLATED) as archive:
        if deps is not None:
            for path in _files(deps):
                if path.name != ".complete":
                    archive.write(path, path.relative_to(deps).as_posix())
        package = ROOT / "layers" / "core" / "ragline"
        for path in _files(package):
            archive.write(path, ("ragline" / path.relative_to(package)).as_posix())
        for path in _files(ROOT / "config"):
            archive.write(path, ("config" / path.relative_to(ROOT / "config")).as_posix())
    zips: dict[str, Path] = {}
    for function_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        code = ROOT / resource["Properties"]["CodeUri"]
        out = build / f"{function_id}.zip"
        shutil.copyfile(base, out)
        with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as archive:
            for path in _files(code):
                archive.write(path, path.relative_to(code).as_posix())  # keeps run.sh executable
        zips[function_id] = out
    return zips


# ------------------------------------------------------------------------------------------- resources
def ensure_bucket(s3: Any, name: str, region: str) -> None:
    try:
        if region == "us-east-1":
            s3.create_bucket(Bucket=name)
        else:
            s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    except (s3.exceptions.BucketAlreadyOwnedByYou, s3.exceptions.BucketAlreadyExists):
        pass


def ensure_role(iam: Any, name: str, trust: dict[str, Any]) -> str:
    try:
        return str(iam.get_role(RoleName=name)["Role"]["Arn"])
    except iam.exceptions.NoSuchEntityException:
        return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"])


def deploy_function(lambda_client: Any, name: str, config: dict[str, Any], bucket: str, key: str) -> str:
    """Create or update one function from the zip at s3://bucket/key; returns its ARN."""
    try:
        lambda_client.get_function(FunctionName=name)
    except lambda_client.exceptions.ResourceNotFoundException:
        arn = lambda_client.create_function(
            FunctionName=name, Code={"S3Bucket": bucket, "S3Key": key}, Publish=False, **config
        )["FunctionArn"]
        lambda_client.get_waiter("function_active_v2").wait(FunctionName=name)
        return str(arn)
    lambda_client.update_function_code(FunctionName=name, S3Bucket=bucket, S3Key=key)
    lambda_client.get_waiter("function_updated_v2").wait(FunctionName=name)
    config = {k: v for k, v in config.items() if k not in ("Architectures",)}
    arn = lambda_client.update_function_configuration(FunctionName=name, **config)["FunctionArn"]
    lambda_client.get_waiter("function_updated_v2").wait(FunctionName=name)
    return str(arn)


def ensure_function_url(lambda_client: Any, name: str, invoke_mode: str, cors: dict[str, Any] | None) -> str:
    settings: dict[str, Any] = {"AuthType": "NONE", "InvokeMode": invoke_mode}
    if cors:
        settings["Cors"] = cors
    try:
        url = lambda_client.get_function_url_config(FunctionName=name)["FunctionUrl"]
        lambda_client.update_function_url_config(FunctionName=name, **settings)
    except lambda_client.exceptions.ResourceNotFoundException:
        url = lambda_client.create_function_url_config(FunctionName=name, **settings)["FunctionUrl"]
        lambda_client.add_permission(
            FunctionName=name,
            StatementId="FunctionUrlAllowPublicAccess",
            Action="lambda:InvokeFunctionUrl",
            Principal="*",
            FunctionUrlAuthType="NONE",
        )
    return str(url)


def ensure_state_machine(sfn: Any, name: str, definition: str, role_arn: str, workflow_type: str) -> str:
    for machine in sfn.get_paginator("list_state_machines").paginate().build_full_result()["stateMachines"]:
        if machine["name"] == name:
            if sfn.describe_state_machine(stateMachineArn=machine["stateMachineArn"])["type"] == workflow_type:
                sfn.update_state_machine(stateMachineArn=machine["stateMachineArn"], definition=definition)
                return str(machine["stateMachineArn"])
            sfn.delete_state_machine(stateMachineArn=machine["stateMachineArn"])  # the type cannot change
    arn = sfn.create_state_machine(name=name, definition=definition, roleArn=role_arn, type=workflow_type)
    return str(arn["stateMachineArn"])


def ensure_tenant(session: Session, table: str, name: str) -> tuple[str, str]:
    """A tenant with a fresh API key (keys are stored hashed: an existing tenant gets a new one)."""
    from ragline.store.dynamodb import DynamoTenantStore
    from ragline.store.models import generate_key

    store = DynamoTenantStore(session.resource("dynamodb").Table(table))
    tenant = store.by_name(name)
    if tenant is None:
        tenant, key = store.create(name)
    else:
        key = generate_key()
        store.add_key(tenant.id, key)
    return tenant.id, key


@dataclass
class LocalStack:
    """The names this deployment gives the template's resources, and the resolver that reads the template."""

    template: dict[str, Any]
    parameters: dict[str, str]
    prefix: str
    region: str
    account: str

    def __post_init__(self) -> None:
        self.cfn = sam_transform(self.template, self.parameters)
        self.tables = {t: default_table_name(t, self.prefix) for t in table_specs(self.template)}
        self.functions = {f: f"{self.prefix}-{name}" for f, name in FUNCTION_NAMES.items()}
        self.state_bucket = f"{self.prefix}-state"
        self.state_machine = f"{self.prefix}-pipeline"
        self.stream_url = ""
        # The template's generated secrets (the token-signing secret): logical id -> ARN, once created.
        self.secrets: dict[str, str] = {}

    @property
    def state_machine_arn(self) -> str:
        return f"arn:aws:states:{self.region}:{self.account}:stateMachine:{self.state_machine}"

    def function_arn(self, function_id: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.functions[function_id]}"

    def resolver(self) -> Resolver:
        refs = {**self.tables, **self.functions, **self.secrets, "StateBucket": self.state_bucket}
        refs["PipelineStateMachine"] = self.state_machine_arn
        attributes = {f"{f}.Arn": self.function_arn(f) for f in self.functions}
        attributes["PipelineStateMachine.Name"] = self.state_machine
        if self.stream_url:
            attributes["StreamReaderFunctionUrl.FunctionUrl"] = self.stream_url
        return Resolver(
            self.cfn,
            self.parameters,
            refs,
            attributes,
            region=self.region,
            account_id=self.account,
            stack_name=self.prefix,
        )

    def environment(self, function_id: str) -> dict[str, str]:
        """The function's variables as CloudFormation would set them, but config/ where the zip has it."""
        return {**self.resolver().environment(function_id), "RAGLINE_CONFIG_DIR": CONFIG_DIR}

    def function_config(self, function_id: str, role_arn: str, arch: str, env: dict[str, str]) -> dict[str, Any]:
        props = self.cfn["Resources"][function_id]["Properties"]
        return {
            "Runtime": props["Runtime"],
            "Handler": props["Handler"],
            "Role": role_arn,
            "Timeout": int(props.get("Timeout", 3)),
            "MemorySize": int(props.get("MemorySize", 128)),
            "Architectures": [arch],
            "Environment": {"Variables": env},
        }


# ------------------------------------------------------------------------------------------------ main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    machine = platform.machine().lower()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--localstack-host", default=None, help="host:port (default: $LOCALSTACK_HOST or localhost:4566)"
    )
    parser.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    parser.add_argument("--prefix", default="ragline", help="resource name prefix (tables: PREFIX-events, ...)")
    parser.add_argument("--workflow-type", choices=["STANDARD", "EXPRESS"], default=None, help="default: template's")
    parser.add_argument(
        "--arch",
        choices=["x86_64", "arm64"],
        default="arm64" if machine in ("arm64", "aarch64") else "x86_64",
        help="architecture of the functions (default: this machine's, which LocalStack runs natively)",
    )
    parser.add_argument("--skip-deps", action="store_true", help="zip code, ragline and config only (no pip)")
    parser.add_argument("--web-adapter-layer", default="", help="Lambda Web Adapter layer ARN for stream_reader")
    parser.add_argument("--lambda-endpoint-url", default="", help="RAGLINE_AWS_ENDPOINT_URL inside the functions")
    parser.add_argument("--tenant", default="default", help="tenant to create (or give a new key); '' for none")
    parser.add_argument(
        "--opensearch-endpoint",
        default=os.environ.get("RAGLINE_OPENSEARCH_URL", ""),
        help="the OpenSearch the functions search (the OpenSearchEndpoint parameter; default $RAGLINE_OPENSEARCH_URL)",
    )
    parser.add_argument(
        "--parameter", action="append", default=[], metavar="NAME=VALUE", help="a template parameter (repeatable)"
    )
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "localstack")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    template = load_template(TEMPLATE)
    session = Session(region_name=args.region, localstack_host=args.localstack_host)
    parameters = dict(p.split("=", 1) for p in args.parameter)
    if args.opensearch_endpoint:
        parameters["OpenSearchEndpoint"] = args.opensearch_endpoint
    if not parameters.get("OpenSearchEndpoint"):
        log("an OpenSearch endpoint is needed (--opensearch-endpoint URL): LocalStack provisions no domain from here")
        return 2
    if args.workflow_type:
        parameters["WorkflowType"] = args.workflow_type
    account = str(session.client("sts").get_caller_identity()["Account"])
    stack = LocalStack(template, parameters, args.prefix, args.region, account)
    workflow_type = stack.resolver().parameter("WorkflowType")

    deps = None if args.skip_deps else install_dependencies(args.build_dir, args.arch)
    zips = build_zips(template, args.build_dir, deps)

    tables = create_tables(session.client("dynamodb"), template, stack.tables, exist_ok=True)
    log(f"tables: {', '.join(tables.values())}")
    s3 = session.client("s3")
    code_bucket = f"{args.prefix}-deploy"
    for bucket in (stack.state_bucket, code_bucket):
        ensure_bucket(s3, bucket, args.region)
    secrets_client = session.client("secretsmanager")
    for logical_id, resource in stack.cfn["Resources"].items():
        if resource["Type"] != "AWS::SecretsManager::Secret":
            continue
        # Created with a generated value, as CloudFormation creates the template's secret; kept on a second deploy.
        name = f"{args.prefix}-{logical_id}"
        try:
            arn = secrets_client.describe_secret(SecretId=name)["ARN"]
        except secrets_client.exceptions.ResourceNotFoundException:
            spec = (resource.get("Properties") or {}).get("GenerateSecretString") or {}
            arn = secrets_client.create_secret(Name=name, SecretString=generated_secret(spec))["ARN"]
        stack.secrets[logical_id] = arn
        log(f"secret {name}")
    iam = session.client("iam")
    lambda_role = ensure_role(iam, f"{args.prefix}-lambda", LAMBDA_TRUST)
    states_role = ensure_role(iam, f"{args.prefix}-states", STATES_TRUST)
    for path in zips.values():
        s3.upload_file(str(path), code_bucket, path.name)
    log(f"code uploaded to s3://{code_bucket}/ ({', '.join(p.name for p in zips.values())})")

    lambda_client = session.client("lambda")

    def deploy(function_id: str) -> str:
        env = stack.environment(function_id)
        if args.lambda_endpoint_url:
            env["RAGLINE_AWS_ENDPOINT_URL"] = args.lambda_endpoint_url
        config = stack.function_config(function_id, lambda_role, args.arch, env)
        if function_id == "StreamReaderFunction" and args.web_adapter_layer:
            config["Layers"] = [args.web_adapter_layer]
        name = stack.functions[function_id]
        arn = deploy_function(lambda_client, name, config, code_bucket, zips[function_id].name)
        log(f"function {name}")
        return arn

    # The workflow needs pipeline_step's ARN; ingest_turn needs stream_reader's URL.
    step_arn = deploy("PipelineStepFunction")
    definition = ASL.read_text(encoding="utf-8").replace("${PipelineStepFunctionArn}", step_arn)
    sfn = session.client("stepfunctions")
    machine_arn = ensure_state_machine(sfn, stack.state_machine, definition, states_role, workflow_type)
    log(f"state machine {machine_arn} ({workflow_type})")
    if machine_arn != stack.state_machine_arn:
        log(f"warning: the state machine's ARN is not {stack.state_machine_arn}, which the functions were given")

    stream_props = template["Resources"]["StreamReaderFunction"]["Properties"]
    deploy("StreamReaderFunction")
    stack.stream_url = ensure_function_url(
        lambda_client, stack.functions["StreamReaderFunction"], "RESPONSE_STREAM", _cors(stream_props, template)
    )
    for function_id in ("IndexDocumentFunction", "SweepFunction", "IngestTurnFunction"):
        deploy(function_id)
    api_url = ensure_function_url(lambda_client, stack.functions["IngestTurnFunction"], "BUFFERED", None)

    print()
    print(f"API (ingest_turn)      {api_url}")
    print(f"SSE (stream_reader)    {stack.stream_url}")
    print(f"state machine          {machine_arn}")
    if args.tenant:
        try:
            tenant_id, key = ensure_tenant(session, tables["TenantsTable"], args.tenant)
        except Exception as exc:  # the deployment stands; only the convenience key is missing
            log(f"could not create tenant {args.tenant!r}: {type(exc).__name__}: {exc}")
        else:
            print(f"tenant {args.tenant!r}       {tenant_id}  X-API-Key: {key}")
    if not args.web_adapter_layer:
        env = {k: v for k, v in stack.environment("StreamReaderFunction").items() if "RAGLINE_" in k}
        env.pop("RAGLINE_CONFIG_DIR", None)
        endpoint = session.client("dynamodb").meta.endpoint_url
        # Quoted for the shell it is pasted into: a value with a space or a metacharacter stays one value.
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()) if v)
        print()
        print("stream_reader streams through the Lambda Web Adapter layer, which LocalStack has only with Pro")
        print("(--web-adapter-layer ARN). Without it, serve the same app locally against LocalStack:")
        print(f"  AWS_ENDPOINT_URL={endpoint} RAGLINE_AWS_ENDPOINT_URL={endpoint} AWS_ACCESS_KEY_ID=test \\")
        print(f"  AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION={args.region} {exports} \\")
        print("  .venv/bin/python -m uvicorn app:app --app-dir functions/stream_reader --port 8080")
    return 0


def _cors(props: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    cors = dict(props["FunctionUrlConfig"].get("Cors") or {})
    origins = cors.get("AllowOrigins")
    if isinstance(origins, dict) and "Ref" in origins:  # the CorsAllowOrigin parameter's default
        cors["AllowOrigins"] = str(template["Parameters"][origins["Ref"]]["Default"]).split(",")
    return cors


if __name__ == "__main__":
    sys.exit(main())
