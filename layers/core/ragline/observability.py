"""Structured logs and one trace span per stage.

Logs are JSON through Powertools' formatter with ``session_id``, ``message_id`` and ``stage`` keys.
Spans use the Powertools Tracer (X-Ray) in Lambda and a timed debug log elsewhere.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

_configured = False

# What the X-Ray SDK patches to trace (the Powertools Tracer patches every module it knows by default). Not httpx:
# the SDK keeps its open subsegments per thread (Lambda's context is not a contextvar), so two model calls awaited
# at once on one event loop close each other's subsegment and the second raises AlreadyEndedException — the
# indexing function's question generation failed so while the summary was being written. botocore calls are
# synchronous (on the loop, or a thread of their own), so their subsegments never interleave.
TRACED_MODULES = ("botocore",)


def configure_logging(level: str = "INFO") -> None:
    """JSON logs on stderr for the whole ``ragline`` logger tree (idempotent)."""
    global _configured
    if _configured:
        return
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(LambdaPowertoolsFormatter(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "ragline")))
    root = logging.getLogger("ragline")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    _configured = True


@lru_cache(maxsize=1)
def _tracer() -> Any | None:
    """The process's one Powertools Tracer (None outside Lambda or with tracing off), built at the first span."""
    if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in {"1", "true"}:
        return None
    if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
        return None
    try:
        from aws_lambda_powertools import Tracer

        return Tracer(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "ragline"), patch_modules=TRACED_MODULES)
    except Exception:  # aws-xray-sdk missing: tracing is optional
        return None


@contextmanager
def stage_span(stage: str, logger: logging.Logger, **keys: str) -> Iterator[None]:
    """One span per stage; the stage name is the span name and the log key."""
    tracer = _tracer()
    started = time.perf_counter()
    extra = {"stage": stage, **keys}
    try:
        if tracer is not None:
            with tracer.provider.in_subsegment(f"pipeline.{stage}") as subsegment:
                for key, value in keys.items():
                    subsegment.put_annotation(key=key, value=value)
                yield
        else:
            yield
    finally:
        logger.debug("stage finished", extra={**extra, "duration_ms": round((time.perf_counter() - started) * 1000, 2)})


def failed_call(exc: BaseException) -> dict[str, str]:
    """Log keys naming what failed: an AWS call's operation and error code (botocore's ClientError), else the type.

    Read by duck typing, so the library's lower tiers need not import botocore.
    """
    response = getattr(exc, "response", None)
    operation = getattr(exc, "operation_name", None)
    if isinstance(response, dict) and operation:
        return {"operation": str(operation), "error_code": str(response.get("Error", {}).get("Code", ""))}
    return {"error_type": type(exc).__name__}
