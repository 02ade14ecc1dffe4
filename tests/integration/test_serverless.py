"""The serverless runtime end to end: moto executes the generated state machine, Lambda tasks run the
real pipeline_step code, the log, state, sessions and messages live in DynamoDB (moto)."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from ragline.stream.base import stream_key
from ragline.stream.coalesce import coalesce
from tests.support.scripted_model import Script

DOCS = {
    "Coffee brewing": (
        "# Coffee brewing\n\n## Water\n\nBrew coffee with water between 90 and 96 degrees Celsius. "
        "Boiling water extracts bitter compounds.\n\n## Grind\n\nEspresso needs a fine grind."
    ),
    "Tea basics": "# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius for two to three minutes.",
}


@pytest.fixture
def stack(tmp_path, shared_models):
    from tests.support.serverless_inprocess import serverless_stack

    with serverless_stack(tmp_path, shared_models) as stack:
        yield stack


class Client:
    """The ingest_turn/stream_reader FastAPI app over the serverless runtime, and a tenant with a key."""

    def __init__(self, stack):
        self.stack = stack
        tenant, key = stack.create_tenant("acme")
        self.tenant = tenant
        self.http = TestClient(stack.runtime.app(), headers={"X-API-Key": key})

    def kb(self, docs):
        reply = self.http.post("/api/v1/knowledge-bases", json={"name": "drinks"})
        assert reply.status_code == 201, reply.text
        kb_id = reply.json()["data"]["id"]
        for title, content in docs.items():
            added = self.http.post(
                f"/api/v1/knowledge-bases/{kb_id}/documents", json={"title": title, "content": content}
            )
            assert added.status_code == 201, added.text
        return kb_id

    def session(self, kb_ids):
        reply = self.http.post("/api/v1/sessions", json={"knowledge_base_ids": kb_ids})
        assert reply.status_code == 201, reply.text
        return reply.json()["data"]["id"]

    def ask(self, session, query, **options):
        reply = self.http.post(f"/api/v1/sessions/{session}/questions", json={"query": query, **options})
        assert reply.status_code == 202, reply.text
        return reply.json()["data"]

    def log(self, ids):
        return self.stack.runtime.log.events_sync(stream_key(ids["session_id"], ids["assistant_message_id"]))

    def assistant(self, ids):
        messages = self.http.get(f"/api/v1/sessions/{ids['session_id']}/messages").json()["data"]
        return next(m for m in messages if m["id"] == ids["assistant_message_id"])


def _types(events):
    return [e.type.value for e in events]


def _answer(events):
    return "".join(e.content for e in events if e.type.value == "answer")


def test_rag_turn_runs_one_task_per_stage(stack, scripted):
    client = Client(stack)
    session = client.session([client.kb(DOCS)])
    scripted.queue(Script.answer("Use 90 to 96 °C ", '<ref id="c1"/>', "water."))
    ids = client.ask(session, "What water temperature for coffee?")
    execution = stack.wait_for_execution()
    assert execution["status"] == "SUCCEEDED"

    events = client.log(ids)
    types = _types(events)
    assert types[0] == "agent_query"
    assert types[-1] == "complete"
    assert types.index("tool_call") < types.index("tool_result") < types.index("references") < types.index("answer")
    assert [e.seq for e in events] == list(range(len(events)))  # gap-free, no duplicates
    assert "<kb doc=" in _answer(events)
    assistant = client.assistant(ids)
    assert assistant["is_completed"] is True
    assert assistant["content"] == _answer(events)

    entered = [
        e["stateEnteredEventDetails"]["name"]
        for e in stack.history(execution["executionArn"])
        if e["type"].endswith("StateEntered")
    ]
    for stage in (
        "chunk_search_parallel",
        "chunk_search_parallel.branches",
        "chunk_search_parallel.reduce",
        "filter_top_k",
        "into_chat_message",
        "chat_completion_stream",
    ):
        assert stage in entered
    assert [(i.stage, i.phase) for i in stack.invocations if i.phase != "branch"] == [
        ("load_history", "run"),
        ("query_understand", "run"),
        ("chunk_search_parallel", "plan"),
        ("chunk_search_parallel", "reduce"),
        ("chunk_rerank", "run"),
        ("chunk_merge", "run"),
        ("filter_top_k", "run"),
        ("into_chat_message", "run"),
        ("chat_completion_stream", "run"),
    ]


def test_empty_search_goes_to_the_fallback(stack, scripted):
    client = Client(stack)
    session = client.session([client.kb({})])
    scripted.queue(Script.answer("Nothing in the knowledge base covers that."))
    ids = client.ask(session, "Who won the 1930 world cup?")
    assert stack.wait_for_execution()["status"] == "SUCCEEDED"
    events = client.log(ids)
    assert "references" not in _types(events)
    answers = [e for e in events if e.type.value == "answer"]
    assert all(e.data.get("is_fallback") for e in answers)
    assert _types(events)[-1] == "complete"
    assert ("fallback", "fallback") in [(i.stage, i.phase) for i in stack.invocations]
    assert client.assistant(ids)["content"] == "Nothing in the knowledge base covers that."


def test_stop_mid_answer_ends_with_stop_and_keeps_the_partial_answer(stack, scripted):
    client = Client(stack)
    session = client.session([client.kb(DOCS)])
    words = [f"w{i} " for i in range(60)]
    scripted.queue(Script.answer(*words, delay=0.1))
    ids = client.ask(session, "What water temperature for coffee?")
    deadline = time.monotonic() + 30
    while "answer" not in _types(client.log(ids)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    reply = client.http.post(f"/api/v1/sessions/{session}/stop", json={"message_id": ids["assistant_message_id"]})
    assert reply.status_code == 200, reply.text
    stack.wait_for_execution()
    time.sleep(1.0)  # the running step notices the stop at its next poll
    events = client.log(ids)
    types = _types(events)
    stop_at = types.index("stop")
    assert "complete" not in types
    partial = _answer(events[:stop_at])
    assert partial
    assert partial != "".join(words)
    assert client.assistant(ids)["content"] == partial
    assert not scripted.answers[-1].completed  # generation was abandoned, not run to the end


def test_a_failing_model_ends_with_an_error_event(stack, scripted):
    client = Client(stack)
    session = client.session([client.kb(DOCS)])
    scripted.queue(*[Script(status=500)] * 3)
    ids = client.ask(session, "What water temperature for coffee?")
    execution = stack.wait_for_execution()
    assert execution["status"] == "FAILED"
    events = client.log(ids)
    assert _types(events)[-1] == "error"
    assert events[-1].data["stage"] == "chat_completion_stream"
    assert _types(events).count("error") == 1
    assert client.assistant(ids)["is_completed"] is True


def test_an_unexpected_crash_still_writes_a_terminal_error_event(stack, scripted):
    client = Client(stack)
    session = client.session([client.kb(DOCS)])

    def crash(event, run):
        if event["stage"] == "filter_top_k":
            raise RuntimeError("disk on fire")
        return run()

    stack.intercept = crash
    ids = client.ask(session, "What water temperature for coffee?")
    assert stack.wait_for_execution()["status"] == "FAILED"
    events = client.log(ids)
    assert _types(events)[-1] == "error"
    assert "disk on fire" in events[-1].content
    assert ("fail", "fail") in [(i.stage, i.phase) for i in stack.invocations]


def _service_exception():
    from moto.core.exceptions import JsonRESTError

    return JsonRESTError("ServiceException", "Lambda is having a bad day")


def test_a_retried_step_writes_no_duplicate_events(stack, scripted):
    client = Client(stack)
    session = client.session([client.kb(DOCS)])
    failed = []

    def fail_once_after_running(event, run):
        result = run()
        if event["stage"] == "filter_top_k" and not failed:
            failed.append(event)
            raise _service_exception()  # the step ran, but the invocation reports a transient failure
        return result

    stack.intercept = fail_once_after_running
    ids = client.ask(session, "What water temperature for coffee?")
    assert stack.wait_for_execution()["status"] == "SUCCEEDED"
    stages = [(i.stage, i.ok) for i in stack.invocations]
    assert stages.count(("filter_top_k", False)) == 1
    assert stages.count(("filter_top_k", True)) == 1
    events = client.log(ids)
    types = _types(events)
    assert types.count("tool_result") == 2  # query understanding and knowledge search, once each
    assert types.count("references") == 1
    assert types.count("complete") == 1
    assert [e.seq for e in events] == list(range(len(events)))


def test_a_step_that_crashed_after_writing_events_rewrites_the_same_offsets(stack, scripted, monkeypatch):
    from ragline.serverless.state_store import StateStore

    client = Client(stack)
    session = client.session([client.kb(DOCS)])
    original = StateStore.save
    crashed = []
    current = {}

    def track(event, run):
        current["stage"] = event["stage"]
        return run()

    def crash_before_saving(self, ref, state_json, outcome):
        # filter_top_k has written its events (the search window's tool_result) but not its state.
        if not crashed and current.get("stage") == "filter_top_k":
            crashed.append(ref)
            raise _service_exception()
        return original(self, ref, state_json, outcome)

    stack.intercept = track
    monkeypatch.setattr(StateStore, "save", crash_before_saving)
    ids = client.ask(session, "What water temperature for coffee?")
    assert stack.wait_for_execution()["status"] == "SUCCEEDED"
    assert crashed, "the crash was not injected"
    events = client.log(ids)
    types = _types(events)
    assert types.count("tool_result") == 2  # query understanding and knowledge search, once each
    assert types.count("complete") == 1
    assert [e.seq for e in events] == list(range(len(events)))


def test_same_turn_same_events_in_both_runtimes(stack, scripted, tmp_path, shared_models):
    """Parity: the embedded and the serverless runtime write the same events for the same turn."""
    from tests.conftest import start_ragline
    from tests.support.sse import answer_text

    reply = Script.answer("Between 90 and 96 ", '<ref id="c1"/>', " degrees.")
    client = Client(stack)
    session = client.session([client.kb(DOCS)])
    scripted.queue(reply)
    ids = client.ask(session, "What water temperature for coffee?")
    assert stack.wait_for_execution()["status"] == "SUCCEEDED"
    serverless = coalesce(client.log(ids))

    server, embedded = start_ragline(tmp_path / "embedded", shared_models)
    try:
        kb = embedded.create_kb("drinks", DOCS)
        scripted.queue(reply)
        frames = embedded.chat(embedded.session([kb]), "What water temperature for coffee?")
    finally:
        embedded.client.close()
        server.stop()
        embedded.container.close()

    def shape(kind, content, data):
        # Ids, timestamps and durations differ by nature; what the client sees must not.
        volatile = {
            "duration_ms",
            "completed_at",
            "total_duration_ms",
            "session_id",
            "assistant_message_id",
            "request_id",
            "tool_call_id",
            "event_id",
        }
        return kind, content, {k: v for k, v in data.items() if k not in volatile}

    def strip_ids(text):
        import re

        return re.sub(r'(chunk_id|kb_id)="[^"]*"', r'\1=""', text)

    serverless_shape = [shape(e.type.value, strip_ids(e.content), e.data) for e in serverless]
    embedded_shape = [shape(f.type, strip_ids(f.content), f.extra) for f in coalesce_frames(frames)]
    assert serverless_shape == embedded_shape
    assert strip_ids(_answer(serverless)) == strip_ids(answer_text(frames))


def coalesce_frames(frames):
    from ragline.types import StreamEvent

    events = [
        StreamEvent(id=str(f.data.get("id", "")), type=f.type, content=f.content, done=f.done, data=f.extra, seq=f.id)
        for f in frames
    ]
    # The embedded frames carry the request id as frame id; the coalescing key is the event id in data.
    for event, frame in zip(events, frames, strict=True):
        event.id = str(frame.extra.get("event_id", frame.type))
    merged = coalesce(events)

    class F:
        def __init__(self, e):
            self.type, self.content, self.extra = e.type.value, e.content, e.data

    return [F(e) for e in merged]
