"""The serverless runtime in one process, for bench/soak.py's serverless run only: moto executes the real
generated state machine and dispatches its Lambda tasks to the real ``pipeline_step`` code, in this process.

Not a test of the deployment (one runtime plays every function, the embedded engine stands in for
OpenSearch, no grant is checked): the tests and the cost benchmark use tests/support/serverless.py, the
deployed stack.

Tables come from template.yaml, so tests and infrastructure cannot drift. OpenSearch is not available
here, so the knowledge store and engine are the embedded ones (a port each); everything else — the
event log, state, sessions, messages, tenants, the workflow — is the AWS adapter under moto.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
STEP_FUNCTION = "ragline-pipeline-step"

Dispatch = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass
class Invocation:
    stage: str
    phase: str
    ok: bool
    error: str = ""


@dataclass
class ServerlessStack:
    runtime: Any
    sfn: Any
    state_machine_arn: str
    db: Any
    invocations: list[Invocation] = field(default_factory=list)
    # Tests set this to intercept one invocation: (event, run) -> result (call run() for the real step).
    intercept: Callable[[dict[str, Any], Callable[[], dict[str, Any]]], dict[str, Any]] | None = None

    @property
    def container(self) -> Any:
        return self.runtime.container

    def create_tenant(self, name: str) -> tuple[Any, str]:
        """A tenant in DynamoDB, mirrored into the SQLite file that stands in for OpenSearch's knowledge."""
        tenant, key = self.container.tenants.create(name)
        self.db.execute(
            "INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)", (tenant.id, tenant.name, tenant.created_at)
        )
        return tenant, key

    def executions(self) -> list[dict[str, Any]]:
        return list(self.sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"])

    def wait_for_execution(self, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            executions = self.executions()
            if executions and all(e["status"] != "RUNNING" for e in executions):
                return dict(self.sfn.describe_execution(executionArn=executions[0]["executionArn"]))
            time.sleep(0.05)
        raise AssertionError("the workflow execution did not finish")

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
        while True:
            page = self.sfn.get_execution_history(**kwargs)
            events.extend(page["events"])
            if not page.get("nextToken"):
                return events
            kwargs["nextToken"] = page["nextToken"]


def _fake_credentials() -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "ragline",
    }.items():
        os.environ.setdefault(name, value)


@contextmanager
def serverless_stack(data_dir: Path, models: Any, workflow_type: str = "STANDARD") -> Iterator[ServerlessStack]:
    from moto.awslambda_simple.models import LambdaSimpleBackend

    from ragline.retrieval.embedded import EmbeddedEngine
    from ragline.serverless.aws import build_aws_runtime, idempotent_start
    from ragline.serverless.settings import AwsSettings
    from ragline.serverless.statemachine import render
    from ragline.serverless.step import StepInput, run_step
    from ragline.store.db import Database
    from ragline.store.knowledge import SqliteKnowledgeStore
    from tests.support.aws import create_tables_from_template

    _fake_credentials()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}):
        session = boto3.Session(region_name=REGION)
        tables = create_tables_from_template(session.client("dynamodb"), ROOT / "template.yaml")
        session.client("s3").create_bucket(Bucket="ragline-state-test")
        iam = session.client("iam")
        role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17"}))
        function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:{STEP_FUNCTION}"
        definition = render().replace("${PipelineStepFunctionArn}", function_arn)
        sfn = session.client("stepfunctions")
        machine = sfn.create_state_machine(
            name="ragline-pipeline", definition=definition, roleArn=role["Role"]["Arn"], type=workflow_type
        )
        aws = AwsSettings(
            events_table=tables["EventsTable"],
            sessions_table=tables["SessionsTable"],
            messages_table=tables["MessagesTable"],
            state_table=tables["StateTable"],
            knowledge_table=tables["KnowledgeTable"],
            tenants_table=tables["TenantsTable"],
            idempotency_table=tables["IdempotencyTable"],
            state_bucket="ragline-state-test",
            state_machine_arn=machine["stateMachineArn"],
            workflow_type=workflow_type,
        )
        db = Database(data_dir / "knowledge.db")
        runtime = build_aws_runtime(
            aws,
            session=session,
            knowledge=SqliteKnowledgeStore(db),
            engine=EmbeddedEngine(db),
            models=models,
            start_guard=idempotent_start(aws, session),
        )
        stack = ServerlessStack(runtime=runtime, sfn=sfn, state_machine_arn=machine["stateMachineArn"], db=db)
        lock = threading.Lock()

        def invoke(
            self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
        ) -> bytes:
            event = json.loads(body or "{}")
            if not function_name.endswith(STEP_FUNCTION):
                raise AssertionError(f"unexpected function {function_name}")

            def run() -> dict[str, Any]:
                return run_step(StepInput.model_validate(event), runtime.step_deps())

            try:
                result = stack.intercept(event, run) if stack.intercept is not None else run()
            except Exception as exc:
                from moto.core.exceptions import JsonRESTError

                with lock:
                    stack.invocations.append(
                        Invocation(event.get("stage", ""), event.get("phase", ""), False, type(exc).__name__)
                    )
                if isinstance(exc, JsonRESTError):
                    raise
                # As Lambda reports an unhandled exception: the error type is what a Catch matches.
                response_headers["x-amz-function-error"] = "Unhandled"
                return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}).encode()
            with lock:
                stack.invocations.append(Invocation(event.get("stage", ""), event.get("phase", ""), True))
            return json.dumps(result).encode()

        original = LambdaSimpleBackend.invoke
        LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]
        try:
            yield stack
        finally:
            LambdaSimpleBackend.invoke = original  # type: ignore[method-assign]
            db.close()
