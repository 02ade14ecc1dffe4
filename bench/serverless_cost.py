"""What one RAG turn costs on AWS, measured on the stack as deployed: writes, reads, invocations, transitions,
search requests, and dollars.

Run from the repository root::

    .venv/bin/python bench/serverless_cost.py [--turns 5] [--tokens 300] [--token-delay-ms 10]

What runs where (the deployed-stack harness of the AWS tests, ``tests/support/serverless.py``):

* the search engine: a real OpenSearch 2.19 with the k-NN plugin on 127.0.0.1, started by
  ``scripts/engines/engines.py`` as ``make test`` starts it;
* the model: ``tests/support/scripted_model.py`` behind uvicorn, streaming an answer of ``--tokens`` word
  pieces (one piece per chunk, ``--token-delay-ms`` apart) plus a citation;
* the stack: ``template.yaml`` transformed by SAM and created in a moto server (tables, bucket, roles, state
  machine), one stack per workflow type (the ``WorkflowType`` parameter). Every function runs from
  ``functions/*/app.py`` in sandboxes of its own, with the environment the template gives it, and every AWS
  call it makes is checked against its role and logged with what it wrote or read. The question goes through
  the HTTP API (payload 2.0) to ``ingest_turn``; Step Functions (moto) executes the workflow, whose tasks
  invoke ``pipeline_step``; a real SSE client (httpx + httpx-sse) follows the turn from ``stream_reader``'s
  function URL to its ``complete`` frame. Documents are indexed by ``index_document`` into OpenSearch first.

For each workflow type (STANDARD, EXPRESS) and each batching mode — the configured batching
(``config.stream.batch_max_delay_ms``) and batching off (``0``: one log write per answer token, the
counterfactual; the config layer is rewritten and pipeline_step's sandboxes restarted) — the script asks one
warm-up question in a new session, then ``--turns`` measured turns in that session. Per turn it counts:

* event-log items (the turn's stream key in the events table) and state transitions (``*StateEntered``
  events of the execution history: what STANDARD bills);
* Lambda invocations per function and their duration: from the invocation handed to a warm sandbox to its
  result (pipeline_step, ingest_turn), and for stream_reader the whole streamed response, which a streaming
  function URL bills for;
* from the stack's call log, every DynamoDB, S3, Step Functions and OpenSearch request each sandbox made:
  DynamoDB write units (1 KB per unit, twice in a transaction) and read units (4 KB per unit, half when
  eventually consistent) from the item sizes on the wire; an UpdateItem, which DynamoDB bills by the larger of
  the item before and after, by the stored item's size after the turn (its floor, the key and values it sets,
  when the item is gone); S3 object requests; Step Functions API calls; OpenSearch HTTP requests.

Then append → client latency on the deployed path: events appended to the stack's events table (PutItem
over HTTP to the moto server, as pipeline_step appends them), read by a real SSE client from stream_reader's
function URL.

Prints a compact table and a Markdown table; writes the Markdown to ``bench/results/serverless_cost.md``
and the raw per-turn figures to ``bench/results/serverless_cost.json``. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.support, as pytest's pythonpath = ["."] gives it

from bench.stats import percentile  # noqa: E402

RESULTS_DIR = ROOT / "bench" / "results"
TEMPLATE = ROOT / "template.yaml"

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
XRAY_PER_TRACE = 5.00 / 1e6  # traces recorded; Tracing: Active samples 1 a second + 5%: a sweep run is one
SWEEPS_PER_MONTH = 12 * 24 * 30  # the sweep's schedule, rate(5 minutes)
LAMBDA_REPORT_BYTES = 400  # START, END and REPORT lines of one invocation in its CloudWatch log

FUNCTIONS = {
    "ingest_turn": "IngestTurnFunction",
    "pipeline_step": "PipelineStepFunction",
    "stream_reader": "StreamReaderFunction",
}
BY_LOGICAL_ID = {logical_id: name for name, logical_id in FUNCTIONS.items()}
DYNAMODB_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
DYNAMODB_READS = {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}

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
    wru_events: float
    wru_state: float
    rru_by_function: dict[str, float]
    event_log_puts: int
    state_puts: int
    state_put_bytes: int
    ddb_requests: int
    ddb_requests_by_function: dict[str, int]
    s3_puts: int
    s3_gets: int
    start_executions: int
    sfn_calls: int
    opensearch_requests: int
    opensearch_by_function: dict[str, int]
    opensearch_operations: dict[str, int]
    entered: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def answer_pieces(count: int) -> list[str]:
    words = ANSWER_TEXT.split()
    pieces = [f"{words[i % len(words)]} " for i in range(count)]
    pieces.insert(min(40, count), '<ref id="c1"/> ')
    return pieces


def _table_name(resource: str) -> str:
    """``arn:…:table/NAME`` or ``…/NAME/index/I`` → NAME."""
    return resource.split(":table/", 1)[-1].split("/", 1)[0]


class StoredSizes:
    """Sizes of the items UpdateItems touched, read once from the stack after a turn (an admin's reads, not
    counted): DynamoDB bills an update by the larger of the item before and after."""

    def __init__(self, stack: Any) -> None:
        self._client = stack.client("dynamodb")
        self._sizes: dict[tuple[str, str], int | None] = {}

    def size(self, table: str, key: str) -> int | None:
        from tests.support.grants import item_size

        if (table, key) not in self._sizes:
            item = self._client.get_item(TableName=table, Key=json.loads(key)).get("Item")
            self._sizes[(table, key)] = None if item is None else item_size(item)
        return self._sizes[(table, key)]


def meter_calls(stack: Any, calls: list[Any], turn: dict[str, Any], problems: list[str]) -> None:
    """DynamoDB units, S3, Step Functions and OpenSearch requests of one turn's calls, into ``turn``."""
    from tests.support.grants import write_units

    stored = StoredSizes(stack)
    wru_by_table: dict[str, float] = {}
    rru_by_function: dict[str, float] = {}
    requests: dict[str, set[str]] = {}
    events_table, state_table = stack.refs["EventsTable"], stack.refs["StateTable"]
    state_puts = [0, 0]
    event_log_puts = 0
    for call in calls:
        if call.bytes < 0:
            problems.append(f"{call.function} {call.operation}: its usage could not be measured")
        if not call.allowed:
            problems.append(f"{call.function} was denied {call.action} on {call.resource}")
        if not call.action.startswith("dynamodb:"):
            continue
        table = _table_name(call.resource)
        requests.setdefault(call.function, set()).add(call.request)
        if call.operation in DYNAMODB_WRITES:
            units = call.units
            if call.key:
                size = stored.size(table, call.key)
                factor = 2 if call.operation.startswith("Transact") else 1
                units = max(units, factor * write_units(size)) if size is not None else units
            wru_by_table[table] = wru_by_table.get(table, 0.0) + units
            if call.operation == "PutItem" and table == events_table:
                event_log_puts += 1
            if call.operation == "PutItem" and table == state_table:
                state_puts[0] += 1
                state_puts[1] += call.bytes
        elif call.operation in DYNAMODB_READS:
            rru_by_function[call.function] = rru_by_function.get(call.function, 0.0) + call.units
    opensearch = Counter(c.function for c in calls if c.action.startswith(("es:", "aoss:")))
    turn.update(
        wru=sum(wru_by_table.values()),
        rru=sum(rru_by_function.values()),
        wru_by_table=wru_by_table,
        wru_events=wru_by_table.get(events_table, 0.0),
        wru_state=wru_by_table.get(state_table, 0.0),
        rru_by_function={BY_LOGICAL_ID.get(f, f): v for f, v in rru_by_function.items()},
        event_log_puts=event_log_puts,
        state_puts=state_puts[0],
        state_put_bytes=state_puts[1],
        ddb_requests=sum(len(r) for r in requests.values()),
        ddb_requests_by_function={BY_LOGICAL_ID.get(f, f): len(r) for f, r in requests.items()},
        s3_puts=sum(1 for c in calls if c.action == "s3:PutObject" and c.operation == "PutObject"),
        s3_gets=sum(1 for c in calls if c.action == "s3:GetObject"),
        start_executions=sum(1 for c in calls if c.action == "states:StartExecution"),
        sfn_calls=sum(1 for c in calls if c.action.startswith("states:") and c.function in BY_LOGICAL_ID),
        opensearch_requests=sum(opensearch.values()),
        opensearch_by_function={BY_LOGICAL_ID.get(f, f): n for f, n in opensearch.items()},
        opensearch_operations=dict(Counter(c.operation for c in calls if c.action.startswith(("es:", "aoss:")))),
    )


def run_turn(
    stack: Any,
    client: Any,
    scripted: Any,
    session_id: str,
    question: str,
    pieces: list[str],
    delay_s: float,
    memory_mb: dict[str, int],
    workflow: str,
    mode: str,
) -> Turn:
    from httpx_sse import connect_sse

    from tests.support.polling import wait_until
    from tests.support.scripted_model import Script
    from tests.support.sse import Frame

    scripted.queue(Script.answer(*pieces, delay=delay_s))
    model_requests = len(scripted.received)
    calls_mark, invocations_mark = len(stack.calls()), len(stack.lambdas.invocations)
    started = time.perf_counter()
    ids = client.ask(session_id, question)  # API Gateway → ingest_turn: 202
    first_answer: float | None = None
    frames = []
    path = f"api/v1/sessions/{session_id}/messages/{ids['assistant_message_id']}/events"
    # The client of tests/support/sse.read_frames, with the first answer frame timed.
    with connect_sse(client.stream, "GET", path) as source:
        source.response.raise_for_status()
        for event in source.iter_sse():
            frame = Frame(int(event.id), json.loads(event.data))
            if first_answer is None and frame.type == "answer" and frame.content:
                first_answer = time.perf_counter() - started
            frames.append(frame)
    client_s = time.perf_counter() - started

    arn = stack.execution_of(session_id, ids["assistant_message_id"])
    execution = stack.wait_for_execution(arn)

    # stream_reader's invocation is recorded when the function URL closes the response, a moment after the
    # client's last frame.
    def streamed() -> bool:
        return any(
            i.function == "StreamReaderFunction" and str(i.event.get("path", "")).endswith(path)
            for i in stack.lambdas.invocations[invocations_mark:]
        )

    wait_until(streamed, timeout=30, interval=0.02)
    history = stack.history(arn)
    events = client.log(ids)
    calls = stack.calls()[calls_mark:]
    invocations = stack.lambdas.invocations[invocations_mark:]

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
    if not all(i.ok for i in invocations):
        problems.append(
            "an invocation failed: " + ", ".join(f"{i.function} {i.error}" for i in invocations if not i.ok)
        )

    gb_s: dict[str, float] = {}
    counted = Counter()
    for invoked in invocations:
        name = BY_LOGICAL_ID.get(invoked.function)
        if name is None:
            problems.append(f"an invocation of {invoked.function} during the turn")
            continue
        counted[name] += 1
        gb_s[name] = gb_s.get(name, 0.0) + math.ceil(invoked.ms) / 1000 * memory_mb[name] / 1024
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]
    figures: dict[str, Any] = {}
    meter_calls(stack, calls, figures, problems)
    return Turn(
        workflow=workflow,
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
        invocations=dict(counted),
        gb_s=gb_s,
        steps=[
            (f"{i.event.get('stage', '')}:{i.event.get('phase', 'run')}", i.ms)
            for i in invocations
            if i.function == "PipelineStepFunction"
        ],
        entered=entered,
        problems=problems,
        **figures,
    )


def set_batching(stack: Any, batch_max_delay_ms: int) -> None:
    """The config layer with another ``stream.batch_max_delay_ms``; pipeline_step's sandboxes restart on it."""
    import yaml

    path = stack.work_dir / "opt" / "config.yaml"
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    config["stream"]["batch_max_delay_ms"] = batch_max_delay_ms
    path.unlink()
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    stack.lambdas.recycle("PipelineStepFunction")
    stack.lambdas.warm("PipelineStepFunction")


def run_workflow(
    workflow: str,
    opensearch: Any,
    scripted: Any,
    args: argparse.Namespace,
    memory_mb: dict[str, int],
    latency: Callable[[Any, Any], list[Latency]] | None,
) -> tuple[list[Turn], dict[str, Any], list[Latency]]:

    from ragline.config import load_config
    from tests.support.serverless import CHAT_KEY_PARAMETER, deployed_stack, stack_client

    turns: list[Turn] = []
    info: dict[str, Any] = {}
    latencies: list[Latency] = []
    pieces = answer_pieces(args.tokens)
    delay_s = args.token_delay_ms / 1000
    stream = load_config()[0].stream
    info["batch_max_delay_ms"], info["batch_max_chars"] = stream.batch_max_delay_ms, stream.batch_max_chars
    info["poll"] = (stream.poll_min_wait_s, stream.poll_max_wait_s)
    parameters = {
        "WorkflowType": workflow,
        "ChatBaseUrl": f"{scripted.url}/v1",
        "ChatModel": "scripted",
        "ChatApiKeyParameter": CHAT_KEY_PARAMETER,
    }
    with (
        tempfile.TemporaryDirectory(prefix="serverless-cost-") as tmp,
        deployed_stack(
            Path(tmp), parameters, opensearch=opensearch, ssm_parameters={CHAT_KEY_PARAMETER: "scripted-key"}
        ) as stack,
    ):
        started = time.perf_counter()
        stack.warm()
        info["warm_s"] = time.perf_counter() - started
        machine = stack.client("stepfunctions").describe_state_machine(stateMachineArn=stack.state_machine_arn)
        info["machine_type"] = machine["type"]
        with stack_client(stack, "bench", timeout_s=120.0) as client:
            started = time.perf_counter()
            kb_id = client.kb(DOCS)  # indexed by index_document into OpenSearch
            info["index_s"] = time.perf_counter() - started
            info["warmup_problems"] = []
            for mode, delay_ms in (("batched", stream.batch_max_delay_ms), ("per-token", 0)):
                if delay_ms != stream.batch_max_delay_ms:
                    set_batching(stack, delay_ms)
                # Each mode in a new session asked the same questions: both see the same conversation history
                # (it enters every state save, up to conversation.max_rounds).
                session_id = client.session([kb_id])
                warm = run_turn(
                    stack, client, scripted, session_id, QUESTIONS[0], pieces, delay_s, memory_mb, workflow, "warm-up"
                )
                info["warmup_problems"] += warm.problems
                for number in range(args.turns):
                    question = QUESTIONS[(number + 1) % len(QUESTIONS)]
                    turn = run_turn(
                        stack, client, scripted, session_id, question, pieces, delay_s, memory_mb, workflow, mode
                    )
                    turns.append(turn)
                    print(
                        f"  {workflow:<8} {mode:<9} log {turn.log_events:>3} events, {turn.transitions} transitions, "
                        f"{sum(turn.invocations.values())} invocations, {turn.wru:.0f} WRU / {turn.rru:.1f} RRU, "
                        f"{turn.opensearch_requests} OpenSearch requests, turn {turn.client_s:.2f} s"
                        + (f"  PROBLEMS: {turn.problems}" if turn.problems else ""),
                        flush=True,
                    )
            if latency is not None:
                # Every turn has ended and every document is indexed: the sweep finds nothing, as when idle.
                info["sweep"] = measure_sweep(stack, args.sweeps)
                set_batching(stack, stream.batch_max_delay_ms)
                latencies = latency(stack, client)
        stack.assert_no_denials()
    return turns, info, latencies


def measure_sweep(stack: Any, runs: int) -> dict[str, float]:
    """The one thing the stack does while nobody uses it: the sweep, every 5 minutes (with no open turn and
    no pending document, as when idle). Per run: duration, requests, capacity units; and the month's cost."""
    stack.lambdas.warm("SweepFunction")
    durations, rru, requests = [], [], []
    for _ in range(runs):
        calls_mark, invocations_mark = len(stack.calls()), len(stack.lambdas.invocations)
        result = stack.run_schedule("SweepFunctionEvery5Minutes")
        if result.function_error is not None:
            raise RuntimeError(f"the sweep failed: {result.payload!r}")
        (invoked,) = [i for i in stack.lambdas.invocations[invocations_mark:] if i.function == "SweepFunction"]
        calls = [c for c in stack.calls()[calls_mark:] if c.function == "SweepFunction"]
        durations.append(invoked.ms)
        rru.append(sum(c.units for c in calls if c.operation in DYNAMODB_READS))
        requests.append(len({c.request for c in calls}))
    memory_mb, _ = function_setting("SweepFunction")
    ms = statistics.median(durations)
    month = {
        "Lambda": SWEEPS_PER_MONTH
        * (LAMBDA_PER_REQUEST + math.ceil(ms) / 1000 * memory_mb / 1024 * LAMBDA_ARM_PER_GB_S),
        "DynamoDB reads": SWEEPS_PER_MONTH * mean(rru) * DDB_PER_RRU,
        "X-Ray traces": SWEEPS_PER_MONTH * XRAY_PER_TRACE,
        "CloudWatch Logs": SWEEPS_PER_MONTH * LAMBDA_REPORT_BYTES / 1e9 * CLOUDWATCH_LOGS_PER_GB,
    }
    return {
        "runs": runs,
        "ms_median": ms,
        "memory_mb": memory_mb,
        "rru": mean(rru),
        "requests": mean(requests),
        **{f"month_{k}": v for k, v in month.items()},
        "month_total": sum(month.values()),
    }


# Append → client latency on the deployed path --------------------------------------------------------------


@dataclass
class Latency:
    label: str
    events: int
    spacing_ms: float
    latencies_ms: list[float]
    put_ms: list[float]


def latency_runner(scenarios: list[tuple[str, int, float]]) -> Callable[[Any, Any], list[Latency]]:
    def measure(stack: Any, client: Any) -> list[Latency]:
        from httpx_sse import connect_sse

        from ragline.store.dynamodb import DynamoSessionStore
        from ragline.stream.base import stream_key
        from ragline.stream.dynamodb import DynamoDBStreamManager
        from ragline.types import ResponseType, StreamEvent

        sessions = DynamoSessionStore(stack.table("SessionsTable"), stack.table("MessagesTable"))
        log = DynamoDBStreamManager(stack.table("EventsTable"), 3600)
        results = []
        for label, count, spacing_s in scenarios:
            chat = sessions.create_session(client.tenant.id, [])
            _, assistant = sessions.create_turn(chat, f"req-{label}", "How does it work?")
            key = stream_key(chat.id, assistant.id)
            path = f"api/v1/sessions/{chat.id}/messages/{assistant.id}/events"
            received: list[tuple[int, dict[str, Any]]] = []
            first = threading.Event()

            def follow(
                path: str = path,
                received: list[tuple[int, dict[str, Any]]] = received,
                first: threading.Event = first,
            ) -> None:
                with connect_sse(client.stream, "GET", path) as source:
                    for event in source.iter_sse():
                        received.append((time.monotonic_ns(), json.loads(event.data)))
                        first.set()
                        if received[-1][1]["response_type"] == "complete":
                            return

            log.append_sync(key, StreamEvent(id="req", type=ResponseType.AGENT_QUERY, content="q", done=True))
            reader = threading.Thread(target=follow, name=f"sse-{label}", daemon=True)
            reader.start()
            if not first.wait(60):
                raise RuntimeError("the SSE reader received nothing")
            put_ms: list[float] = []
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
                log.append_sync(key, event)
                put_ms.append((time.monotonic_ns() - sent) / 1e6)
            log.append_sync(key, StreamEvent(id="end", type=ResponseType.COMPLETE, done=True))
            reader.join(timeout=60)
            latencies = [
                (recv - data["data"]["t_send_ns"]) / 1e6
                for recv, data in received
                if isinstance(data.get("data"), dict) and "t_send_ns" in data["data"]
            ]
            results.append(Latency(label, count, spacing_s * 1000, latencies, put_ms))
        return results

    return measure


# Cost -----------------------------------------------------------------------------------------------------


def function_setting(logical_id: str) -> tuple[int, str]:
    """(MemorySize MB, architecture) of one function, from template.yaml (the function's own, else Globals)."""
    from ragline.serverless.template_tables import load_template

    template = load_template(TEMPLATE)
    globals_ = template.get("Globals", {}).get("Function", {})
    props = template["Resources"][logical_id].get("Properties", {})
    memory = int(props.get("MemorySize", globals_.get("MemorySize", 128)))
    arch = (props.get("Architectures") or globals_.get("Architectures") or ["x86_64"])[0]
    return memory, str(arch)


def function_settings() -> dict[str, tuple[int, str]]:
    return {name: function_setting(logical_id) for name, logical_id in FUNCTIONS.items()}


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
    f["wru_events"] = mean([x.wru_events for x in t])
    f["wru_state"] = mean([x.wru_state for x in t])
    f["state_puts"] = mean([x.state_puts for x in t])
    f["state_kb"] = mean([x.state_put_bytes / 1024 for x in t])
    f["rru"] = mean([x.rru for x in t])
    f["ddb_requests"] = mean([x.ddb_requests for x in t])
    f["opensearch_requests"] = mean([x.opensearch_requests for x in t])
    f["sfn_calls"] = mean([x.sfn_calls for x in t])
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


def sweep_note(sweep: dict[str, float]) -> str:
    return (
        f"Idle: the only thing the stack runs by itself is the sweep, every 5 minutes ({SWEEPS_PER_MONTH:,} runs a "
        f"month). With nothing to sweep a run takes {sweep['ms_median']:.0f} ms here (median of {sweep['runs']:.0f}; "
        f"{sweep['memory_mb']:.0f} MB), {sweep['requests']:.0f} requests and {sweep['rru']:.1f} read units: "
        f"{dollars(sweep['month_total'])} a month (Lambda {dollars(sweep['month_Lambda'])}, DynamoDB reads "
        f"{dollars(sweep['month_DynamoDB reads'])}, X-Ray {dollars(sweep['month_X-Ray traces'])} if every run is "
        f"traced, its log lines {dollars(sweep['month_CloudWatch Logs'])}), beside the OpenSearch domain's hours."
    )


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
    ("Step Functions API calls by the functions", "sfn_calls", lambda v: f"{v:.1f}"),
    ("OpenSearch requests", "opensearch_requests", lambda v: f"{v:.1f}"),
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
        [
            "**total (excl. model tokens, the OpenSearch domain)**",
            *(f"**{dollars(c.costs['total'] * 1000)}**" for c in columns),
        ]
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
    parser.add_argument("--sweeps", type=int, default=5, help="runs of the idle sweep measured")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "serverless_cost.md")
    args = parser.parse_args()

    from scripts.engines import engines as launcher
    from tests.support.scripted_model import ScriptedModel
    from tests.support.serverless import OpenSearchTarget
    from tests.support.servers import ServerThread

    begun = time.perf_counter()
    machine_before = machine_state()
    functions = function_settings()
    memory_mb = {name: memory for name, (memory, _) in functions.items()}
    scripted = ScriptedModel()
    model_server = ServerThread(scripted.app).start()
    scripted.url = model_server.url  # type: ignore[attr-defined]
    scenarios = [("answer cadence", args.latency_events, args.latency_spacing_ms / 1000)]
    if args.idle_events:
        scenarios.append(("after idle gaps", args.idle_events, args.idle_spacing_ms / 1000))
    all_turns: dict[str, list[Turn]] = {}
    infos: dict[str, dict[str, Any]] = {}
    latencies: list[Latency] = []
    try:
        with launcher.Engines(only=["opensearch"]) as engines:
            state = engines.state["opensearch"]
            if "url" not in state:
                raise SystemExit(f"OpenSearch did not start: {state}")
            opensearch = OpenSearchTarget(str(state["url"]), knn_engine=str(state.get("knn_engine", "lucene")))
            print(
                f"{args.tokens} answer chunks, {args.token_delay_ms:g} ms apart; {args.turns} turns per column "
                f"(after one warm-up turn per column); OpenSearch at {opensearch.url}",
                flush=True,
            )
            for workflow in ("STANDARD", "EXPRESS"):
                measure = latency_runner(scenarios) if workflow == "STANDARD" else None
                all_turns[workflow], infos[workflow], found = run_workflow(
                    workflow, opensearch, scripted, args, memory_mb, measure
                )
                latencies += found
    finally:
        model_server.stop()
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

    state_wru = [t.wru_state for t in standard.turns]
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
            "| append → SSE client (deployed stack: moto server, stream_reader's function URL) | p50 ms | p99 ms "
            "| max ms | PutItem p50 ms |",
            "|---|---:|---:|---:|---:|",
            *lat_lines,
        ]
    )
    goal = standard.costs["total"] * 1000
    notes = [
        f"Measured with `.venv/bin/python bench/serverless_cost.py --turns {args.turns} --tokens {args.tokens} "
        f"--token-delay-ms {args.token_delay_ms:g}`: {args.tokens} answer chunks {args.token_delay_ms:g} ms apart "
        f"(~{stream_s:.1f} s of generation) plus a citation, {args.turns} turns per column after a warm-up, one "
        f"session per column, {len(DOCS)} documents in OpenSearch; batching {info['batch_max_delay_ms']} ms / "
        f"{info['batch_max_chars']} chars. The stack as deployed: template.yaml in a moto server, each function in "
        "sandboxes of its own with its template environment and role (every call checked, none denied), the "
        "real OpenSearch 2.19.",
        f"Prices: {PRICE_SOURCE}. Step Functions STANDARD ${SFN_STANDARD_PER_TRANSITION * 1e6:.0f}/M transitions; "
        f"EXPRESS ${SFN_EXPRESS_PER_REQUEST * 1e6:.2f}/M requests + ${SFN_EXPRESS_PER_GB_S}/GB-s "
        f"({SFN_EXPRESS_MEMORY_MB} MB, duration rounded up to 100 ms); Lambda arm64 ${LAMBDA_PER_REQUEST * 1e6:.2f}/M "
        f"requests + ${LAMBDA_ARM_PER_GB_S}/GB-s (1 ms rounding); DynamoDB on-demand ${DDB_PER_WRU * 1e6:.3f}/M write "
        f"and ${DDB_PER_RRU * 1e6:.3f}/M read units (the prices since 2024-11-01; the older $1.25/$0.25 would double "
        f"both lines); S3 ${S3_PER_PUT * 1000:.3f}/1,000 PUTs; HTTP API ${HTTP_API_PER_REQUEST * 1e6:.2f}/M; "
        f"CloudWatch Logs ${CLOUDWATCH_LOGS_PER_GB:.2f}/GB ingested.",
        "Memory from template.yaml: "
        + ", ".join(f"{n} {functions[n][0]} MB {functions[n][1]}" for n in FUNCTIONS)
        + ". Lambda time is each invocation's wall time in its sandbox here (a moto call over HTTP on 127.0.0.1 "
        "takes a few ms, as DynamoDB does from Lambda; the grant check and metering run inside it), on warm "
        "sandboxes (cold-start INIT time is billed too and is not counted); stream_reader is billed for the whole "
        "SSE response. An UpdateItem is billed here by the stored item's size after the turn (the larger of before "
        "and after is what DynamoDB bills).",
        "OpenSearch requests are counted (index and search calls of every function, signed with its role) but not "
        "billed per request: the domain costs by the hour (the idle cost, in the README). Not counted either: "
        "model tokens, X-Ray traces (Tracing: Active; $5/M traces, sampled), the functions' own CloudWatch Logs, "
        f"storage. State transitions per STANDARD turn: {' → '.join(transitions)}.",
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
        f"(config.stream.poll_min_wait_s / poll_max_wait_s); the latency includes the writer's PutItem over HTTP "
        "and the function URL's hop.",
        state_note,
        sweep_note(info["sweep"]),
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
