"""The Python runtime of a test sandbox: what the python3.12 Lambda image's bootstrap does, over the Runtime API.

Started by the tests' Lambda service in a process of its own, with the function's environment and nothing
else: ``LAMBDA_TASK_ROOT`` (the function's code directory) and the layer directory (``/opt/python``'s
stand-in) go first on ``sys.path``, ``_HANDLER`` (``app.lambda_handler``) is imported once (the INIT phase),
then invocations are pulled from ``AWS_LAMBDA_RUNTIME_API`` one at a time, as in Lambda:
``GET /2018-06-01/runtime/invocation/next``, then ``POST .../response`` or ``.../error``.

Stdlib only: the function's packages come from its layers, not from here.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import urllib.request
from typing import Any

API = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime"


class LambdaContext:
    """The context object handlers receive (the attributes Powertools and the code read)."""

    def __init__(self, request_id: str, deadline_ms: int, function_arn: str) -> None:
        self.aws_request_id = request_id
        self.invoked_function_arn = function_arn
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _post(path: str, body: bytes, headers: dict[str, str] | None = None) -> None:
    request = urllib.request.Request(API + path, data=body, method="POST", headers=headers or {})
    with urllib.request.urlopen(request) as reply:
        reply.read()


def _error(error: BaseException) -> bytes:
    return json.dumps(
        {
            "errorMessage": str(error),
            "errorType": type(error).__name__,
            "requestId": "",
            "stackTrace": traceback.format_tb(error.__traceback__),
        }
    ).encode()


def _load_handler() -> Any:
    sys.path[:0] = [os.environ["LAMBDA_TASK_ROOT"], *filter(None, os.environ.get("SANDBOX_LAYERS", "").split(":"))]
    module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, function_name)


def main() -> None:
    started = time.perf_counter()
    try:
        handler = _load_handler()
    except Exception as error:  # as Lambda: the init error is reported, the sandbox exits
        _post("/init/error", _error(error), {"Lambda-Runtime-Function-Error-Type": "Runtime.ImportModuleError"})
        raise SystemExit(1) from error
    print(f"INIT_DURATION_MS {1000 * (time.perf_counter() - started):.1f}", flush=True)
    while True:
        with urllib.request.urlopen(API + "/invocation/next") as reply:
            request_id = reply.headers["Lambda-Runtime-Aws-Request-Id"]
            deadline_ms = int(reply.headers["Lambda-Runtime-Deadline-Ms"])
            function_arn = reply.headers["Lambda-Runtime-Invoked-Function-Arn"]
            trace_id = reply.headers.get("Lambda-Runtime-Trace-Id")
            event = json.loads(reply.read() or b"{}")
        # As the Python runtime does: the invocation's trace header is where the X-Ray SDK reads its segment from.
        if trace_id:
            os.environ["_X_AMZN_TRACE_ID"] = trace_id
        else:
            os.environ.pop("_X_AMZN_TRACE_ID", None)
        context = LambdaContext(request_id, deadline_ms, function_arn)
        try:
            result = handler(event, context)
            body = json.dumps(result).encode()
        except Exception as error:
            traceback.print_exc()
            _post(f"/invocation/{request_id}/error", _error(error), {"Lambda-Runtime-Function-Error-Type": "Unhandled"})
            continue
        _post(f"/invocation/{request_id}/response", body)


if __name__ == "__main__":
    main()
