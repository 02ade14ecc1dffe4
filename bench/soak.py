"""Soak: N turns with random client drops, stops and one crash of the server in the middle; every turn must
end with exactly one terminal event, with nothing lost or repeated and no orphan left.

Run from the repository root::

    .venv/bin/python bench/soak.py [--turns 120] [--concurrency 8] [--runtime embedded|serverless|both]
                                   [--serverless-turns N] [--serverless-concurrency 4]

What runs where:

* the model: ``tests/support/scripted_model.py`` behind uvicorn in this process, streaming each answer as
  ``--pieces`` word pieces ``--piece-delay-ms`` apart; it records when a client closed its stream early;
* **embedded**: a real ``ragline serve`` subprocess on its own data directory. Halfway through, it is killed
  with SIGKILL while turns are in flight and started again on the same directory: its recovery sweep ends
  the orphaned turns (``error``, reason ``interrupted``) before it serves again;
* **serverless**: the deployed stack (``tests/support/serverless.py``): template.yaml's functions run from
  ``functions/*/app.py`` in sandboxes of their own (ingest_turn behind the HTTP API, stream_reader behind its
  streaming function URL, pipeline_step driven by the workflow moto executes, every AWS call checked against
  the function's role), the log in DynamoDB, search in a live OpenSearch (started here by
  ``scripts/engines``). Halfway through, every sandbox of every function is killed with SIGKILL: the
  streaming steps, the readers and any accept in flight die as a crashed Lambda environment does, and Lambda
  starts new ones on the next call. After the turns, the sweep function runs once, as its EventBridge
  schedule would. The harness runs at most 4 sandboxes of a function (``--serverless-concurrency`` is 4: one
  streaming step each), and here ``concurrency + 2`` of stream_reader, so a stop or a reconnect gets a
  sandbox while every turn has a reader, as it would in Lambda.

Each turn is one client thread: it asks (with a request id, so a retry across the crash is the same
turn), reads the SSE stream, drops the connection after a random frame with probability ``--drop-rate``
and resumes with ``Last-Event-ID``, and with probability ``--stop-rate`` stops the answer once it is
under way. At the end every turn's log is read from the store itself and compared with what its client
received. Printed: turns started, turns ended with exactly one terminal event, bytes lost and repeated,
orphans (no terminal event, or the message not completed), messages that disagree with their stream,
how the turns ended, and the stop-to-closed time (the stop request sent → the model saw its stream
closed). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.support, as pytest's pythonpath = ["."] gives it

from bench.stats import percentile  # noqa: E402

DOCS = {
    "Reactor": "# Reactor\n\nThe reactor cools with heavy water. Heavy water slows neutrons down.",
    "Turbine": "# Turbine\n\nSteam from the reactor turns the turbine, which drives the generator.",
}
TERMINAL = {"complete", "error", "stop"}


@dataclass
class TurnRecord:
    number: int
    request_id: str
    message_id: str = ""
    started: bool = False
    frames: list[tuple[int, str, str]] = field(default_factory=list)  # (seq, type, content)
    drops: int = 0
    reconnects: int = 0
    stop_sent_at: float | None = None
    client_end: str = ""
    failure: str = ""


@dataclass
class Target:
    """A running API for the soak: where it is, its key, and how to crash it and read a turn's raw log."""

    name: str
    url: Callable[[], str]
    key: str
    session_id: str
    crash: Callable[[], None]
    raw_log: Callable[[str], list[Any]]
    # Where the answer's stream and its stop are served (AWS: stream_reader's function URL); else ``url``.
    stream_url: Callable[[], str] | None = None
    # After the turns, before the figures: what a deployment runs on a schedule (AWS: the sweep function).
    settle: Callable[[], str] | None = None


def _client(target: Target, timeout: float = 30.0, stream: bool = False) -> Any:
    import httpx

    url = target.stream_url() if stream and target.stream_url is not None else target.url()
    return httpx.Client(base_url=url, headers={"X-API-Key": target.key}, timeout=timeout)


def _post_question(target: Target, turn: TurnRecord, deadline: float) -> None:
    import httpx

    body = {"query": f"Soak question {turn.number}: how does the reactor cool?", "request_id": turn.request_id}
    while time.monotonic() < deadline:
        try:
            with _client(target) as client:
                reply = client.post(f"/api/v1/sessions/{target.session_id}/questions", json=body)
            if reply.status_code == 202:
                turn.message_id = reply.json()["data"]["assistant_message_id"]
                turn.started = True
                return
            if reply.status_code < 500:
                turn.failure = f"ask {reply.status_code}"
                return
            # 503 (draining) or 502 (the accept's Lambda died in the crash): the same request id is the same turn.
        except httpx.HTTPError:
            pass  # the server is down (the crash): the same request id again is the same turn
        time.sleep(0.2)
    turn.failure = "ask: no server"


def _follow(target: Target, turn: TurnRecord, rng: random.Random, args: argparse.Namespace, deadline: float) -> None:
    import httpx
    from httpx_sse import connect_sse

    url = f"/api/v1/sessions/{target.session_id}/messages/{turn.message_id}/events"
    last: int | None = None
    while time.monotonic() < deadline:
        headers = {"Last-Event-ID": str(last)} if last is not None else {}
        drop_at = rng.randint(2, 12) if rng.random() < args.drop_rate and turn.drops < 3 else None
        try:
            with (
                _client(target, timeout=60, stream=True) as client,
                connect_sse(client, "GET", url, headers=headers) as source,
            ):
                if source.response.status_code == 204:
                    turn.client_end = turn.frames[-1][1] if turn.frames else "204"
                    return
                source.response.raise_for_status()
                for received, sse in enumerate(source.iter_sse(), start=1):
                    try:
                        data = json.loads(sse.data)
                    except ValueError:
                        break  # a frame cut by the crash: reconnect from the last whole one
                    seq = int(sse.id)
                    turn.frames.append((seq, str(data["response_type"]), str(data.get("content", ""))))
                    last = seq
                    kind = data["response_type"]
                    if kind in TERMINAL:
                        turn.client_end = kind
                        return
                    if (
                        kind == "answer"
                        and turn.stop_sent_at is None
                        and turn.number in args.stop_turns
                        and received >= 2
                    ):
                        turn.stop_sent_at = time.monotonic()
                        client.post(f"/api/v1/sessions/{target.session_id}/stop", json={"message_id": turn.message_id})
                    if drop_at is not None and received >= drop_at:
                        turn.drops += 1
                        break  # the client goes away; it comes back with Last-Event-ID
        except (httpx.HTTPError, ValueError):
            time.sleep(0.2)  # the server went away (the crash), or the read failed: reconnect
        turn.reconnects += 1
    turn.failure = turn.failure or "no terminal frame before the deadline"


def run_turns(
    target: Target, scripted: Any, args: argparse.Namespace, crash_after: int
) -> tuple[list[TurnRecord], dict[str, Any]]:
    from tests.support.scripted_model import Script

    rng = random.Random(args.seed)
    turns = [TurnRecord(i, f"soak-{target.name}-{i}-{uuid.uuid4().hex[:8]}") for i in range(args.turns)]
    args.stop_turns = {t.number for t in turns if rng.random() < args.stop_rate}
    pieces = [f"w{i} " for i in range(args.pieces)]
    for _ in turns:
        scripted.queue(Script.answer(*pieces, delay=args.piece_delay_ms / 1000))
    semaphore = threading.Semaphore(args.concurrency)
    started_count = 0
    lock = threading.Lock()
    crashed = threading.Event()
    crash_info: dict[str, Any] = {}
    deadline = time.monotonic() + args.timeout_s

    def worker(turn: TurnRecord) -> None:
        nonlocal started_count
        with semaphore:
            seeded = random.Random(args.seed * 1000 + turn.number)
            _post_question(target, turn, deadline)
            with lock:
                started_count += 1
                trigger = started_count == crash_after and not crashed.is_set()
            if trigger:
                crashed.set()
                threading.Thread(target=do_crash, daemon=True).start()
            if turn.started:
                _follow(target, turn, seeded, args, deadline)

    def do_crash() -> None:
        time.sleep(args.piece_delay_ms / 1000 * 5)  # the turns just started are answering
        in_flight = sum(1 for t in turns if t.started and not t.client_end)
        crash_info["in_flight"] = in_flight
        begun = time.monotonic()
        try:
            target.crash()
        except Exception as exc:
            crash_info["error"] = repr(exc)
        crash_info["restart_s"] = time.monotonic() - begun

    threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in turns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 5)
    return turns, crash_info


def verify(target: Target, turns: list[TurnRecord], scripted: Any) -> dict[str, Any]:
    from ragline.stream.base import stream_key
    from ragline.stream.replay import summarize_answer

    figures: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    stop_to_closed: list[float] = []
    with _client(target) as client:
        messages = {m["id"]: m for m in client.get(f"/api/v1/sessions/{target.session_id}/messages").json()["data"]}
    for turn in turns:
        if not turn.started:
            figures["not_started"] += 1
            continue
        figures["started"] += 1
        events = target.raw_log(stream_key(target.session_id, turn.message_id))
        terminals = [e for e in events if e.is_terminal]
        if len(terminals) == 1:
            figures["one_terminal"] += 1
            if not events[-1].is_terminal:
                # No reader sees these (replays stop at the terminal event), but none should be written.
                figures["events_after_terminal"] += len(events) - 1 - events.index(terminals[0])
        elif not terminals:
            figures["orphans"] += 1
        else:
            figures["several_terminals"] += 1
            print(f"  several terminal events in turn {turn.number}: {[(e.seq, e.type.value) for e in terminals]}")
        end = terminals[0] if terminals else None
        label = end.type.value if end is not None else "none"
        if end is not None and end.data.get("reason") == "interrupted":
            label = f"error interrupted ({end.data.get('cause')})"
        ends[label] += 1
        logged = summarize_answer(events).content.encode()
        seen: set[int] = set()
        received = b""
        for seq, kind, content in turn.frames:
            if seq in seen:
                figures["bytes_repeated"] += len(content.encode())
                continue
            seen.add(seq)
            if kind == "answer":
                received += content.encode()
        if received != logged:
            figures["turns_with_text_mismatch"] += 1
            figures["bytes_lost"] += max(0, len(logged) - len(received))
        if turn.client_end not in TERMINAL:
            figures["clients_without_terminal_frame"] += 1
        message = messages.get(turn.message_id)
        if message is None or not message.get("is_completed"):
            figures["orphans_message"] += 1
        elif message.get("content", "").encode() != logged:
            figures["messages_disagreeing"] += 1
        figures["drops"] += turn.drops
        if turn.stop_sent_at is not None:
            figures["stops_sent"] += 1
            token = f"Soak question {turn.number}:"
            request = next((r for r in scripted.answers if token in _last_user_text(r)), None)
            closed = request.closed_early_at if request is not None else None
            # Closed by this stop (not earlier, by the crash): the time from the stop request to the close.
            if closed is not None and closed >= turn.stop_sent_at:
                stop_to_closed.append((closed - turn.stop_sent_at) * 1000)
    return {"figures": figures, "ends": ends, "stop_to_closed_ms": stop_to_closed}


def _last_user_text(request: Any) -> str:
    users = [m for m in request.messages if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


# Runtimes ------------------------------------------------------------------------------------------------------
def embedded_target(scripted: Any, work: Path) -> tuple[Target, Callable[[], None]]:
    from tests.support.process import RaglineProcess

    process = RaglineProcess(work / "data", f"{scripted.url}/v1", RAGLINE_SHUTDOWN_GRACE_S="2").start()
    with process.client() as client:
        kb = client.post("/api/v1/knowledge-bases", json={"name": "soak"}).json()["data"]["id"]
        for title, content in DOCS.items():
            client.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": title, "content": content})
        session = client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb]}).json()["data"]["id"]

    def crash() -> None:
        process.kill()
        process.start()

    def raw_log(key: str) -> list[Any]:
        import asyncio

        from ragline.store.db import Database
        from ragline.stream.sqlite import SqliteStreamManager

        db = Database(work / "data" / "events.db", event_log=True)
        try:
            return asyncio.run(SqliteStreamManager(db).get_events(key))
        finally:
            db.close()

    target = Target("embedded", lambda: process.url, process.api_key, session, crash, raw_log)
    return target, process.stop


def run_serverless(scripted: Any, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The deployed stack (tests/support/serverless.py): template.yaml's functions in sandboxes of their own
    behind the HTTP API and the stream URL, moto executing the workflow, searching a live OpenSearch. The
    crash kills (SIGKILL) every sandbox of every function at once: the streaming steps, the readers and any
    accept in flight die as a crashed Lambda environment does; Lambda starts new ones on the next call."""
    import httpx

    from ragline.stream.dynamodb import DynamoDBStreamManager
    from scripts.engines import engines as launcher
    from tests.support.serverless import CHAT_KEY_PARAMETER, OpenSearchTarget, deployed_stack

    parameters = {
        "ChatBaseUrl": f"{scripted.url}/v1",
        "ChatModel": "scripted",
        "ChatApiKeyParameter": CHAT_KEY_PARAMETER,
    }
    with launcher.Engines(only=["opensearch"]) as engines:
        state = engines.state["opensearch"]
        if "url" not in state:
            raise SystemExit(f"the serverless soak searches a live OpenSearch, which did not start: {state}")
        search = OpenSearchTarget(str(state["url"]), knn_engine=str(state.get("knn_engine", "lucene")))
        with deployed_stack(
            work, parameters, opensearch=search, ssm_parameters={CHAT_KEY_PARAMETER: "scripted-key"}
        ) as stack:
            # Lambda gives each concurrent request a sandbox of its own; the harness caps them (4 each). With
            # every stream_reader sandbox holding a reader, a stop or a reconnect would wait for one to end.
            stack.lambdas.spec("StreamReaderFunction").max_sandboxes = args.concurrency + 2
            stack.warm()
            _, key = stack.create_tenant("soak")
            with httpx.Client(base_url=stack.api_url, headers={"X-API-Key": key}, timeout=60) as client:
                kb = client.post("/api/v1/knowledge-bases", json={"name": "soak"}).json()["data"]["id"]
                for title, content in DOCS.items():
                    client.post(
                        f"/api/v1/knowledge-bases/{kb}/documents?wait=true", json={"title": title, "content": content}
                    ).raise_for_status()
                session = client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb]}).json()["data"]["id"]

            def crash() -> None:
                killed = 0
                for function_id in ("PipelineStepFunction", "StreamReaderFunction", "IngestTurnFunction"):
                    for sandbox in stack.lambdas.sandboxes(function_id):
                        sandbox.kill()
                        killed += 1
                print(f"  crash: {killed} sandboxes killed with SIGKILL")

            def sweep() -> str:
                # EventBridge's schedule, run once: it ends any turn whose workflow died unread.
                report = stack.run_schedule("SweepFunctionEvery5Minutes").json()
                return f"sweep: {len(report['turns_interrupted'])} turns ended of {report['turns_examined']} examined"

            log = DynamoDBStreamManager(stack.table("EventsTable"), 3600)
            target = Target(
                "serverless",
                lambda: stack.api_url,
                key,
                session,
                crash,
                log.events_sync,
                stream_url=lambda: stack.stream_url,
                settle=sweep,
            )
            result = soak(target, scripted, args)
            denied = stack.denials()
            result["denials"] = len(denied)
            return result


def soak(target: Target, scripted: Any, args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    began = time.monotonic()
    turns, crash = run_turns(target, scripted, args, crash_after=max(1, args.turns // 2))
    elapsed = time.monotonic() - began
    # Turns the client saw end may still be writing their message: give the stores a moment to agree.
    time.sleep(1.0)
    settled = target.settle() if target.settle is not None else ""
    result = verify(target, turns, scripted)
    result.update({"crash": crash, "elapsed_s": elapsed, "load": (load_before, os.getloadavg()[0]), "settled": settled})
    return result


def report(name: str, result: dict[str, Any], args: argparse.Namespace) -> None:
    f, ends, stc = result["figures"], result["ends"], result["stop_to_closed_ms"]
    print(f"\n== {name}: {args.turns} turns, {args.concurrency} at a time, crash after {args.turns // 2} ==")
    print(f"turns started                         {f['started']} (not started: {f['not_started']})")
    print(f"ended with exactly one terminal event {f['one_terminal']}")
    print(f"orphans (no terminal event)           {f['orphans']}  (messages not completed: {f['orphans_message']})")
    print(f"several terminal events               {f['several_terminals']}")
    print(f"events written after the terminal one {f['events_after_terminal']}")
    print(
        f"bytes lost / repeated                 {f['bytes_lost']} / {f['bytes_repeated']}"
        f"  (turns whose client text differs: {f['turns_with_text_mismatch']})"
    )
    print(f"messages disagreeing with the stream  {f['messages_disagreeing']}")
    print(f"clients without a terminal frame      {f['clients_without_terminal_frame']}")
    print(f"client drops (resumed)                {f['drops']}")
    print(
        f"turns in flight at the crash          {result['crash'].get('in_flight')}"
        f" (the crash, and the restart where there is one, took {result['crash'].get('restart_s', 0):.1f} s)"
    )
    print("ends                                  " + ", ".join(f"{k} {v}" for k, v in sorted(ends.items())))
    if stc:
        print(
            f"stop → model stream closed (ms)       n={len(stc)} p50 {percentile(stc, 50):.0f}"
            f" p95 {percentile(stc, 95):.0f} max {max(stc):.0f}  (stops sent {f['stops_sent']})"
        )
    else:
        print(f"stop → model stream closed            no measurement (stops sent {f['stops_sent']})")
    if result.get("settled"):
        print(f"after the turns                       {result['settled']}")
    if "denials" in result:
        print(f"calls the deployed roles refused      {result['denials']}")
    print(f"wall time {result['elapsed_s']:.1f} s, load average {result['load'][0]:.1f} → {result['load'][1]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pieces", type=int, default=40)
    parser.add_argument("--piece-delay-ms", type=float, default=40)
    parser.add_argument("--drop-rate", type=float, default=0.3)
    parser.add_argument("--stop-rate", type=float, default=0.15)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--runtime", choices=["embedded", "serverless", "both"], default="both")
    parser.add_argument("--serverless-turns", type=int, default=0, help="turns of the serverless run (else --turns)")
    parser.add_argument(
        "--serverless-concurrency",
        type=int,
        default=4,
        help="turns at a time on the deployed stack (its functions run at most 4 sandboxes each)",
    )
    args = parser.parse_args()

    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    from tests.support.scripted_model import ScriptedModel
    from tests.support.servers import ServerThread

    scripted = ScriptedModel()
    model_server = ServerThread(scripted.app).start()
    scripted.url = model_server.url  # type: ignore[attr-defined]
    print(
        f"soak: {args.turns} turns embedded, {args.serverless_turns or args.turns} serverless, "
        f"{args.pieces} pieces {args.piece_delay_ms:.0f} ms apart, "
        f"drop rate {args.drop_rate}, stop rate {args.stop_rate}, seed {args.seed}; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    try:
        if args.runtime in ("embedded", "both"):
            with tempfile.TemporaryDirectory() as tmp:
                target, stop = embedded_target(scripted, Path(tmp))
                try:
                    report("embedded (ragline serve, kill -9 + restart)", soak(target, scripted, args), args)
                finally:
                    stop()
            scripted._queue.clear()
        if args.runtime in ("serverless", "both"):
            if args.serverless_turns:
                args.turns = args.serverless_turns
            if args.serverless_concurrency:
                args.concurrency = args.serverless_concurrency
            with tempfile.TemporaryDirectory() as tmp:
                result = run_serverless(scripted, args, Path(tmp))
                report("serverless (the deployed stack in moto, every sandbox killed)", result, args)
    finally:
        model_server.stop()


if __name__ == "__main__":
    main()
