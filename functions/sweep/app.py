"""sweep: run by an EventBridge schedule, ends the turns whose workflow ended without a terminal event.

A reader no longer waits on them (stream_reader ends those it reads): without the sweep their messages
would stay ``is_completed: false`` and their logs open. A reader's runtime: no model, engine or secret.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from ragline.observability import TRACED_MODULES
from ragline.serverless.aws import build_aws_runtime
from ragline.serverless.sweep import Sweeper, build_sweeper

logger = Logger()
tracer = Tracer(patch_modules=TRACED_MODULES)


@lru_cache(maxsize=1)
def sweeper() -> Sweeper:
    return build_sweeper(build_aws_runtime(reader=True))


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = asyncio.run(sweeper().run())
    return report.summary()
