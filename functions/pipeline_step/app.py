"""pipeline_step: runs one stage of one turn (called by the Step Functions workflow)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from ragline.serverless.aws import AwsRuntime, build_aws_runtime
from ragline.serverless.step import StepInput, run_step

logger = Logger()
tracer = Tracer()


@lru_cache(maxsize=1)
def runtime() -> AwsRuntime:
    return build_aws_runtime()


@logger.inject_lambda_context(correlation_id_path="turn.assistant_message_id")
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    step = StepInput.model_validate(event)
    logger.append_keys(
        session_id=step.turn.session_id, message_id=step.turn.assistant_message_id, stage=step.stage, phase=step.phase
    )
    return run_step(step, deps=runtime().step_deps())
