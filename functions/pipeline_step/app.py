"""pipeline_step: runs one stage of one turn (called by the Step Functions workflow)."""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from ragline.observability import TRACED_MODULES
from ragline.serverless.aws import AwsRuntime, build_aws_runtime
from ragline.serverless.step import Attempt, StepInput, run_step

logger = Logger()
tracer = Tracer(patch_modules=TRACED_MODULES)


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
    # A retry or a duplicate delivery of the same task is another attempt, with its own request id and deadline.
    attempt = Attempt(context.aws_request_id, time.time() + context.get_remaining_time_in_millis() / 1000)
    return run_step(step, deps=runtime().step_deps(), attempt=attempt)
