"""ingest_turn: the buffered JSON routes (accept a question, knowledge bases, sessions) behind HTTP API.

The same FastAPI application as the embedded server; the launcher starts a workflow execution instead
of a task. Starting is idempotent on the request id (Powertools idempotency on DynamoDB).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from mangum import Mangum

from ragline.observability import TRACED_MODULES
from ragline.serverless.aws import build_aws_runtime, idempotent_start
from ragline.serverless.settings import AwsSettings

logger = Logger()
tracer = Tracer(patch_modules=TRACED_MODULES)
metrics = Metrics(namespace="ragline")


@lru_cache(maxsize=1)
def asgi_handler() -> tuple[Mangum, Any]:
    aws = AwsSettings()
    guard = idempotent_start(aws)
    runtime = build_aws_runtime(aws, start_guard=guard)
    return Mangum(runtime.app(), lifespan="off"), guard.config  # type: ignore[attr-defined]


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    metrics.add_metric(name="Requests", unit="Count", value=1)
    mangum, idempotency = asgi_handler()
    idempotency.register_lambda_context(context)
    response: dict[str, Any] = mangum(event, context)
    return response
