"""Turns through the deployed AWS stack: API Gateway → ingest_turn → Step Functions → pipeline_step tasks →
the DynamoDB log → stream_reader's function URL, each function in sandboxes of its own with the environment
and the role template.yaml gives it (tests/support/serverless.py). No knowledge base here: these turns search
nothing (tests/integration/test_aws_knowledge.py searches the real OpenSearch).
"""

from __future__ import annotations

import hashlib
import json
import threading

import httpx
import pytest

from tests.support.lambdas import Result, ServiceError
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Script
from tests.support.serverless import failing_steps, stack_client
from tests.support.sse import answer_text, joined_runs


def _types(events):
    return [e.type.value for e in events]


def _answer(events):
    return "".join(e.content for e in events if e.type.value == "answer")


def _steps(aws, ids, with_errors=False):
    """The pipeline_step invocations of one turn: (stage, phase), or (stage, phase, error)."""
    found = []
    for invoked in aws.stack.lambdas.invocations:
        turn = invoked.event.get("turn", {})
        if (
            invoked.function == "PipelineStepFunction"
            and turn.get("assistant_message_id") == ids["assistant_message_id"]
        ):
            step = (invoked.event["stage"], invoked.event.get("phase", "run"))
            found.append((*step, invoked.error) if with_errors else step)
    return found


def test_a_turn_runs_through_the_deployed_functions(aws, scripted):
    session = aws.session()
    scripted.queue(Script.answer("Hello ", "from ", "AWS."))
    since, invoked_since = len(aws.stack.calls()), len(aws.stack.lambdas.invocations)
    ids = aws.ask(session, "Say hello?")
    assert ids["stream_url"].startswith(aws.stack.stream_url)  # the function URL, from ingest_turn's environment
    frames = aws.frames(ids)
    assert frames[0].type == "agent_query"
    assert frames[-1].type == "complete"
    assert answer_text(frames) == "Hello from AWS."
    assert aws.wait(ids)["status"] == "SUCCEEDED"
    assert aws.assistant(ids)["content"] == "Hello from AWS."
    assert aws.assistant(ids)["is_completed"] is True
    # The title is written by pipeline_step while the turn runs (UpdateItem on the sessions table).
    title = aws.api.get(f"/api/v1/sessions/{session}").json()["data"]["title"]
    assert title == "Scripted title"
    # The chat API key came from SSM through pipeline_step's own grant.
    assert scripted.answers[-1].body["model"] == "scripted"
    calls = [c for c in aws.stack.calls() if c.action == "ssm:GetParameter"]
    assert {c.function for c in calls} >= {"PipelineStepFunction"}
    assert all(c.resource.endswith("parameter/ragtest/chat-api-key") for c in calls)
    # The call log says what each call wrote and read (what the cost benchmark bills), and every function's
    # invocations are timed, stream_reader's whole streamed response included.
    events = aws.stack.refs["EventsTable"]
    turn = aws.stack.calls()[since:]
    puts = [c for c in turn if c.action == "dynamodb:PutItem" and c.resource.endswith(f"/{events}")]
    assert puts
    assert all(c.bytes > 0 and c.units >= 1 for c in puts)
    reads = [c for c in turn if c.action in ("dynamodb:Query", "dynamodb:GetItem")]
    assert reads
    assert all(c.units >= 0.5 and c.bytes >= 0 for c in reads)
    timed = {i.function for i in aws.stack.lambdas.invocations[invoked_since:] if i.ms > 0}
    assert timed >= {"IngestTurnFunction", "PipelineStepFunction", "StreamReaderFunction"}


def test_stop_sent_to_the_stream_url_ends_the_turn_with_stop(aws, scripted):
    session = aws.session()
    # Long enough that the stop lands mid-answer however busy the machine is; the stop cuts it short.
    words = [f"w{i} " for i in range(600)]
    scripted.queue(Script.answer(*words, delay=0.1))
    ids = aws.ask(session, "Count slowly?")
    wait_until(lambda: "answer" in _types(aws.log(ids)), timeout=60)
    reply = aws.stream.post(f"api/v1/sessions/{session}/stop", json={"message_id": ids["assistant_message_id"]})
    assert reply.status_code == 200, reply.text
    # AWS reports ABORTED after StopExecution; moto lets the running task fail the execution instead (its
    # Catch is skipped once the execution is stopped). What the client sees is the same: the log ends with stop.
    aws.wait(ids)
    # The stop route wrote ``stop`` before it answered; the step streaming the model notices the flag at its
    # next poll (a running Lambda is not interrupted), so on a busy machine a last batch may land after it.
    events = aws.log(ids)
    types = _types(events)
    assert types.count("stop") == 1
    assert "complete" not in types
    assert "error" not in types
    assert any(c.action == "states:StopExecution" and c.function == "StreamReaderFunction" for c in aws.stack.calls())
    partial = _answer(events[: types.index("stop")])
    assert partial
    assert partial != "".join(words)
    wait_until(lambda: aws.assistant(ids)["content"] == partial)
    frames = aws.frames(ids)
    assert frames[-1].type == "stop"


def test_a_question_asked_again_after_its_accept_died_before_the_start_is_answered(aws, scripted):
    """ingest_turn stored the turn and its ``agent_query``, then StartExecution failed (the accept died
    between the two); the client asks again with the same request id: the same turn, now started."""
    session = aws.session()
    body = {"query": "Are you there?", "request_id": "asked-twice"}
    with aws.stack.fault("IngestTurnFunction", "states:StartExecution", effect="error:ServiceUnavailable"):
        first = aws.api.post(f"/api/v1/sessions/{session}/questions", json=body)
    assert first.status_code >= 500, first.text
    scripted.queue(Script.answer("Here ", "I am."))
    ids = aws.ask(session, "Are you there?", request_id="asked-twice")
    frames = aws.frames(ids)
    assert [f.type for f in frames].count("agent_query") == 1
    assert frames[-1].type == "complete"
    assert answer_text(frames) == "Here I am."
    assert aws.wait(ids)["status"] == "SUCCEEDED"
    again = aws.ask(session, "Are you there?", request_id="asked-twice")
    assert again["assistant_message_id"] == ids["assistant_message_id"]
    name = "turn-" + hashlib.sha1(f"{session}:asked-twice".encode()).hexdigest()[:40]
    assert [e["name"] for e in aws.stack.executions()].count(name) == 1
    assert _types(aws.log(ids)).count("complete") == 1


def test_a_stop_with_no_reader_closes_the_model_stream_in_the_deployed_step(aws, scripted):
    """Nobody reads the turn; the model pauses 15 s before each piece after the fifth. The stop, sent during
    a pause, reaches the model through the flag the running pipeline_step polls, without waiting for the
    model's next piece (a running Lambda cannot be interrupted from outside)."""
    session = aws.session()
    words = [f"word{i} " for i in range(25)]
    script = Script.answer(*words, delay=0.05)
    for piece in script.pieces[5:]:
        piece.delay = 15.0
    scripted.queue(script)
    ids = aws.ask(session, "Count slowly?")
    wait_until(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 5, timeout=60)
    answer = scripted.answers[-1]
    reply = aws.stream.post(f"api/v1/sessions/{session}/stop", json={"message_id": ids["assistant_message_id"]})
    assert reply.json()["data"]["status"] == "stopped"
    wait_until(lambda: answer.closed_early, timeout=10)  # within the pause: the next piece is 15 s away
    assert not answer.completed
    assert answer.pieces_sent < len(words)
    aws.wait(ids)
    assert [e.type.value for e in aws.log(ids) if e.is_terminal] == ["stop"]


def test_a_failing_model_ends_with_one_error_event(aws, scripted):
    session = aws.session()
    scripted.queue(*[Script(status=500)] * 3)
    ids = aws.ask(session, "Will this fail?")
    assert aws.wait(ids)["status"] == "FAILED"
    events = aws.log(ids)
    assert _types(events)[-1] == "error"
    assert _types(events).count("error") == 1
    assert events[-1].data["stage"] == "chat_completion_stream"
    assert aws.assistant(ids)["is_completed"] is True
    assert aws.frames(ids)[-1].type == "error"


def test_a_crashed_step_still_ends_the_turn_with_an_error(aws, scripted):
    session = aws.session()

    def crash(event, run):
        if event["stage"] == "load_history":
            # What Lambda reports when the handler raises: a function error with the exception's type.
            return Result(b'{"errorType": "RuntimeError", "errorMessage": "disk on fire"}', "Unhandled")
        return run()

    aws.stack.lambdas.around("PipelineStepFunction", crash)
    ids = aws.ask(session, "Does this crash?")
    assert aws.wait(ids)["status"] == "FAILED"
    events = aws.log(ids)
    assert _types(events)[-1] == "error"
    assert "disk on fire" in events[-1].content
    assert ("fail", "fail") in _steps(aws, ids)


def test_a_step_retried_after_a_lambda_failure_writes_no_duplicate_events(aws, scripted):
    session = aws.session()
    failed = []

    def fail_once_after_running(event, run):
        result = run()
        if event["stage"] == "load_history" and not failed:
            failed.append(event)
            raise ServiceError("ServiceException", "Lambda is having a bad day")  # the step ran; Invoke failed
        return result

    aws.stack.lambdas.around("PipelineStepFunction", fail_once_after_running)
    scripted.queue(Script.answer("Once ", "only."))
    ids = aws.ask(session, "Retry me?")
    assert aws.wait(ids)["status"] == "SUCCEEDED"
    assert failed
    steps = _steps(aws, ids, with_errors=True)
    assert steps.count(("load_history", "run", "ServiceException")) == 1
    assert steps.count(("load_history", "run", None)) == 1
    events = aws.log(ids)
    assert _types(events).count("complete") == 1
    assert [e.seq for e in events] == list(range(len(events)))
    assert _answer(events) == "Once only."


def test_denied_calls_are_reported_and_a_refused_title_leaves_the_turn_answered(aws_stack, scripted):
    """The checker works: without the SessionTitle grant, pipeline_step's title write is refused, reported with
    function, action and resource. The turn is answered all the same (a title is never worth a failed turn,
    as it was before), untitled, and the function's log names the refused call."""
    statements = aws_stack.resolver.role_statements("PipelineStepFunctionRole")
    without_title = [s for s in statements if s.get("Sid") != "SessionTitle"]
    assert len(without_title) == len(statements) - 1
    since = len(aws_stack.calls())
    _, key = aws_stack.create_tenant("denied")
    scripted.queue(Script.answer("Untitled ", "but ", "answered."))
    with (
        aws_stack.role_statements("PipelineStepFunction", without_title),
        httpx.Client(base_url=aws_stack.api_url, headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT) as api,
    ):
        session = api.post("/api/v1/sessions", json={"knowledge_base_ids": []}).json()["data"]["id"]
        ids = api.post(f"/api/v1/sessions/{session}/questions", json={"query": "Title this?"}).json()["data"]
        arn = aws_stack.execution_of(ids["session_id"], ids["assistant_message_id"])
        assert aws_stack.wait_for_execution(arn)["status"] == "SUCCEEDED"
        logs = aws_stack.logs("PipelineStepFunction")
        stored = api.get(f"/api/v1/sessions/{session}").json()["data"]
        messages = api.get(f"/api/v1/sessions/{session}/messages").json()["data"]
    sessions_table = aws_stack.resolver.get_att("SessionsTable", "Arn")
    denied = {(c.function, c.action, c.resource) for c in aws_stack.denials(since)}
    assert denied == {("PipelineStepFunction", "dynamodb:UpdateItem", sessions_table)}
    with pytest.raises(AssertionError, match=f"PipelineStepFunction: dynamodb:UpdateItem on {sessions_table}"):
        aws_stack.assert_no_denials(since)
    answer = next(m for m in messages if m["id"] == ids["assistant_message_id"])
    assert answer["content"] == "Untitled but answered."
    assert stored["title"] != "Scripted title"
    line = next(json.loads(x) for x in logs.splitlines() if "session title not stored" in x)
    assert (line["level"], line["operation"], line["error_code"]) == ("ERROR", "UpdateItem", "AccessDeniedException")


def test_a_refused_memory_write_leaves_the_turn_answered_and_says_so(aws_stack, scripted):
    """Without the LongTermMemory grant the memory extracted after an answer cannot be stored: the turn is
    answered and completed, and the log names the refused call."""
    statements = aws_stack.resolver.role_statements("PipelineStepFunctionRole")
    without_memory = [s for s in statements if s.get("Sid") != "LongTermMemory"]
    assert len(without_memory) == len(statements) - 1
    since = len(aws_stack.calls())
    _, key = aws_stack.create_tenant("forgetful")
    scripted.memory_extraction = Script.answer('["The user works at Acme Rockets."]')
    scripted.queue(Script.answer("Noted."))
    headers = {"X-API-Key": key, "X-User-Id": "ana"}
    try:
        with (
            aws_stack.role_statements("PipelineStepFunction", without_memory),
            httpx.Client(base_url=aws_stack.api_url, headers=headers, timeout=60) as api,
        ):
            session = api.post("/api/v1/sessions", json={"knowledge_base_ids": []}).json()["data"]["id"]
            body = {"query": "I work at Acme Rockets.", "memory_enabled": True}
            ids = api.post(f"/api/v1/sessions/{session}/questions", json=body).json()["data"]
            arn = aws_stack.execution_of(ids["session_id"], ids["assistant_message_id"])
            assert aws_stack.wait_for_execution(arn)["status"] == "SUCCEEDED"
            logs = aws_stack.logs("PipelineStepFunction")
            messages = api.get(f"/api/v1/sessions/{session}/messages").json()["data"]
            memories = api.get("/api/v1/memories").json()["data"]
    finally:
        scripted.memory_extraction = Script.answer("[]")
    answer = next(m for m in messages if m["id"] == ids["assistant_message_id"])
    assert (answer["content"], answer["is_completed"]) == ("Noted.", True)
    assert memories == []
    knowledge = aws_stack.resolver.get_att("KnowledgeTable", "Arn")
    denied = {(c.function, c.action, c.resource) for c in aws_stack.denials(since)}
    assert denied
    assert all(d[0] == "PipelineStepFunction" and d[2] == knowledge for d in denied)
    line = next(json.loads(x) for x in logs.splitlines() if "memories not stored" in x)
    assert line["level"] == "ERROR"
    assert line["error_code"] == "AccessDeniedException"
    assert line["session_id"] == ids["session_id"]


def _reader_ends_an_orphaned_turn(aws, **environment):
    """A turn whose workflow died with nothing written, read with the reader checking after 1 s idle."""
    session = aws.session()
    aws.stack.lambdas.around("PipelineStepFunction", failing_steps("load_history", "fail"))
    ids = aws.ask(session, "Is anyone checking?")
    assert aws.wait(ids)["status"] == "FAILED"
    assert "error" not in _types(aws.log(ids))
    with aws.stack.function_environment("StreamReaderFunction", RAGLINE_EXECUTION_CHECK_S="1", **environment):
        frames = aws.frames(ids)
        logs = aws.stack.logs("StreamReaderFunction")
    return ids, frames, logs


def test_a_reader_refused_describe_execution_ends_the_turn_once_and_logs_the_call(aws_stack, scripted):
    """Without stream_reader's WatchTurn grant, DescribeExecution is refused: the reader cannot tell whether the
    turn still runs, and a refusal will not pass by waiting. It ends the turn with one interrupted error (cause
    unverifiable) at its first check, instead of pinging until its 840 s limit, and logs the refused call."""
    statements = aws_stack.resolver.role_statements("StreamReaderFunctionRole")
    without_watch = [s for s in statements if s.get("Sid") != "WatchTurn"]
    assert len(without_watch) == len(statements) - 1
    since = len(aws_stack.calls())
    with aws_stack.role_statements("StreamReaderFunction", without_watch), stack_client(aws_stack) as aws:
        try:
            ids, frames, logs = _reader_ends_an_orphaned_turn(aws)
        finally:
            aws_stack.lambdas.around("PipelineStepFunction", None)
        assert frames[-1].type == "error"
        assert (frames[-1].extra["reason"], frames[-1].extra["cause"]) == ("interrupted", "unverifiable")
        assert frames[-1].extra["execution_status"] == "UNKNOWN"
        assert _types(aws.log(ids)).count("error") == 1
        assert aws.assistant(ids)["is_completed"] is True
    denied = {(c.function, c.action) for c in aws_stack.denials(since)}
    assert denied == {("StreamReaderFunction", "states:DescribeExecution")}
    line = next(json.loads(x) for x in logs.splitlines() if "could not read the turn's execution status" in x)
    assert (line["operation"], line["error_code"], line["ending_turn"]) == (
        "DescribeExecution",
        "AccessDeniedException",
        True,
    )


def test_a_reader_throttled_past_its_retries_ends_the_turn_once(aws, scripted):
    """DescribeExecution throttled at every check: after three failed checks in a row the reader ends the turn
    with one interrupted error (cause unverifiable) rather than waiting on pings, and logs each failed call."""
    with aws.stack.fault(
        "StreamReaderFunction", "states:DescribeExecution", effect="error:ThrottlingException", repeat=True
    ):
        ids, frames, logs = _reader_ends_an_orphaned_turn(aws)
    assert frames[-1].type == "error"
    assert (frames[-1].extra["reason"], frames[-1].extra["cause"]) == ("interrupted", "unverifiable")
    assert _types(aws.log(ids)).count("error") == 1
    failed = [json.loads(x) for x in logs.splitlines() if "could not read the turn's execution status" in x]
    assert [(f["error_code"], f["failed_checks"], f["ending_turn"]) for f in failed[-3:]] == [
        ("ThrottlingException", 1, False),
        ("ThrottlingException", 2, False),
        ("ThrottlingException", 3, True),
    ]


def test_a_step_that_timed_out_before_saving_its_state_is_retried_on_the_same_offsets(aws, scripted):
    """load_history's sandbox dies at its state write (Sandbox.Timedout): the retry, in a fresh sandbox,
    runs the stage again from the previous state and the log keeps one copy of everything."""
    session = aws.session()
    scripted.queue(Script.answer("After ", "a ", "timeout."))
    state_table = aws.stack.refs["StateTable"]
    with aws.stack.fault("PipelineStepFunction", "dynamodb:PutItem", resource=state_table, params='"v#000001"'):
        ids = aws.ask(session, "Time out once?")
        assert aws.wait(ids)["status"] == "SUCCEEDED"
    steps = _steps(aws, ids, with_errors=True)
    assert ("load_history", "run", "Sandbox.Timedout") in steps
    assert steps.count(("load_history", "run", None)) == 1
    events = aws.log(ids)
    assert [e.seq for e in events] == list(range(len(events)))
    assert _types(events).count("complete") == 1
    assert _answer(events) == "After a timeout."


def test_a_streaming_step_that_timed_out_ends_with_an_error_not_a_second_answer(aws, scripted):
    """The model's words cannot be generated twice the same: a timed-out streaming step is not retried, the
    workflow ends the turn with one error after the words already sent."""
    session = aws.session()
    scripted.queue(Script.answer(*[f"s{i} " for i in range(30)], delay=0.02))
    events_table = aws.stack.refs["EventsTable"]
    with aws.stack.fault("PipelineStepFunction", "dynamodb:PutItem", resource=events_table, params="s1"):
        ids = aws.ask(session, "Stream then die?")
        assert aws.wait(ids)["status"] == "FAILED"
    steps = _steps(aws, ids, with_errors=True)
    assert steps.count(("chat_completion_stream", "run", "Sandbox.Timedout")) == 1
    assert ("chat_completion_stream", "run", None) not in steps
    events = aws.log(ids)
    types = _types(events)
    assert types[-1] == "error"
    assert types.count("error") == 1
    assert "complete" not in types
    assert [e.seq for e in events] == list(range(len(events)))
    assert aws.frames(ids)[-1].type == "error"


def test_a_tenant_created_with_the_cli_reaches_the_deployed_api(aws_stack, tmp_path):
    """``ragline tenant create NAME --aws TABLE`` from an operator's shell, against the stack's account."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": aws_stack.moto_url,
        "AWS_ACCESS_KEY_ID": "operator",
        "AWS_SECRET_ACCESS_KEY": "operator",
        "AWS_DEFAULT_REGION": "us-east-1",
        "RAGLINE_DATA_DIR": str(tmp_path),
    }
    ragline = Path(sys.executable).with_name("ragline")
    table = aws_stack.refs["TenantsTable"]
    done = subprocess.run(
        [str(ragline), "tenant", "create", "operator-made", "--aws", table],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    key = done.stdout.strip().splitlines()[-1]
    assert not (tmp_path / "ragline.db").exists()  # nothing written locally
    with httpx.Client(base_url=aws_stack.api_url, headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT) as api:
        created = api.post("/api/v1/knowledge-bases", json={"name": "ops"})
        assert created.status_code == 201, created.text
        assert api.get("/api/v1/knowledge-bases").json()["data"][0]["name"] == "ops"
    with httpx.Client(base_url=aws_stack.api_url, headers={"X-API-Key": key + "x"}, timeout=CLIENT_TIMEOUT) as api:
        assert api.get("/api/v1/knowledge-bases").status_code == 401


def test_a_reader_ends_a_turn_whose_workflow_died_without_a_terminal_event(aws, scripted):
    """fail_turn itself fails: the execution ends FAILED with nothing written. The reader waiting on the log
    notices the execution's status and serves one terminal error (reason interrupted) within its check."""
    session = aws.session()

    aws.stack.lambdas.around("PipelineStepFunction", failing_steps("load_history", "fail"))
    ids = aws.ask(session, "Will anyone notice?")
    assert aws.wait(ids)["status"] == "FAILED"
    assert "error" not in _types(aws.log(ids))  # nothing wrote the end
    # The reader ends the stream by itself (the client's read timeout, 60 s, would fail the test otherwise):
    # after one idle interval it asks the workflow (DescribeExecution, below) and serves the end. The interval
    # is 1 s here instead of the deployed 10 s (the same variable, set as a redeploy would).
    with aws.stack.function_environment("StreamReaderFunction", RAGLINE_EXECUTION_CHECK_S="1"):
        frames = aws.frames(ids)
    assert frames[-1].type == "error"
    # The same interrupted error as the sweep's and the embedded server's: reason, cause, partial.
    assert frames[-1].extra["reason"] == frames[-1].extra["error_type"] == "interrupted"
    assert frames[-1].extra["cause"] == "runner_lost"
    assert frames[-1].extra["partial"] is False
    assert frames[-1].extra["execution_status"] == "FAILED"
    types = _types(aws.log(ids))
    assert types.count("error") == 1
    assert aws.assistant(ids)["is_completed"] is True
    assert aws.frames(ids)[-1].type == "error"  # and a second reader gets the same end at once
    assert any(
        c.action == "states:DescribeExecution" and c.function == "StreamReaderFunction" for c in aws.stack.calls()
    )


def test_a_reader_ends_a_turn_whose_execution_was_stopped_between_two_steps(aws, scripted):
    """A StopExecution that lands between two steps, with no stop in the log (stopped from the console, or a
    stop whose own write was lost): the execution is ABORTED, nothing writes the end. The reader notices the
    status and serves one terminal error."""
    session = aws.session()
    stopped: list[str] = []

    def stop_before_the_answer(event, run):
        if event["stage"] == "load_history" and not stopped:
            arn = aws.stack.execution_of(session, event["turn"]["assistant_message_id"])
            aws.stack.client("stepfunctions").stop_execution(executionArn=arn, cause="operator")
            stopped.append(arn)
        return run()  # the step ends well; the workflow goes no further

    aws.stack.lambdas.around("PipelineStepFunction", stop_before_the_answer)
    ids = aws.ask(session, "Will the stop be noticed?")
    assert aws.wait(ids)["status"] == "ABORTED"
    assert not {"stop", "error", "complete"} & set(_types(aws.log(ids)))  # nothing wrote the end
    with aws.stack.function_environment("StreamReaderFunction", RAGLINE_EXECUTION_CHECK_S="1"):  # 10 s deployed
        frames = aws.frames(ids)
    assert frames[-1].type == "error"
    assert frames[-1].extra["reason"] == "interrupted"
    assert (frames[-1].extra["cause"], frames[-1].extra["execution_status"]) == ("runner_lost", "ABORTED")
    assert _types(aws.log(ids)).count("error") == 1
    assert aws.assistant(ids)["is_completed"] is True


def test_stream_reader_serves_the_stream_routes_alone_and_uses_every_grant_of_its_role(aws, scripted):
    """stream_reader's function URL answers the stream's routes (follow by offset, continue-stream, stop,
    health) and nothing else of the API; following, stopping and watching a turn need every statement its
    role has, and nothing more (a call beyond them fails the test through the grant check)."""
    from tests.support.grants import IamRequest, Policy
    from tests.support.sse import read_frames

    since = len(aws.stack.calls())
    session = aws.session()
    assert aws.stream.get("healthz").json()["status"] == "ok"
    for method, path in (
        ("GET", ""),
        ("GET", "api/v1/knowledge-bases"),
        ("POST", "api/v1/knowledge-bases"),
        ("GET", f"api/v1/sessions/{session}"),
        ("POST", f"api/v1/sessions/{session}/questions"),
        ("POST", f"api/v1/knowledge-chat/{session}"),
        ("GET", f"api/v1/messages/{session}/load"),
        ("GET", "docs"),
    ):
        reply = aws.stream.request(method, path, json={"query": "q", "name": "n"} if method == "POST" else None)
        assert reply.status_code == 404, (method, path, reply.status_code)

    # Follow one turn with WeKnora's continue-stream, from an offset.
    scripted.queue(Script.answer("One ", "two."))
    ids = aws.ask(session, "Count to two?")
    frames = read_frames(
        aws.stream,
        "GET",
        f"api/v1/sessions/continue-stream/{session}",
        params={"message_id": ids["assistant_message_id"]},
    )
    assert frames[-1].type == "complete"
    assert answer_text(frames) == "One two."
    # From an event no read joins to its neighbours (a read that catches up joins the answer's chunks in the log).
    pivot = next(f.id for f in frames[2:] if f.done or f.type not in {"answer", "thinking"})
    later = aws.frames(ids, params={"offset": pivot})
    assert later[0].id == pivot
    assert later[-1].id == frames[-1].id
    assert _runs(later) == _runs([f for f in frames if f.id >= pivot])

    # Stop a second one while it streams (the stop flag, StopExecution, the stop event, the partial answer).
    scripted.queue(Script.answer(*[f"w{i} " for i in range(600)], delay=0.1))
    slow = aws.ask(session, "Count slowly?")
    wait_until(lambda: "answer" in _types(aws.log(slow)), timeout=60)
    stopped = aws.stream.post(f"api/v1/sessions/{session}/stop", json={"message_id": slow["assistant_message_id"]})
    assert stopped.json()["data"]["status"] == "stopped"
    aws.wait(slow)

    # A third whose workflow dies without an end: the reader asks the workflow, and ends it.
    aws.stack.lambdas.around("PipelineStepFunction", failing_steps("load_history", "fail"))
    lost = aws.ask(session, "Lost?")
    assert aws.wait(lost)["status"] == "FAILED"
    assert aws.frames(lost)[-1].extra["reason"] == "interrupted"

    # A web-app user's token (not an API key): the reader verifies it with the token-signing secret, and the
    # session, another tenant's, reads as absent.
    with httpx.Client(base_url=aws.stack.api_url, timeout=CLIENT_TIMEOUT) as anonymous:
        user = {"username": "grace", "email": "grace@example.com", "password": "Passw0rd2024"}
        assert anonymous.post("/api/v1/auth/register", json=user).status_code == 201
        login = anonymous.post("/api/v1/auth/login", json={"email": user["email"], "password": user["password"]})
        assert login.status_code == 200, login.text
    followed = aws.stream.get(
        f"api/v1/sessions/continue-stream/{session}",
        params={"message_id": ids["assistant_message_id"]},
        headers={"Authorization": f"Bearer {login.json()['token']}", "X-API-Key": ""},
    )
    assert followed.status_code == 404, followed.text

    calls = [c for c in aws.stack.calls()[since:] if c.function == "StreamReaderFunction"]
    assert calls
    assert all(c.allowed for c in calls)
    unused = []
    for statement in aws.stack.resolver.role_statements("StreamReaderFunctionRole"):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if all(a.split(":")[0] in ("logs", "xray") for a in actions):
            continue  # the Lambda runtime's own (logs, traces), not the app's
        policy = Policy([statement])
        if not any(policy.allows(IamRequest(c.action, c.resource)) for c in calls):
            unused.append(statement.get("Sid") or statement["Resource"])
    assert not unused, f"stream_reader's role grants what its routes never use: {unused}"


def test_the_scheduled_sweep_ends_the_orphaned_turns_nobody_reads(aws, scripted):
    """EventBridge runs the sweep function every 5 minutes: it ends, with one ``error`` (interrupted,
    runner_lost), the turns whose workflow ended without a terminal event and the turns never started, and
    leaves the running ones alone; a second sweep changes nothing."""
    from datetime import UTC, datetime, timedelta

    from ragline.store.dynamodb import DynamoSessionStore

    session = aws.session()

    def everything_fails(event, run):
        if event["turn"]["request_id"] == "orphan" and event["stage"] in ("load_history", "fail"):
            return Result(b'{"errorType": "RuntimeError", "errorMessage": "lost"}', "Unhandled")
        return run()

    aws.stack.lambdas.around("PipelineStepFunction", everything_fails)
    orphan = aws.ask(session, "Will anyone notice?", request_id="orphan")
    assert aws.wait(orphan)["status"] == "FAILED"
    assert "error" not in _types(aws.log(orphan))  # nothing wrote its end, and nobody reads it

    scripted.queue(Script.answer(*[f"w{i} " for i in range(600)], delay=0.1))
    running = aws.ask(session, "Count slowly?")
    wait_until(lambda: "answer" in _types(aws.log(running)), timeout=60)

    # Two turns whose execution was never started (the accept step died after writing the messages): one
    # past the grace an accept request could take, one within it.
    store = DynamoSessionStore(aws.stack.table("SessionsTable"), aws.stack.table("MessagesTable"))
    stored = store.session(aws.tenant.id, session)
    _, never_started = store.create_turn(stored, "never-started", "Lost before starting?")
    _, just_accepted = store.create_turn(stored, "just-accepted", "Starting now?")
    long_ago = (datetime.now(UTC) - timedelta(minutes=10)).isoformat(timespec="milliseconds")
    aws.stack.table("MessagesTable").update_item(
        Key={"session_id": session, "id": never_started.id},
        UpdateExpression="SET created_at = :c",
        ExpressionAttributeValues={":c": long_ago},
    )

    result = aws.stack.run_schedule("SweepFunctionEvery5Minutes")
    assert result.function_error is None, result.payload
    report = result.json()
    ended = {key.split("#", 1)[1] for key in report["turns_interrupted"]}
    assert ended == {orphan["assistant_message_id"], never_started.id}
    assert report["turns_running"] >= 2  # the streaming turn and the one just accepted

    for message_id in (orphan["assistant_message_id"], never_started.id):
        ids = {"session_id": session, "assistant_message_id": message_id}
        events = aws.log(ids)
        assert _types(events).count("error") == 1
        assert events[-1].type.value == "error"
        assert events[-1].data["reason"] == "interrupted"
        assert events[-1].data["cause"] == "runner_lost"
        assert aws.assistant(ids)["is_completed"] is True
        assert aws.frames(ids)[-1].type == "error"  # a reader arriving later gets the end at once
    assert "error" not in _types(aws.log(running))
    assert not aws.assistant({"session_id": session, "assistant_message_id": just_accepted.id})["is_completed"]

    again = aws.stack.run_schedule("SweepFunctionEvery5Minutes").json()
    assert again["turns_interrupted"] == []
    assert again["turns_examined"] <= report["turns_examined"] - 2  # ended turns leave the index of open turns

    stopped = aws.stream.post(f"api/v1/sessions/{session}/stop", json={"message_id": running["assistant_message_id"]})
    assert stopped.json()["data"]["status"] == "stopped"
    aws.wait(running)
    sweep_calls = {c.action for c in aws.stack.calls() if c.function == "SweepFunction"}
    assert "dynamodb:Scan" not in sweep_calls
    assert "states:DescribeExecution" in sweep_calls


# ------------------------------------------------------------------------------ one generation per answer
def _in_background(run):
    """Run an invocation on a thread of its own: the sandbox goes on with it whatever its caller does next."""
    done: dict[str, Result] = {}
    thread = threading.Thread(target=lambda: done.setdefault("result", run()), daemon=True)
    thread.start()
    return thread, done


def _streaming_sandbox(aws, message_id):
    """The pipeline_step sandbox running the streaming step of this turn."""
    for sandbox in aws.stack.lambdas.sandboxes("PipelineStepFunction"):
        current = sandbox.current
        if current is not None and message_id.encode() in current.payload:
            return sandbox
    return None


def test_a_transient_error_while_the_answer_streams_leaves_one_generation(aws, scripted):
    """Step Functions sees Lambda.ServiceException while the first attempt of the streaming step still runs (a
    RequestResponse invocation whose caller's call failed is not cancelled) and retries it: the retry waits
    for the first attempt's outcome instead of asking the model again, so the log, the stream and the stored
    message hold one generation (before, the two attempts' words were spliced at the same offsets)."""
    session = aws.session()
    first = [f"a{i} " for i in range(200)]
    scripted.queue(Script.answer(*first, delay=0.05), Script.answer(*[f"b{i} " for i in range(40)]))
    answers_before = len(scripted.answers)
    running = []
    retried_while_running = []

    def fail_while_it_runs(event, run):
        if event["stage"] != "chat_completion_stream":
            return run()
        if running:
            retried_while_running.append(running[0][0].is_alive())
            return run()
        running.append(_in_background(run))
        turn = event["turn"]
        ids = {"session_id": turn["session_id"], "assistant_message_id": turn["assistant_message_id"]}
        wait_until(lambda: "answer" in _types(aws.log(ids)), timeout=60)
        raise ServiceError("ServiceException", "Lambda is having a bad day")  # the first attempt goes on

    aws.stack.lambdas.around("PipelineStepFunction", fail_while_it_runs)
    try:
        ids = aws.ask(session, "Spliced?")
        assert aws.wait(ids)["status"] == "SUCCEEDED"
        running[0][0].join(120)
        assert retried_while_running == [True]
        steps = _steps(aws, ids, with_errors=True)
        assert ("chat_completion_stream", "run", "ServiceException") in steps
        assert ("chat_completion_stream", "run", None) in steps  # the retry ran, and waited
        events = aws.log(ids)
        types = _types(events)
        assert [e.seq for e in events] == list(range(len(events)))
        assert [t for t in types if t in ("complete", "error", "stop")] == ["complete"]
        assert _answer(events) == "".join(first)
        assert answer_text(aws.frames(ids)) == "".join(first)
        assert aws.assistant(ids)["content"] == "".join(first)
        assert len(scripted.answers) == answers_before + 1  # the model was asked once
    finally:
        scripted.clear()


def test_a_retry_after_the_streaming_attempt_died_answers_or_ends_the_turn_once(aws, scripted):
    """The first attempt's sandbox dies while Step Functions retries (its call failed with a Lambda service
    error): the retry waits for the dead attempt's lease to run out, then takes the answer over. Died before
    any word reached the log: the retry answers. Died mid-answer: one error (interrupted, partial) after the
    words sent, and no second generation."""
    from ragline.serverless.answer_owner import OWNER_ITEM_PREFIX

    def expire_lease(turn_key):
        # The dead attempt's lease, as its expiry would leave it (the lease is 10 s deployed).
        table = aws.stack.table("StateTable")
        items = table.query(
            KeyConditionExpression="#t = :t AND begins_with(#i, :o)",
            ExpressionAttributeNames={"#t": "turn", "#i": "item"},
            ExpressionAttributeValues={":t": turn_key, ":o": OWNER_ITEM_PREFIX},
            ConsistentRead=True,
        )["Items"]
        assert len(items) == 1, items
        table.update_item(
            Key={"turn": turn_key, "item": items[0]["item"]},
            UpdateExpression="SET lease_until_ms = :past",
            ExpressionAttributeValues={":past": 0},
        )

    def die_while_streaming(words_first):
        killed = []
        asked_before = len(scripted.answers)

        def wrapper(event, run):
            if event["stage"] != "chat_completion_stream" or killed:
                return run()
            turn = event["turn"]
            ids = {"session_id": turn["session_id"], "assistant_message_id": turn["assistant_message_id"]}
            thread, _ = _in_background(run)
            if words_first:
                wait_until(lambda: "answer" in _types(aws.log(ids)), timeout=60)
            else:
                wait_until(lambda: len(scripted.answers) > asked_before, timeout=60)  # the model was asked
            sandbox = wait_until(lambda: _streaming_sandbox(aws, turn["assistant_message_id"]), timeout=10)
            sandbox.kill()
            thread.join(30)
            killed.append(ids)
            expire_lease(f"{turn['session_id']}#{turn['assistant_message_id']}")
            raise ServiceError("ServiceException", "Lambda is having a bad day")  # and the sandbox died

        return wrapper

    session = aws.session()
    try:
        # Died before its first word: the retry answers, once.
        slow_start = Script.answer(*[f"never{i} " for i in range(5)])
        slow_start.pieces[0].delay = 600.0
        scripted.queue(slow_start, Script.answer("Second ", "attempt."))
        aws.stack.lambdas.around("PipelineStepFunction", die_while_streaming(words_first=False))
        ids = aws.ask(session, "Died early?")
        assert aws.wait(ids)["status"] == "SUCCEEDED"
        events = aws.log(ids)
        assert [e.type.value for e in events if e.is_terminal] == ["complete"]
        assert _answer(events) == "Second attempt."
        assert aws.assistant(ids)["content"] == "Second attempt."
        assert answer_text(aws.frames(ids)) == "Second attempt."

        # Died mid-answer: the words sent stay, the turn ends with one interrupted error.
        first = [f"a{i} " for i in range(400)]
        scripted.queue(Script.answer(*first, delay=0.05), Script.answer(*[f"b{i} " for i in range(40)]))
        answers_before = len(scripted.answers)
        aws.stack.lambdas.around("PipelineStepFunction", die_while_streaming(words_first=True))
        ids = aws.ask(session, "Died mid-answer?")
        assert aws.wait(ids)["status"] == "FAILED"
        events = aws.log(ids)
        assert [e.seq for e in events] == list(range(len(events)))
        assert [e.type.value for e in events if e.is_terminal] == ["error"]
        end = events[-1]
        assert (end.data["reason"], end.data["partial"]) == ("interrupted", True)
        partial = _answer(events)
        assert partial
        assert "".join(first).startswith(partial)
        assert partial != "".join(first)
        assert "b0" not in partial
        assert len(scripted.answers) == answers_before + 1
        frames = aws.frames(ids)
        assert frames[-1].type == "error"
        assert answer_text(frames) == partial
        assert aws.assistant(ids)["content"] == partial
    finally:
        scripted.clear()


def test_each_stage_of_a_turn_is_a_subsegment_sent_to_the_x_ray_daemon(aws, scripted):
    """Tracing as deployed (the template's ``Tracing: Active``): Lambda hands each invocation a sampled trace
    header and runs a daemon beside the function; every stage pipeline_step runs is one ``pipeline.<stage>``
    subsegment of its invocation's trace, annotated with the turn, and its AWS calls are subsegments too."""
    session = aws.session()
    scripted.queue(Script.answer("Traced ", "answer."))
    ids = aws.ask(session, "Is this traced?")
    assert aws.frames(ids)[-1].type == "complete"
    assert aws.wait(ids)["status"] == "SUCCEEDED"  # every step's invocation has returned
    message_id = ids["assistant_message_id"]
    ran = {stage for stage, _ in _steps(aws, ids)}
    assert {"load_history", "chat_completion_stream"} <= ran
    xray = aws.stack.lambdas.xray

    def stage_spans() -> dict[str, dict]:
        return {
            s["name"].removeprefix("pipeline."): s
            for s in xray.subsegments()
            if s["name"].startswith("pipeline.") and s.get("annotations", {}).get("message_id") == message_id
        }

    spans = wait_until(lambda: (found := stage_spans()) and set(found) >= ran and found)
    assert set(spans) == ran
    for span in spans.values():
        assert span["annotations"] == {"session_id": session, "message_id": message_id}
        assert span["end_time"] >= span["start_time"]
        assert not span.get("in_progress")
        assert span["trace_id"].startswith("1-")
    # The stages of one turn run in separate invocations: as many traces as stages (no Step Functions header here).
    assert len({span["trace_id"] for span in spans.values()}) == len(spans)
    # botocore is patched by the Tracer: the turn's DynamoDB writes are subsegments of the same traces.
    traces = {span["trace_id"] for span in spans.values()}
    aws_calls = [s for s in xray.subsegments() if s.get("namespace") == "aws" and s.get("trace_id") in traces]
    assert {s["name"] for s in aws_calls} >= {"dynamodb"}
    assert xray.malformed == []


def _runs(frames):
    return joined_runs((f.type, f.content, f.done) for f in frames)
