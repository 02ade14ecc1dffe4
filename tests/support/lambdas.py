"""A Lambda service for the tests: each function runs in sandboxes — processes of its own, started on
demand, one invocation at a time each, with exactly the function's environment.

Buffered functions (``pipeline_step``, ``ingest_turn``) run the sandbox bootstrap (``sandbox/bootstrap.py``),
which pulls invocations from a Runtime API this service hosts, as the Lambda Python runtime does. Web
functions (``stream_reader``) run their own ``run.sh`` — uvicorn on ``$PORT`` — and get requests as the
Lambda Web Adapter would pass them (see ``gateways.FunctionUrl``).

What Lambda does and the tests rely on: a sandbox is reused while warm; a second concurrent invocation gets
another sandbox (cold start); an invocation over the function's ``Timeout`` kills its sandbox and reports
``Sandbox.Timedout``; a sandbox that dies reports ``Runtime.ExitError``; an unhandled exception is a function
error (``Unhandled``) with ``errorType``; asynchronous invocations (``Event``) are queued and retried twice on
error. ``around`` lets a test wrap invocations (a transient Lambda failure after the step ran, for instance).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers import free_port
from tests.support.xray import XRayDaemon, trace_header

SANDBOX_DIR = Path(__file__).resolve().parent / "sandbox"
BOOTSTRAP = SANDBOX_DIR / "bootstrap.py"
# Sandboxes are Python processes on a shared, busy machine: starting one (imports, first model load) takes
# seconds here where Lambda's INIT takes hundreds of milliseconds. Not counted in the function's Timeout.
INIT_TIMEOUT_S = 120.0


@dataclass
class FunctionSpec:
    logical_id: str
    name: str
    arn: str
    environment: dict[str, str]
    code_dir: Path
    handler: str
    timeout_s: float
    memory_mb: int
    web: bool = False
    max_sandboxes: int = 4
    # Retries of an asynchronous invocation that failed (EventInvokeConfig's MaximumRetryAttempts; 2 by default).
    async_retries: int = 2
    # TracingConfig Mode Active: each invocation is sampled and the sandbox reaches an X-Ray daemon.
    tracing: bool = False


@dataclass
class Result:
    """What Invoke returns: the payload and, for a function error, its kind (``Unhandled``)."""

    payload: bytes
    function_error: str | None = None

    @property
    def error_type(self) -> str | None:
        if self.function_error is None:
            return None
        try:
            return str(json.loads(self.payload).get("errorType"))
        except (ValueError, AttributeError):
            return None

    def json(self) -> Any:
        return json.loads(self.payload)


@dataclass
class Invoked:
    """One invocation as the caller saw it: the function's result, or the service error it got instead."""

    function: str
    event: dict[str, Any]
    result: Result | None
    error: str | None = None
    # Billed duration's measure: from the invocation handed to a warm sandbox to its result (no INIT).
    ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class ServiceError(Exception):
    """A failure of the Lambda service itself (the caller sees ``Lambda.<code>``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Invocation:
    payload: bytes
    deadline: float
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    # The X-Ray trace header Lambda hands the runtime with each invocation (sampled when tracing is Active).
    trace_id: str = ""
    done: threading.Event = field(default_factory=threading.Event)
    result: Result | None = None

    def finish(self, result: Result) -> None:
        if not self.done.is_set():
            self.result = result
            self.done.set()


def _error_payload(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


class Sandbox:
    """One execution environment of one function."""

    _numbers = itertools.count(1)

    def __init__(self, service: LambdaService, spec: FunctionSpec) -> None:
        self.service = service
        self.spec = spec
        self.id = f"{spec.logical_id}-{next(self._numbers)}"
        self.inbox: queue.Queue[Invocation] = queue.Queue()
        self.ready = threading.Event()
        self.current: Invocation | None = None
        self.busy = False
        self.dead = False
        self.port = free_port() if spec.web else 0
        self.tmp = service.work_dir / "tmp" / self.id
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.log_path = service.work_dir / "logs" / f"{self.id}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.init_error: Result | None = None
        self.process = self._start()
        threading.Thread(target=self._watch, name=f"sandbox-{self.id}", daemon=True).start()

    def _environment(self) -> dict[str, str]:
        spec = self.spec
        env = {
            **spec.environment,
            # What the Lambda runtime sets in every sandbox.
            "AWS_LAMBDA_FUNCTION_NAME": spec.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{spec.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": self.id,
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{self.service.runtime_api_port}/c/{self.id}",
            "AWS_REGION": self.service.region,
            "AWS_DEFAULT_REGION": self.service.region,
            # The role's session credentials: one key per function, so the moto server can tell callers apart.
            "AWS_ACCESS_KEY_ID": f"ASIA{spec.logical_id.upper()[:16]}",
            "AWS_SECRET_ACCESS_KEY": "sandbox",
            "AWS_SESSION_TOKEN": "sandbox",
            "LAMBDA_TASK_ROOT": str(spec.code_dir),
            "LAMBDA_RUNTIME_DIR": str(SANDBOX_DIR),
            "_HANDLER": spec.handler,
            "TZ": ":UTC",
            "LANG": "en_US.UTF-8",
            "TMPDIR": str(self.tmp),
            "PATH": f"{Path(self.service.python).parent}:/usr/local/bin:/usr/bin:/bin",
            # The tests' own: AWS calls go to the moto server, every call is checked against the role, and the
            # layers are this directory (the /opt/python of Lambda).
            **self.service.sandbox_environment(spec),
        }
        if spec.tracing:
            env.update(self.service.xray.environment())
        if spec.web:
            env["PORT"] = str(self.port)  # each sandbox has its own network in Lambda; here, its own port
        return env

    def _start(self) -> subprocess.Popen[bytes]:
        log = self.log_path.open("ab")
        command = (
            ["sh", str(self.spec.code_dir / self.spec.handler)]
            if self.spec.web
            else [
                self.service.python,
                str(BOOTSTRAP),
            ]
        )
        return subprocess.Popen(
            command,
            cwd=self.spec.code_dir,
            env=self._environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _watch(self) -> None:
        code = self.process.wait()
        self.dead = True
        self.ready.set()  # nobody waits for a dead sandbox
        current = self.current
        if current is not None:
            marker = self.tmp / ".timed-out"
            if marker.exists():
                current.finish(self._timed_out(current))
            else:
                current.finish(
                    Result(
                        _error_payload(
                            "Runtime.ExitError",
                            f"RequestId: {current.request_id} Error: Runtime exited with error: exit status {code}",
                        ),
                        "Unhandled",
                    )
                )
        self.service.retire(self)

    def _timed_out(self, invocation: Invocation) -> Result:
        return Result(
            _error_payload(
                "Sandbox.Timedout",
                f"RequestId: {invocation.request_id} Error: Task timed out after {self.spec.timeout_s:.2f} seconds",
            ),
            "Unhandled",
        )

    def wait_ready(self) -> None:
        if self.spec.web:
            deadline = time.monotonic() + INIT_TIMEOUT_S
            path = self.spec.environment.get("AWS_LWA_READINESS_CHECK_PATH", "/")
            while time.monotonic() < deadline and not self.dead:
                try:
                    # The Web Adapter's readiness check: any answer below 500 on its path ("/" by default).
                    if httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=2).status_code < 500:
                        self.ready.set()
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
            raise RuntimeError(f"{self.id} did not start; log:\n{self.log_text()}")
        if not self.ready.wait(INIT_TIMEOUT_S) or (self.dead and self.init_error is None):
            raise RuntimeError(f"{self.id} did not start; log:\n{self.log_text()}")

    def invoke(self, payload: bytes) -> Result:
        if self.init_error is not None:
            return self.init_error
        invocation = Invocation(
            payload, deadline=time.time() + self.spec.timeout_s, trace_id=trace_header(self.spec.tracing)
        )
        self.current = invocation
        self.inbox.put(invocation)
        if not invocation.done.wait(self.spec.timeout_s):
            self.kill()
            invocation.finish(self._timed_out(invocation))
        self.current = None
        assert invocation.result is not None
        return invocation.result

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


Around = Callable[[dict[str, Any], Callable[[], Result]], Result]


class LambdaService:
    """The functions of one stack, their sandboxes and the Runtime API they pull invocations from."""

    def __init__(
        self,
        work_dir: Path,
        python: str,
        region: str,
        sandbox_environment: Callable[[FunctionSpec], dict[str, str]],
        async_retry_delays_s: tuple[float, ...] = (0.5, 1.0),
        invoke_denied: Callable[[str, FunctionSpec], str | None] = lambda caller, spec: None,
    ) -> None:
        self.work_dir = work_dir
        self.python = python
        self.region = region
        self.sandbox_environment = sandbox_environment
        self.async_retry_delays_s = async_retry_delays_s
        # (caller's access key, function) → why the caller may not invoke it, or None.
        self.invoke_denied = invoke_denied
        self.functions: dict[str, FunctionSpec] = {}
        self._sandboxes: dict[str, list[Sandbox]] = {}
        self._by_id: dict[str, Sandbox] = {}
        self._condition = threading.Condition()
        self._around: dict[str, Around] = {}
        self._async: list[threading.Thread] = []
        self.invocations: list[Invoked] = []
        # The daemon of the functions whose tracing is Active (Lambda runs one beside each of their sandboxes).
        self.xray = XRayDaemon()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _runtime_api_handler(self))
        self._server.daemon_threads = True
        self.runtime_api_port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="runtime-api", daemon=True).start()
        self.invoke_url = f"http://127.0.0.1:{self.runtime_api_port}/invoke"

    # --------------------------------------------------------------------------------------- functions
    def add(self, spec: FunctionSpec) -> None:
        self.functions[spec.name] = spec
        self._sandboxes[spec.name] = []

    def spec(self, name_or_arn: str) -> FunctionSpec:
        name = name_or_arn.split(":function:", 1)[-1].split(":", 1)[0]
        if name in self.functions:
            return self.functions[name]
        for spec in self.functions.values():
            if spec.logical_id == name:
                return spec
        raise ServiceError("ResourceNotFoundException", f"Function not found: {name_or_arn}")

    def around(self, logical_id: str, wrapper: Around | None) -> None:
        """Wrap every invocation of one function: ``wrapper(event, run)`` (None removes the wrapper)."""
        name = self.spec(logical_id).name
        if wrapper is None:
            self._around.pop(name, None)
        else:
            self._around[name] = wrapper

    # --------------------------------------------------------------------------------------- sandboxes
    def acquire(self, spec: FunctionSpec) -> Sandbox:
        """A warm idle sandbox, else a new one (cold start), else wait for one to be free."""
        with self._condition:
            while True:
                for sandbox in self._sandboxes[spec.name]:
                    if not sandbox.busy and not sandbox.dead:
                        sandbox.busy = True
                        break
                else:
                    if len(self._sandboxes[spec.name]) < spec.max_sandboxes:
                        sandbox = Sandbox(self, spec)
                        sandbox.busy = True
                        self._sandboxes[spec.name].append(sandbox)
                        self._by_id[sandbox.id] = sandbox
                    else:
                        self._condition.wait(1.0)
                        continue
                break
        try:
            sandbox.wait_ready()
        except BaseException:
            self.release(sandbox)
            sandbox.kill()
            raise
        return sandbox

    def release(self, sandbox: Sandbox) -> None:
        with self._condition:
            sandbox.busy = False
            self._condition.notify_all()

    def retire(self, sandbox: Sandbox) -> None:
        with self._condition:
            if sandbox in self._sandboxes.get(sandbox.spec.name, []):
                self._sandboxes[sandbox.spec.name].remove(sandbox)
            self._condition.notify_all()

    def sandboxes(self, logical_id: str) -> list[Sandbox]:
        return list(self._sandboxes[self.spec(logical_id).name])

    def recycle(self, logical_id: str) -> None:
        """Stop a function's sandboxes: the next invocation starts a fresh one (a new configuration)."""
        for sandbox in self.sandboxes(logical_id):
            sandbox.stop()
            self.retire(sandbox)

    def warm(self, logical_id: str) -> None:
        """Start one sandbox of a function ahead of its first invocation."""
        self.release(self.acquire(self.spec(logical_id)))

    def stop(self) -> None:
        for sandboxes in self._sandboxes.values():
            for sandbox in list(sandboxes):
                sandbox.stop()
        self._server.shutdown()
        self._server.server_close()
        self.xray.stop()

    # --------------------------------------------------------------------------------------- invoking
    def invoke(self, name_or_arn: str, payload: bytes) -> Result:
        """A synchronous invocation (RequestResponse)."""
        spec = self.spec(name_or_arn)
        if len(payload) > 6 * 1024 * 1024:
            raise ServiceError("RequestEntityTooLargeException", "Request must be smaller than 6291456 bytes")
        event = json.loads(payload or b"{}")
        durations: list[float] = []

        def run() -> Result:
            sandbox = self.acquire(spec)
            started = time.perf_counter()
            try:
                return sandbox.invoke(payload)
            finally:
                durations.append((time.perf_counter() - started) * 1000)
                self.release(sandbox)

        wrapper = self._around.get(spec.name)
        try:
            result = wrapper(event, run) if wrapper is not None else run()
        except ServiceError as error:
            self.record(Invoked(spec.logical_id, event, None, error.code, sum(durations)))
            raise
        self.record(Invoked(spec.logical_id, event, result, result.error_type, sum(durations)))
        return result

    def record(self, invoked: Invoked) -> None:
        """One invocation, as the caller saw it (a gateway records the ones it forwards to a web sandbox)."""
        with self._condition:
            self.invocations.append(invoked)

    def invoke_async(self, name_or_arn: str, payload: bytes) -> None:
        """An asynchronous invocation (Event): queued, run, retried twice on a function error."""
        spec = self.spec(name_or_arn)
        if len(payload) > 256 * 1024:
            raise ServiceError("RequestEntityTooLargeException", "Request must be smaller than 262144 bytes")

        def deliver() -> None:
            waits = self.async_retry_delays_s or (0.0,)
            delays = (0.0, *(waits[min(i, len(waits) - 1)] for i in range(spec.async_retries)))
            for delay in delays:
                time.sleep(delay)
                try:
                    result = self.invoke(spec.name, payload)
                except ServiceError:
                    continue
                if result.function_error is None:
                    return

        thread = threading.Thread(target=deliver, name=f"event-{spec.logical_id}", daemon=True)
        self._async.append(thread)
        thread.start()

    def drain(self, timeout: float = 60.0) -> None:
        """Wait until every asynchronous invocation so far has been delivered (with its retries)."""
        deadline = time.monotonic() + timeout
        for thread in list(self._async):
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                raise AssertionError("an asynchronous invocation is still running")

    # ------------------------------------------------------------------------------------ runtime API
    def _next(self, sandbox_id: str) -> Invocation:
        sandbox = self._by_id[sandbox_id]
        sandbox.ready.set()
        return sandbox.inbox.get()

    def _complete(self, sandbox_id: str, request_id: str, body: bytes, error_type: str | None) -> None:
        sandbox = self._by_id[sandbox_id]
        current = sandbox.current
        if current is not None and current.request_id == request_id:
            current.finish(Result(body, error_type))

    def _init_error(self, sandbox_id: str, body: bytes) -> None:
        sandbox = self._by_id[sandbox_id]
        sandbox.init_error = Result(body, "Unhandled")
        sandbox.ready.set()


def _runtime_api_handler(service: LambdaService) -> type[BaseHTTPRequestHandler]:
    prefix = "/2018-06-01/runtime"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _route(self) -> tuple[str, str]:
            _, _, sandbox_id, rest = self.path.split("/", 3)
            return sandbox_id, "/" + rest.removeprefix(prefix.lstrip("/")).lstrip("/")

        def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            sandbox_id, path = self._route()
            if path != "/invocation/next":
                self._reply(404)
                return
            invocation = service._next(sandbox_id)
            spec = service._by_id[sandbox_id].spec
            self._reply(
                200,
                invocation.payload,
                {
                    "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                    "Lambda-Runtime-Deadline-Ms": str(int(invocation.deadline * 1000)),
                    "Lambda-Runtime-Invoked-Function-Arn": spec.arn,
                    "Lambda-Runtime-Trace-Id": invocation.trace_id,
                    "Content-Type": "application/json",
                },
            )

        def do_POST(self) -> None:
            if self.path == "/invoke":
                self._invoke()
                return
            sandbox_id, path = self._route()
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            parts = path.strip("/").split("/")
            if parts[:1] == ["init"]:
                service._init_error(sandbox_id, body)
            elif len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                error = self.headers.get("Lambda-Runtime-Function-Error-Type") if parts[2] == "error" else None
                service._complete(sandbox_id, parts[1], body, "Unhandled" if error else None)
            else:
                self._reply(404)
                return
            self._reply(202)

        def _invoke(self) -> None:
            """Lambda's Invoke, forwarded by the moto server (``moto_server.py``)."""
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            function = self.headers["X-Function"]
            try:
                spec = service.spec(function)
                denied = service.invoke_denied(self.headers.get("X-Caller", ""), spec)
                if denied:
                    raise ServiceError("AccessDeniedException", denied)
                if self.headers.get("X-Invocation-Type") == "Event":
                    service.invoke_async(function, body)
                    self._reply(202)
                    return
                result = service.invoke(function, body)
            except ServiceError as error:
                status = 403 if error.code == "AccessDeniedException" else 500
                self._reply(status, json.dumps({"code": error.code, "message": str(error)}).encode())
                return
            headers = {"X-Function-Error": result.function_error} if result.function_error else {}
            self._reply(200, result.payload, headers)

    return Handler
