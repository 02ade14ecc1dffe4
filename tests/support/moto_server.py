"""moto's server for the deployed-stack tests, in a process of its own: one AWS account every function's
sandbox and the test itself talk to over HTTP (``AWS_ENDPOINT_URL``).

    python tests/support/moto_server.py PORT LAMBDA_INVOKE_URL

Step Functions executes the workflows it is given (``execute_state_machine``); Lambda's Invoke is forwarded
to the tests' Lambda service at ``LAMBDA_INVOKE_URL`` (``lambdas.LambdaService``), which runs the function
in a sandbox and answers with its payload, its function error or a service error. The caller's access key
goes along: Step Functions' own calls are signed with moto's key ``ak``, each function's with its own.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import urllib.error
import urllib.request
from typing import Any


def main() -> None:
    port, invoke_url = int(sys.argv[1]), sys.argv[2]
    os.environ["MOTO_PORT"] = str(port)  # Step Functions' Lambda client calls this server

    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.core.exceptions import JsonRESTError
    from moto.core.models import default_user_config
    from moto.server import ThreadedMotoServer

    default_user_config["lambda"] = {"use_docker": False}
    default_user_config["stepfunctions"] = {"execute_state_machine": True}

    def invoke(
        self: Any, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
    ) -> bytes | None:
        self.get_function(function_name, qualifier)  # ResourceNotFoundException, as Lambda answers
        authorization = str(headers.get("Authorization", ""))
        caller = authorization.split("Credential=", 1)[-1].split("/", 1)[0] if "Credential=" in authorization else ""
        data = body if isinstance(body, bytes) else str(body or "").encode()
        request = urllib.request.Request(
            invoke_url,
            data=data,
            method="POST",
            headers={
                "X-Function": function_name,
                "X-Invocation-Type": str(headers.get("X-Amz-Invocation-Type", "RequestResponse")),
                "X-Caller": caller,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=3600) as reply:
                payload: bytes = reply.read()
                error = reply.headers.get("X-Function-Error")
        except urllib.error.HTTPError as failure:
            detail = json.loads(failure.read() or b"{}")
            raise JsonRESTError(detail.get("code", "ServiceException"), detail.get("message", "")) from None
        if error:
            response_headers["x-amz-function-error"] = error
        return payload

    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
