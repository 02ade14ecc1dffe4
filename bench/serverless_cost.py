"""What one RAG turn costs on the serverless runtime: writes, invocations, transitions, and dollars.

Run from the repository root::

    .venv/bin/python bench/serverless_cost.py [--turns 5] [--tokens 300] [--token-delay-ms 10]

What runs where (one process):

* the model: ``tests/support/scripted_model.py`` behind uvicorn, streaming an answer of ``--tokens`` word
  pieces (one piece per chunk, ``--token-delay-ms`` apart) plus a citation;
* the workflow: ``tests/support/serverless.py`` — moto executes the real generated state machine
  (``statemachine/pipeline.asl.json``), its Lambda tasks run the real ``pipeline_step`` code in-process, and
  DynamoDB, S3 and Step Functions are moto's;
* the API: the AWS runtime's FastAPI app (ingest_turn and stream_reader routes) behind uvicorn; a real SSE
  client (httpx + httpx-sse) asks each question and follows the turn to its ``complete`` frame.

For each workflow type (STANDARD, EXPRESS) the script asks one warm-up question in a new session, then
``--turns`` measured turns with the configured batching (``config.stream.batch_max_delay_ms``) alternating
with ``--turns`` turns with batching off (``batch_max_delay_ms = 0``: one log write per answer token, the
counterfactual), all in that session. Per turn it counts:

* event-log items (the turn's stream key in the events table) and state transitions (``*StateEntered``
  events of the execution history: what STANDARD bills);
* Lambda invocations and their wall time: pipeline_step (timed around each dispatched task), ingest_turn
  (the POST) and stream_reader (the SSE response, which a streaming function URL bills for its whole length);
* every DynamoDB, S3 and Step Functions call of the runtime, through botocore ``before-call``/``after-call``
  hooks installed in ``botocore.handlers.BUILTIN_HANDLERS`` (so every client the runtime creates has them):
  write request units (1 KB per unit, 2 per KB in a transaction; an UpdateItem by the stored item's size)
  and read request units (4 KB per unit, half for eventually consistent reads) from the request and
  response bodies.

Then append → client latency on the moto-server path: a ThreadedMotoServer on 127.0.0.1, the AWS app behind
uvicorn against it, a writer thread appending timestamped events, a real SSE client (as in
``tests/integration/test_stream_reader.py``).

Prints a compact table and a Markdown table; writes the Markdown to ``bench/results/serverless_cost.md``
and the raw per-turn figures to ``bench/results/serverless_cost.json``. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import contextvars
import json
import logging
import math
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.support, as pytest's pythonpath = ["."] gives it

from bench.stats import percentile  # noqa: E402

RESULTS_DIR = ROOT / "bench" / "results"
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"

# Public prices, us-east-1, on-demand, no free tier. Checked 2026-11 against the AWS pricing pages
# (aws.amazon.com/{step-functions,lambda,dynamodb,s3,api-gateway,cloudwatch}/pricing) and summaries dated up
# to 2026-03; AWS may have changed them since.
PRICE_SOURCE = "us-east-1 public on-demand prices, checked 2026-11 (no free tier, no savings plans)"
SFN_STANDARD_PER_TRANSITION = 25.00 / 1e6  # $25 per million state transitions
SFN_EXPRESS_PER_REQUEST = 1.00 / 1e6  # $1.00 per million requests
SFN_EXPRESS_PER_GB_S = 0.00001667  # first tier; duration rounded up to 100 ms, memory in 64 MB chunks
SFN_EXPRESS_MEMORY_MB = 64  # a small definition with pointer-sized payloads stays in the first 64 MB chunk
LAMBDA_PER_REQUEST = 0.20 / 1e6
LAMBDA_ARM_PER_GB_S = 0.0000133334  # arm64, first 7.5 billion GB-s per month; billed per 1 ms
LAMBDA_X86_PER_GB_S = 0.0000166667
# DynamoDB on-demand: halved on 2024-11-01 (before: $1.25 and $0.25 per million).
DDB_PER_WRU = 0.625 / 1e6
DDB_PER_RRU = 0.125 / 1e6
S3_PER_PUT = 0.005 / 1000
S3_PER_GET = 0.0004 / 1000
HTTP_API_PER_REQUEST = 1.00 / 1e6  # the POST that asks goes through the HTTP API; SSE uses the function URL
CLOUDWATCH_LOGS_PER_GB = 0.50  # ingestion; EXPRESS logs every state event with its data (template: ALL)

FUNCTIONS = {
    "ingest_turn": "IngestTurnFunction",
    "pipeline_step": "PipelineStepFunction",
    "stream_reader": "StreamReaderFunction",
}

DOCS = {
    "Coffee brewing": (
        "# Coffee brewing\n\n## Water\n\nBrew coffee with water between 90 and 96 degrees Celsius. "
        "Boiling water extracts bitter compounds.\n\n## Grind\n\nEspresso needs a fine grind; a French press "
        "needs a coarse one.\n\n## Ratio\n\nUse about 60 grams of coffee per litre of water."
    ),
    "Tea basics": (
        "# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius for two to three minutes. Black tea takes "
        "boiling water and three to five minutes. Oolong sits in between, at 85 to 95 degrees."
    ),
    "Storing beans": (
        "# Storing coffee beans\n\nKeep beans in an airtight container away from light, heat and moisture. "
        "Whole beans keep their aroma for about a month after roasting; ground coffee for a few days."
    ),
    "Milk": (
        "# Steaming milk\n\nSteam milk to 60 to 65 degrees Celsius. Above 70 degrees the proteins denature "
        "and the milk tastes flat. Whole milk makes the most stable microfoam."
    ),
}
QUESTIONS = [
    "What water temperature should I use for coffee?",
    "How long should green tea steep?",
    "How should I store coffee beans?",
    "How hot should steamed milk be?",
    "How much coffee per litre of water?",
    "What grind does espresso need?",
]
ANSWER_TEXT = (
    "brew the coffee with water just off the boil between ninety and ninety six degrees so that the grounds "
    "extract evenly without the bitter compounds that boiling water pulls out and keep the ratio near sixty "
    "grams per litre adjusting the grind finer for espresso and coarser for a french press"
)

# Which function an AWS call belongs to: set by the ASGI wrapper (ingest_turn, stream_reader), around each
# dispatched Lambda task (pipeline_step) and for the benchmark's own bookkeeping (bench, not counted).
# asyncio.to_thread and new tasks copy the context, so the runtime's calls inherit it.
COMPONENT: contextvars.ContextVar[str] = contextvars.ContextVar("bench_component", default="unattributed")


# Counting AWS calls ---------------------------------------------------------------------------------------


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def value_size(value: dict[str, Any]) -> int:
    """The DynamoDB size of one typed attribute value (``{"S": "..."}``), as the service bills it."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "N":
        return _number_size(inner)
    if kind == "B":
        return len(base64.b64decode(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in inner)
    if kind == "NS":
        return sum(_number_size(n) for n in inner)
    if kind == "BS":
        return sum(len(base64.b64decode(b)) for b in inner)
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + value_size(v) + 1 for k, v in inner.items())
    return 0


def item_size(item: dict[str, Any] | None) -> int:
    return sum(len(name.encode("utf-8")) + value_size(v) for name, v in (item or {}).items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


def stored_item_size(table: str, key: dict[str, Any]) -> int | None:
    """The size of an item as moto holds it now (UpdateItem bills the larger of before/after: after here)."""
    try:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        item = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].get_item(table, key)
    except Exception:
        return None
    return None if item is None else int(item.size())


@dataclass
class AwsCall:
    component: str
    service: str
    operation: str
    table: str = ""
    wru: float = 0.0
    rru: float = 0.0
    status: int = 200
    size: int = 0  # bytes of the item a PutItem wrote


@dataclass
class Invocation:
    function: str  # ingest_turn | pipeline_step | stream_reader
    name: str  # stage:phase, or the HTTP route
    ms: float
    ok: bool = True


class Meter:
    """Every DynamoDB, S3 and Step Functions call made by clients created while installed, and Lambda time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[AwsCall] = []
        self.invocations: list[Invocation] = []
        self._handlers = [
            ("before-call.dynamodb", self._before),
            ("after-call.dynamodb", self._after),
            ("after-call.s3", self._after),
            ("after-call.sfn", self._after),
        ]

    def install(self) -> None:
        from botocore.handlers import BUILTIN_HANDLERS

        BUILTIN_HANDLERS.extend(self._handlers)

    def uninstall(self) -> None:
        from botocore.handlers import BUILTIN_HANDLERS

        for handler in self._handlers:
            if handler in BUILTIN_HANDLERS:
                BUILTIN_HANDLERS.remove(handler)

    def mark(self) -> tuple[int, int]:
        with self._lock:
            return len(self.calls), len(self.invocations)

    def since(self, mark: tuple[int, int]) -> tuple[list[AwsCall], list[Invocation]]:
        with self._lock:
            calls = [c for c in self.calls[mark[0] :] if c.component != "bench"]
            return calls, list(self.invocations[mark[1] :])

    def record(self, invocation: Invocation) -> None:
        with self._lock:
            self.invocations.append(invocation)

    def _before(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["bench_request"] = params.get("body") or b""

    def _after(self, http_response: Any, model: Any, context: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_name
        call = AwsCall(COMPONENT.get(), service, model.name, status=int(getattr(http_response, "status_code", 0)))
        if service == "dynamodb":
            try:
                self._dynamodb_units(call, context.get("bench_request", b""), http_response.content)
            except Exception as exc:  # a miscount must not break the run; the turn reports it as a problem
                call.table = f"(uncounted: {type(exc).__name__})"
        with self._lock:
            self.calls.append(call)

    @staticmethod
    def _dynamodb_units(call: AwsCall, raw_request: bytes | str, raw_response: bytes) -> None:
        request = json.loads(raw_request or b"{}")
        response = json.loads(raw_response or b"{}")
        op = call.operation
        call.table = str(request.get("TableName", ""))
        consistent = bool(request.get("ConsistentRead"))
        if op == "PutItem":
            call.size = item_size(request["Item"])
            call.wru = write_units(call.size)
        elif op in ("UpdateItem", "DeleteItem"):
            size = stored_item_size(call.table, request["Key"]) if op == "UpdateItem" else None
            call.wru = write_units(size if size is not None else item_size(request["Key"]))
        elif op == "TransactWriteItems":
            tables = set()
            for entry in request.get("TransactItems", []):
                ((kind, body),) = entry.items()
                tables.add(body["TableName"])
                if kind == "Put":
                    size = item_size(body["Item"])
                else:
                    size = stored_item_size(body["TableName"], body["Key"]) or item_size(body["Key"])
                call.wru += 2 * write_units(size)
            call.table = ",".join(sorted(tables))
        elif op == "BatchWriteItem":
            tables = set()
            for table, requests in request.get("RequestItems", {}).items():
                tables.add(table)
                for entry in requests:
                    put = entry.get("PutRequest")
                    call.wru += write_units(item_size(put["Item"])) if put else 1
            call.table = ",".join(sorted(tables))
        elif op == "GetItem":
            call.rru = read_units(item_size(response.get("Item")), consistent)
        elif op in ("Query", "Scan"):
            call.rru = read_units(sum(item_size(i) for i in response.get("Items", [])), consistent)
        elif op == "BatchGetItem":
            tables = set()
            for table, items in response.get("Responses", {}).items():
                tables.add(table)
                table_consistent = bool(request.get("RequestItems", {}).get(table, {}).get("ConsistentRead"))
                call.rru += sum(read_units(item_size(i), table_consistent) for i in items)
            call.table = ",".join(sorted(tables))
        elif op == "TransactGetItems":
            call.rru = sum(2 * read_units(item_size(r.get("Item")), True) for r in response.get("Responses", []))


@contextmanager
def component(name: str) -> Iterator[None]:
    token = COMPONENT.set(name)
    try:
        yield
    finally:
        COMPONENT.reset(token)


def labelled(app: Any, meter: Meter) -> Callable[..., Any]:
    """The AWS app as the two functions that serve it: ``/events`` is stream_reader, the rest ingest_turn."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        function = "stream_reader" if scope["path"].endswith("/events") else "ingest_turn"
        token = COMPONENT.set(function)
        started = time.perf_counter()
        try:
            await app(scope, receive, send)
        finally:
            COMPONENT.reset(token)
            meter.record(
                Invocation(function, f"{scope['method']} {scope['path']}", (time.perf_counter() - started) * 1000)
            )

    return wrapped


def timed_steps(meter: Meter) -> Callable[[dict[str, Any], Callable[[], dict[str, Any]]], dict[str, Any]]:
    """``ServerlessStack.intercept``: times each dispatched pipeline_step task, attributes its AWS calls."""

    def intercept(event: dict[str, Any], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        name = f"{event.get('stage', '')}:{event.get('phase', '')}"
        started = time.perf_counter()
        ok = False
        try:
            with component("pipeline_step"):
                result = run()
            ok = True
            return result
        finally:
            meter.record(Invocation("pipeline_step", name, (time.perf_counter() - started) * 1000, ok))

    return intercept


# One turn -------------------------------------------------------------------------------------------------


@dataclass
class Turn:
    workflow: str
    mode: str  # batched | per-token
    answer_pieces: int
    log_events: int
    answer_events: int
    transitions: int
    execution_s: float
    history_bytes: int
    client_s: float
    first_answer_s: float | None
    invocations: dict[str, int]
    gb_s: dict[str, float]
    steps: list[tuple[str, float]]
    wru: float
    rru: float
    wru_by_table: dict[str, float]
    rru_by_function: dict[str, float]
    event_log_puts: int
    state_puts: int
    state_put_bytes: int
    ddb_requests: int
    s3_puts: int
    s3_gets: int
    start_executions: int
    entered: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def answer_pieces(count: int) -> list[str]:
    words = ANSWER_TEXT.split()
    pieces = [f"{words[i % len(words)]} " for i in range(count)]
    pieces.insert(min(40, count), '<ref id="c1"/> ')
    return pieces


def run_turn(
    stack: Any,
    client: Any,
    meter: Meter,
    scripted: Any,
    session_id: str,
    question: str,
    pieces: list[str],
    delay_s: float,
    memory_mb: dict[str, int],
    mode: str,
) -> Turn:
    from httpx_sse import connect_sse

    from ragline.stream.base import stream_key
    from tests.support.scripted_model import Script
    from tests.support.sse import Frame

    scripted.queue(Script.answer(*pieces, delay=delay_s))
    model_requests = len(scripted.received)
    mark = meter.mark()
    first_invocation = len(stack.invocations)
    started = time.perf_counter()
    reply = client.post(f"/api/v1/sessions/{session_id}/questions", json={"query": question})
    if reply.status_code != 202:
        raise RuntimeError(f"ask: {reply.status_code} {reply.text}")
    ids = reply.json()["data"]
    first_answer: float | None = None
    frames = []
    # The client of tests/support/sse.read_frames, with the first answer frame timed.
    with connect_sse(client, "GET", ids["stream_url"]) as source:
        source.response.raise_for_status()
        for event in source.iter_sse():
            frame = Frame(int(event.id), json.loads(event.data))
            if first_answer is None and frame.type == "answer" and frame.content:
                first_answer = time.perf_counter() - started
            frames.append(frame)
    client_s = time.perf_counter() - started

    key = stream_key(session_id, ids["assistant_message_id"])
    arn = stack.runtime.state.execution(key)
    deadline = time.monotonic() + 60
    while True:
        execution = stack.sfn.describe_execution(executionArn=arn)
        if execution["status"] != "RUNNING" or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    # The SSE response is recorded when uvicorn finishes it, a moment after the client's last frame.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        _, invocations = meter.since(mark)
        if Counter(i.function for i in invocations)["stream_reader"] >= 1:
            break
        time.sleep(0.02)
    history = stack.history(arn)
    events = stack.runtime.log.events_sync(key)
    calls, invocations = meter.since(mark)

    problems = []
    # One streamed answer per turn; query understanding (and a first turn's title) ask the model too.
    requests = [r for r in scripted.received[model_requests:] if r in scripted.answers]
    if len(requests) != 1 or not requests[0].completed or not requests[0].body.get("stream"):
        problems.append(f"{len(requests)} answer requests (expected one streamed completion)")
    if execution["status"] != "SUCCEEDED":
        problems.append(f"execution {execution['status']}")
    if not frames or frames[-1].type != "complete":
        problems.append(f"last frame {frames[-1].type if frames else None}")
    if not any(f.type == "answer" and f.content for f in frames):
        problems.append("no answer text")
    uncounted = [f"{c.operation} {c.table}" for c in calls if c.table.startswith("(uncounted")]
    if uncounted:
        problems.append(f"DynamoDB calls not counted: {uncounted}")
    if not all(i.ok for i in stack.invocations[first_invocation:]):
        problems.append("a pipeline_step invocation failed")

    gb_s: dict[str, float] = {}
    for inv in invocations:
        gb_s[inv.function] = gb_s.get(inv.function, 0.0) + math.ceil(inv.ms) / 1000 * memory_mb[inv.function] / 1024
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]
    dynamo = [c for c in calls if c.service == "dynamodb"]
    wru_by_table: dict[str, float] = {}
    rru_by_function: dict[str, float] = {}
    for c in dynamo:
        if c.wru:
            wru_by_table[c.table] = wru_by_table.get(c.table, 0.0) + c.wru
        if c.rru:
            rru_by_function[c.component] = rru_by_function.get(c.component, 0.0) + c.rru
    events_table = stack.runtime.aws.events_table
    state_puts = [c for c in dynamo if c.operation == "PutItem" and c.table == stack.runtime.aws.state_table]
    return Turn(
        workflow=stack.runtime.aws.workflow_type,
        mode=mode,
        answer_pieces=len(pieces),
        log_events=len(events),
        answer_events=sum(1 for e in events if e.type.value == "answer"),
        transitions=len(entered),
        execution_s=(execution["stopDate"] - execution["startDate"]).total_seconds()
        if "stopDate" in execution
        else 0.0,
        history_bytes=len(json.dumps(history, default=str).encode()),
        client_s=client_s,
        first_answer_s=first_answer,
        invocations=dict(Counter(i.function for i in invocations)),
        gb_s=gb_s,
        steps=[(i.name, i.ms) for i in invocations if i.function == "pipeline_step"],
        wru=sum(c.wru for c in dynamo),
        rru=sum(c.rru for c in dynamo),
        wru_by_table=wru_by_table,
        rru_by_function=rru_by_function,
        event_log_puts=sum(1 for c in dynamo if c.operation == "PutItem" and c.table == events_table),
        state_puts=len(state_puts),
        state_put_bytes=sum(c.size for c in state_puts),
        ddb_requests=len(dynamo),
        s3_puts=sum(1 for c in calls if c.service == "s3" and c.operation == "PutObject"),
        s3_gets=sum(1 for c in calls if c.service == "s3" and c.operation == "GetObject"),
        start_executions=sum(1 for c in calls if c.service == "stepfunctions" and c.operation == "StartExecution"),
        entered=entered,
        problems=problems,
    )


def run_workflow(
    workflow: str, models: Any, scripted: Any, meter: Meter, args: argparse.Namespace, memory_mb: dict[str, int]
) -> tuple[list[Turn], dict[str, Any]]:
    import httpx

    from tests.support.serverless_inprocess import serverless_stack
    from tests.support.servers import ServerThread

    turns: list[Turn] = []
    info: dict[str, Any] = {}
    pieces = answer_pieces(args.tokens)
    delay_s = args.token_delay_ms / 1000
    with tempfile.TemporaryDirectory() as tmp, serverless_stack(Path(tmp), models, workflow_type=workflow) as stack:
        stack.intercept = timed_steps(meter)
        server = ServerThread(labelled(stack.runtime.app(), meter)).start()
        try:
            _, key = stack.create_tenant("bench")
            with httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=120) as client:
                reply = client.post("/api/v1/knowledge-bases", json={"name": "drinks"})
                reply.raise_for_status()
                kb_id = reply.json()["data"]["id"]
                for title, content in DOCS.items():
                    client.post(
                        f"/api/v1/knowledge-bases/{kb_id}/documents", json={"title": title, "content": content}
                    ).raise_for_status()
                reply = client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb_id]})
                reply.raise_for_status()
                session_id = reply.json()["data"]["id"]
                machine = stack.sfn.describe_state_machine(stateMachineArn=stack.state_machine_arn)
                info["machine_type"] = machine["type"]
                stream = stack.container.config.stream
                batch_ms = stream.batch_max_delay_ms
                info["batch_max_delay_ms"], info["batch_max_chars"] = batch_ms, stream.batch_max_chars
                info["poll"] = (stream.poll_min_wait_s, stream.poll_max_wait_s)
                started = time.perf_counter()
                warm = run_turn(
                    stack, client, meter, scripted, session_id, QUESTIONS[0], pieces, delay_s, memory_mb, "warm-up"
                )
                info["warmup_s"] = time.perf_counter() - started
                info["warmup_problems"] = warm.problems
                # Batched and per-token turns alternate, so both see the same conversation history (it enters
                # every state save, up to conversation.max_rounds).
                for number in range(2 * args.turns):
                    mode, delay_ms = ("batched", batch_ms) if number % 2 == 0 else ("per-token", 0)
                    stream.batch_max_delay_ms = delay_ms
                    question = QUESTIONS[(number // 2 + 1) % len(QUESTIONS)]
                    turn = run_turn(
                        stack, client, meter, scripted, session_id, question, pieces, delay_s, memory_mb, mode
                    )
                    turns.append(turn)
                    print(
                        f"  {workflow:<8} {mode:<9} log {turn.log_events:>3} events, {turn.transitions} transitions, "
                        f"{sum(turn.invocations.values())} invocations, {turn.wru:.0f} WRU / {turn.rru:.1f} RRU, "
                        f"turn {turn.client_s:.2f} s" + (f"  PROBLEMS: {turn.problems}" if turn.problems else ""),
                        flush=True,
                    )
                stream.batch_max_delay_ms = batch_ms
        finally:
            server.stop()
    return turns, info


# Append → client latency on the moto-server path ----------------------------------------------------------


@dataclass
class Latency:
    label: str
    events: int
    spacing_ms: float
    latencies_ms: list[float]
    put_ms: list[float]


def measure_latency(models: Any, meter: Meter, scenarios: list[tuple[str, int, float]]) -> list[Latency]:
    import boto3
    import httpx
    from httpx_sse import connect_sse
    from moto.server import ThreadedMotoServer

    from ragline.retrieval.embedded import EmbeddedEngine
    from ragline.serverless.aws import build_aws_runtime
    from ragline.serverless.settings import AwsSettings
    from ragline.store.db import Database
    from ragline.store.knowledge import SqliteKnowledgeStore
    from ragline.stream.base import stream_key
    from ragline.types import ResponseType, StreamEvent
    from tests.support.aws import create_tables_from_template
    from tests.support.servers import ServerThread, free_port

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the moto server's access log
    port = free_port()
    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto_server.start()
    endpoint = f"http://127.0.0.1:{port}"
    results: list[Latency] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            session = boto3.Session(region_name=REGION)
            tables = create_tables_from_template(session.client("dynamodb", endpoint_url=endpoint))
            aws = AwsSettings(
                events_table=tables["EventsTable"],
                sessions_table=tables["SessionsTable"],
                messages_table=tables["MessagesTable"],
                state_table=tables["StateTable"],
                tenants_table=tables["TenantsTable"],
                aws_endpoint_url=endpoint,
                stream_max_seconds=300,
            )
            db = Database(Path(tmp) / "k.db")
            runtime = build_aws_runtime(
                aws, session=session, knowledge=SqliteKnowledgeStore(db), engine=EmbeddedEngine(db), models=models
            )
            app_server = ServerThread(labelled(runtime.app(), meter)).start()
            try:
                container = runtime.container
                tenant, api_key = container.tenants.create("bench")
                for label, count, spacing_s in scenarios:
                    chat = container.sessions.create_session(tenant.id, [])
                    _, assistant = container.sessions.create_turn(chat, f"req-{label}", "How does it work?")
                    key = stream_key(chat.id, assistant.id)
                    url = f"/api/v1/sessions/{chat.id}/messages/{assistant.id}/events"
                    received: list[tuple[int, dict[str, Any]]] = []
                    first = threading.Event()

                    def follow(
                        url: str = url,
                        received: list[tuple[int, dict[str, Any]]] = received,
                        first: threading.Event = first,
                    ) -> None:
                        with (
                            httpx.Client(base_url=app_server.url, headers={"X-API-Key": api_key}, timeout=120) as c,
                            connect_sse(c, "GET", url) as source,
                        ):
                            for event in source.iter_sse():
                                received.append((time.monotonic_ns(), json.loads(event.data)))
                                first.set()
                                if received[-1][1]["response_type"] == "complete":
                                    return

                    reader = threading.Thread(target=follow, name=f"sse-{label}", daemon=True)
                    runtime.log.append_sync(
                        key, StreamEvent(id="req", type=ResponseType.AGENT_QUERY, content="q", done=True)
                    )
                    reader.start()
                    if not first.wait(30):
                        raise RuntimeError("the SSE reader received nothing")
                    put_ms: list[float] = []

                    def write(
                        key: str = key, count: int = count, spacing_s: float = spacing_s, put_ms: list[float] = put_ms
                    ) -> None:
                        for i in range(count):
                            time.sleep(spacing_s)
                            sent = time.monotonic_ns()
                            event = StreamEvent(
                                id=f"lat-{i}",
                                type=ResponseType.ANSWER,
                                content=f"chunk {i} of the answer. ",
                                done=True,  # distinct done answers: replay coalescing never joins two
                                data={"t_send_ns": sent},
                            )
                            runtime.log.append_sync(key, event)
                            put_ms.append((time.monotonic_ns() - sent) / 1e6)
                        runtime.log.append_sync(key, StreamEvent(id="end", type=ResponseType.COMPLETE, done=True))

                    writer = threading.Thread(target=write, name=f"writer-{label}", daemon=True)
                    with component("bench"):
                        writer.start()
                        writer.join(timeout=count * spacing_s * 5 + 60)
                    reader.join(timeout=60)
                    latencies = [
                        (recv - data["data"]["t_send_ns"]) / 1e6
                        for recv, data in received
                        if isinstance(data.get("data"), dict) and "t_send_ns" in data["data"]
                    ]
                    results.append(Latency(label, count, spacing_s * 1000, latencies, put_ms))
            finally:
                app_server.stop()
                db.close()
    finally:
        with contextlib.suppress(Exception):
            httpx.post(f"{endpoint}/moto-api/reset", timeout=10)
        moto_server.stop()
    return results


# Cost -----------------------------------------------------------------------------------------------------


def function_settings() -> dict[str, tuple[int, str]]:
    """(MemorySize MB, architecture) per function, from template.yaml (the function's own, else Globals)."""
    from ragline.serverless.template_tables import load_template

    template = load_template(TEMPLATE)
    globals_ = template.get("Globals", {}).get("Function", {})
    settings = {}
    for name, logical_id in FUNCTIONS.items():
        props = template["Resources"][logical_id].get("Properties", {})
        memory = int(props.get("MemorySize", globals_.get("MemorySize", 128)))
        arch = (props.get("Architectures") or globals_.get("Architectures") or ["x86_64"])[0]
        settings[name] = (memory, str(arch))
    return settings


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


@dataclass
class Column:
    title: str
    workflow: str
    turns: list[Turn]
    figures: dict[str, float] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)


def summarize(column: Column, functions: dict[str, tuple[int, str]]) -> None:
    t = column.turns
    f = column.figures
    f["turns"] = len(t)
    f["answer_pieces"] = mean([x.answer_pieces for x in t])
    f["log_events"] = mean([x.log_events for x in t])
    f["answer_events"] = mean([x.answer_events for x in t])
    f["transitions"] = mean([x.transitions for x in t])
    for name in FUNCTIONS:
        f[f"inv_{name}"] = mean([x.invocations.get(name, 0) for x in t])
        f[f"gb_s_{name}"] = mean([x.gb_s.get(name, 0.0) for x in t])
    f["invocations"] = sum(f[f"inv_{n}"] for n in FUNCTIONS)
    f["gb_s"] = sum(f[f"gb_s_{n}"] for n in FUNCTIONS)
    f["wru"] = mean([x.wru for x in t])
    f["wru_events"] = mean([sum(v for k, v in x.wru_by_table.items() if "events" in k) for x in t])
    f["wru_state"] = mean([sum(v for k, v in x.wru_by_table.items() if k.endswith("-state")) for x in t])
    f["state_puts"] = mean([x.state_puts for x in t])
    f["state_kb"] = mean([x.state_put_bytes / 1024 for x in t])
    f["rru"] = mean([x.rru for x in t])
    f["ddb_requests"] = mean([x.ddb_requests for x in t])
    f["s3_puts"] = mean([x.s3_puts for x in t])
    f["s3_gets"] = mean([x.s3_gets for x in t])
    f["start_executions"] = mean([x.start_executions for x in t])
    f["execution_s"] = mean([x.execution_s for x in t])
    f["billed_express_s"] = mean([math.ceil(x.execution_s * 10 - 1e-9) / 10 for x in t])
    f["history_bytes"] = mean([x.history_bytes for x in t])
    f["client_s"] = mean([x.client_s for x in t])
    f["first_answer_s"] = mean([x.first_answer_s for x in t if x.first_answer_s is not None])

    c = column.costs
    if column.workflow == "STANDARD":
        c["Step Functions"] = f["transitions"] * SFN_STANDARD_PER_TRANSITION
        c["CloudWatch Logs (workflow)"] = 0.0
    else:
        c["Step Functions"] = (
            f["start_executions"] * SFN_EXPRESS_PER_REQUEST
            + f["billed_express_s"] * SFN_EXPRESS_MEMORY_MB / 1024 * SFN_EXPRESS_PER_GB_S
        )
        # The template logs EXPRESS executions at level ALL with execution data: about the history's size.
        c["CloudWatch Logs (workflow)"] = f["history_bytes"] / 1e9 * CLOUDWATCH_LOGS_PER_GB
    c["Lambda requests"] = f["invocations"] * LAMBDA_PER_REQUEST
    c["Lambda duration"] = sum(
        f[f"gb_s_{n}"] * (LAMBDA_ARM_PER_GB_S if functions[n][1] == "arm64" else LAMBDA_X86_PER_GB_S) for n in FUNCTIONS
    )
    c["DynamoDB writes"] = f["wru"] * DDB_PER_WRU
    c["DynamoDB reads"] = f["rru"] * DDB_PER_RRU
    c["S3"] = f["s3_puts"] * S3_PER_PUT + f["s3_gets"] * S3_PER_GET
    c["HTTP API"] = f["inv_ingest_turn"] * HTTP_API_PER_REQUEST
    c["total"] = sum(c.values())


# Output ---------------------------------------------------------------------------------------------------


def machine_state() -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    others = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "scifact" in cmdline.lower() and int(proc.name) != os.getpid():
            others.append(proc.name)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return {"usable": usable, "load": load, "scifact": others}


def machine_note(before: dict[str, Any], after: dict[str, Any]) -> str:
    usable = before["usable"]
    shared = max(before["load"], after["load"]) > 0.5 * usable or bool(before["scifact"] or after["scifact"])
    note = (
        f"Machine: python {platform.python_version()} on {platform.machine()}, {usable} usable CPUs, 1-minute load "
        f"average {before['load']:.1f} at the start and {after['load']:.1f} at the end"
    )
    if before["scifact"] or after["scifact"]:
        note += "; the SciFact benchmark was running at the same time"
    return note + (
        "; the machine was shared, so wall times (Lambda GB-s, latencies) are inflated."
        if shared
        else "; the machine was otherwise idle."
    )


ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("answer chunks streamed by the model", "answer_pieces", lambda v: f"{v:.0f}"),
    ("event-log items written", "log_events", lambda v: f"{v:.1f}"),
    ("  of which answer events", "answer_events", lambda v: f"{v:.1f}"),
    ("state transitions (StateEntered)", "transitions", lambda v: f"{v:.0f}"),
    ("Lambda invocations", "invocations", lambda v: f"{v:.0f}"),
    ("  pipeline_step / ingest_turn / stream_reader", "_inv", lambda v: ""),
    ("Lambda GB-seconds", "gb_s", lambda v: f"{v:.2f}"),
    ("  pipeline_step / ingest_turn / stream_reader", "_gb", lambda v: ""),
    ("DynamoDB write units (all tables)", "wru", lambda v: f"{v:.1f}"),
    ("  of which the event log", "wru_events", lambda v: f"{v:.1f}"),
    ("  of which pipeline state (puts, KB)", "_state", lambda v: ""),
    ("DynamoDB read units", "rru", lambda v: f"{v:.1f}"),
    ("DynamoDB requests", "ddb_requests", lambda v: f"{v:.0f}"),
    ("S3 PUTs", "s3_puts", lambda v: f"{v:.1f}"),
    ("workflow duration, s (moto)", "execution_s", lambda v: f"{v:.2f}"),
    ("ask → first answer text at the client, s", "first_answer_s", lambda v: f"{v:.2f}"),
    ("ask → complete at the client, s", "client_s", lambda v: f"{v:.2f}"),
]
COST_LINES = [
    "Step Functions",
    "CloudWatch Logs (workflow)",
    "Lambda requests",
    "Lambda duration",
    "DynamoDB writes",
    "DynamoDB reads",
    "S3",
    "HTTP API",
]


def cell(column: Column, key: str, fmt: Callable[[float], str]) -> str:
    f = column.figures
    if key == "_inv":
        return f"{f['inv_pipeline_step']:.0f} / {f['inv_ingest_turn']:.0f} / {f['inv_stream_reader']:.0f}"
    if key == "_state":
        return f"{f['wru_state']:.1f} ({f['state_puts']:.0f}, {f['state_kb']:.0f} KB)"
    if key == "_gb":
        return f"{f['gb_s_pipeline_step']:.2f} / {f['gb_s_ingest_turn']:.2f} / {f['gb_s_stream_reader']:.2f}"
    return fmt(f[key])


def dollars(value: float) -> str:
    return f"${value:.4f}" if value < 0.1 else f"${value:.3f}"


def table_rows(columns: list[Column]) -> tuple[list[str], list[list[str]]]:
    header = ["per turn (mean)", *(c.title for c in columns)]
    rows = [[label, *(cell(c, key, fmt) for c in columns)] for label, key, fmt in ROWS]
    rows.append(["**cost per 1,000 turns**", *("" for _ in columns)])
    for line in COST_LINES:
        rows.append([f"  {line}", *(dollars(c.costs[line] * 1000) for c in columns)])
    rows.append(
        ["**total (excl. model tokens, OpenSearch)**", *(f"**{dollars(c.costs['total'] * 1000)}**" for c in columns)]
    )
    return header, rows


def text_table(header: list[str], rows: list[list[str]]) -> str:
    plain = [[v.replace("**", "") for v in row] for row in [header, *rows]]
    widths = [max(len(r[i]) for r in plain) for i in range(len(header))]
    lines = []
    for n, row in enumerate(plain):
        lines.append(
            " | ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True)))
        )
        if n == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    def fix(v: str) -> str:
        return v.replace("  ", "&nbsp;&nbsp;", 1) if v.startswith("  ") else v

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---", *("---:" for _ in header[1:])]) + "|"]
    lines += ["| " + " | ".join(fix(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def step_table(turns: list[Turn]) -> list[str]:
    by_step: dict[str, list[float]] = {}
    for turn in turns:
        for name, ms in turn.steps:
            by_step.setdefault(name, []).append(ms)
    per_turn = max(1, len(turns))
    return [
        f"  {name:<36} {len(ms) / per_turn:>4.1f}/turn  mean {mean(ms):>7.1f} ms  max {max(ms):>7.1f} ms"
        for name, ms in by_step.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5, help="measured turns per workflow type and batching mode")
    parser.add_argument("--tokens", type=int, default=300, help="answer chunks the model streams (one token each)")
    parser.add_argument("--token-delay-ms", type=float, default=10.0, help="pause between answer chunks")
    parser.add_argument("--latency-events", type=int, default=100, help="events of the latency run")
    parser.add_argument("--latency-spacing-ms", type=float, default=100.0, help="pause between them")
    parser.add_argument("--idle-events", type=int, default=10, help="events after idle gaps (0: skip)")
    parser.add_argument("--idle-spacing-ms", type=float, default=1000.0, help="the idle gap")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "serverless_cost.md")
    args = parser.parse_args()

    warnings.filterwarnings("ignore", message="Couldn't determine the remaining time left")
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_TRACE_DISABLED": "true",
    }.items():
        os.environ.setdefault(name, value)

    from ragline.config import Settings, load_config
    from ragline.container import build_models
    from tests.support.scripted_model import ScriptedModel
    from tests.support.servers import ServerThread

    begun = time.perf_counter()
    machine_before = machine_state()
    functions = function_settings()
    memory_mb = {name: memory for name, (memory, _) in functions.items()}
    meter = Meter()
    meter.install()
    COMPONENT.set("bench")
    scripted = ScriptedModel()
    model_server = ServerThread(scripted.app).start()
    try:
        config, _ = load_config()
        models = build_models(
            Settings(chat_base_url=f"{model_server.url}/v1", chat_model="scripted", chat_api_key="test"), config
        )
        print(
            f"{args.tokens} answer chunks, {args.token_delay_ms:g} ms apart; {args.turns} turns per column "
            f"(after one warm-up turn per workflow type)",
            flush=True,
        )
        all_turns: dict[str, list[Turn]] = {}
        infos: dict[str, dict[str, Any]] = {}
        for workflow in ("STANDARD", "EXPRESS"):
            all_turns[workflow], infos[workflow] = run_workflow(workflow, models, scripted, meter, args, memory_mb)
        scenarios = [("answer cadence", args.latency_events, args.latency_spacing_ms / 1000)]
        if args.idle_events:
            scenarios.append(("after idle gaps", args.idle_events, args.idle_spacing_ms / 1000))
        print("append → client latency on the moto-server path ...", flush=True)
        latencies = measure_latency(models, meter, scenarios)
    finally:
        model_server.stop()
        meter.uninstall()
    machine_after = machine_state()

    columns = []
    for workflow in ("STANDARD", "EXPRESS"):
        for mode, title in (("batched", "batched"), ("per-token", "1 write/token")):
            turns = [t for t in all_turns[workflow] if t.mode == mode]
            column = Column(f"{workflow} {title}", workflow, turns)
            summarize(column, functions)
            columns.append(column)
    header, rows = table_rows(columns)
    info = infos["STANDARD"]
    poll_min, poll_max = info["poll"]
    express_type = infos["EXPRESS"]["machine_type"]
    problems = [
        f"{t.workflow} {t.mode}: {p}" for t in (*all_turns["STANDARD"], *all_turns["EXPRESS"]) for p in t.problems
    ]
    standard = columns[0]
    transitions = Counter(tuple(t.entered) for t in standard.turns).most_common(1)[0][0]
    stream_s = args.tokens * args.token_delay_ms / 1000
    marginal = (
        sum(memory_mb[n] for n in ("pipeline_step", "stream_reader")) / 1024 * LAMBDA_ARM_PER_GB_S
        + (1000 / info["batch_max_delay_ms"]) * DDB_PER_WRU
    ) * 1000

    state_wru = [sum(v for k, v in t.wru_by_table.items() if k.endswith("-state")) for t in standard.turns]
    state_note = (
        f"Pipeline state (one ChatManage version per stage, with the conversation history and the retrieved "
        f"chunks) is most of the DynamoDB writes; it grows with the session's history (conversation.max_rounds): "
        f"{state_wru[0]:.0f} write units on the first measured turn, up to {max(state_wru):.0f}."
    )
    lat_lines = []
    for lat in latencies:
        if lat.latencies_ms:
            lat_lines.append(
                f"| {lat.label} ({lat.events} events, {lat.spacing_ms:.0f} ms apart) | {percentile(lat.latencies_ms, 50):.0f} | "
                f"{percentile(lat.latencies_ms, 99):.0f} | {max(lat.latencies_ms):.0f} | {percentile(lat.put_ms, 50):.1f} |"
            )
        else:
            lat_lines.append(f"| {lat.label} | no samples | | | |")
    latency_md = "\n".join(
        [
            "| append → SSE client (moto server, 127.0.0.1) | p50 ms | p99 ms | max ms | PutItem p50 ms |",
            "|---|---:|---:|---:|---:|",
            *lat_lines,
        ]
    )
    goal = standard.costs["total"] * 1000
    notes = [
        f"Measured with `.venv/bin/python bench/serverless_cost.py --turns {args.turns} --tokens {args.tokens} "
        f"--token-delay-ms {args.token_delay_ms:g}`: {args.tokens} answer chunks {args.token_delay_ms:g} ms apart "
        f"(~{stream_s:.1f} s of generation) plus a citation, {args.turns} turns per column after a warm-up, one "
        f"session, {len(DOCS)} documents; batching {info['batch_max_delay_ms']} ms / {info['batch_max_chars']} chars.",
        f"Prices: {PRICE_SOURCE}. Step Functions STANDARD ${SFN_STANDARD_PER_TRANSITION * 1e6:.0f}/M transitions; "
        f"EXPRESS ${SFN_EXPRESS_PER_REQUEST * 1e6:.2f}/M requests + ${SFN_EXPRESS_PER_GB_S}/GB-s "
        f"({SFN_EXPRESS_MEMORY_MB} MB, duration rounded up to 100 ms); Lambda arm64 ${LAMBDA_PER_REQUEST * 1e6:.2f}/M "
        f"requests + ${LAMBDA_ARM_PER_GB_S}/GB-s (1 ms rounding); DynamoDB on-demand ${DDB_PER_WRU * 1e6:.3f}/M write "
        f"and ${DDB_PER_RRU * 1e6:.3f}/M read units (the prices since 2024-11-01; the older $1.25/$0.25 would double "
        f"both lines); S3 ${S3_PER_PUT * 1000:.3f}/1,000 PUTs; HTTP API ${HTTP_API_PER_REQUEST * 1e6:.2f}/M; "
        f"CloudWatch Logs ${CLOUDWATCH_LOGS_PER_GB:.2f}/GB ingested.",
        "Memory from template.yaml: "
        + ", ".join(f"{n} {functions[n][0]} MB {functions[n][1]}" for n in FUNCTIONS)
        + ". Lambda time is the wall time measured here (in-process moto calls take ~1 ms where AWS takes a few), "
        "on warm containers (cold-start INIT time is billed too and is not counted); stream_reader is billed for "
        "the whole SSE response.",
        f"Not counted: model tokens, OpenSearch (the embedded engine stands in), X-Ray traces (Tracing: Active; "
        f"$5/M traces, sampled), the functions' own CloudWatch Logs, storage. State transitions per STANDARD turn: "
        f"{' → '.join(transitions)}.",
        f"EXPRESS: moto {'creates the state machine as ' + express_type + ' and runs its executions, but' if express_type == 'EXPRESS' else 'does not run EXPRESS executions;'} "
        "with STANDARD semantics (an execution: ARN, ListExecutions, DescribeExecution and a full history, none of "
        "which AWS offers for EXPRESS; exactly-once, no at-least-once redelivery), so its counts are those of the "
        "same machine; the EXPRESS bill is computed from the measured execution duration, and its CloudWatch Logs "
        "line (the template logs EXPRESS at level ALL with execution data) is estimated as the history's JSON size.",
        f"Each further second of generation adds about ${marginal:.3f} per 1,000 turns "
        f"({(memory_mb['pipeline_step'] + memory_mb['stream_reader']) / 1024:.1f} GB-s of pipeline_step + "
        f"stream_reader, {1000 / info['batch_max_delay_ms']:.0f} batched log writes) plus the reader's polls.",
        "Goal (< $0.50 per 1,000 turns on STANDARD, excluding model tokens): "
        + ("met" if goal < 0.50 else "NOT met")
        + f", {dollars(goal)}; the {standard.figures['transitions']:.0f} state transitions alone are "
        f"{dollars(standard.costs['Step Functions'] * 1000)}.",
        f"Latency: the DynamoDB log cannot wake a reader in another process, so stream_reader polls — at once "
        f"after an event, then waits from {poll_min:g} s doubling to {poll_max:g} s while idle "
        f"(config.stream.poll_min_wait_s / poll_max_wait_s); the latency includes the writer's PutItem over HTTP.",
        state_note,
        machine_note(machine_before, machine_after),
        *(["PROBLEMS: " + "; ".join(problems)] if problems else []),
    ]
    markdown = "\n".join([markdown_table(header, rows), "", latency_md, "", *(f"- {n}" for n in notes)])

    print()
    print(text_table(header, rows))
    print()
    print("pipeline_step invocations (STANDARD, batched):")
    print("\n".join(step_table(standard.turns)))
    print()
    for lat in latencies:
        if lat.latencies_ms:
            print(
                f"append → client, {lat.label}: p50 {percentile(lat.latencies_ms, 50):.1f} ms, "
                f"p99 {percentile(lat.latencies_ms, 99):.1f} ms, max {max(lat.latencies_ms):.1f} ms over "
                f"{len(lat.latencies_ms)} events {lat.spacing_ms:.0f} ms apart; PutItem p50 {percentile(lat.put_ms, 50):.1f} ms"
            )
    print()
    for n in notes:
        print(f"- {n}")
    print()
    print("Markdown:\n")
    print(markdown)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(markdown + "\n", encoding="utf-8")
    raw = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "turns": [asdict(t) for w in all_turns.values() for t in w],
        "latency": [asdict(lat) for lat in latencies],
        "columns": [{"title": c.title, "figures": c.figures, "costs": c.costs} for c in columns],
        "infos": infos,
    }
    args.output.with_suffix(".json").write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
    print(f"\nwrote {args.output} and {args.output.with_suffix('.json')} in {time.perf_counter() - begun:.0f} s")


if __name__ == "__main__":
    main()
