"""The stack deployed with WorkflowType EXPRESS: a turn runs through the same functions, and a turn whose
execution passed EXPRESS's 5-minute limit with nothing written is ended by the reader waiting on it — by the
execution's age, since EXPRESS executions cannot be described."""

from __future__ import annotations

import pytest

from tests.support.scripted_model import Script
from tests.support.serverless import checked_client, failing_steps, scripted_stack
from tests.support.sse import answer_text


@pytest.fixture(scope="module")
def express_stack(request, tmp_path_factory, scripted):
    with scripted_stack(request, tmp_path_factory.mktemp("aws-express"), scripted, WorkflowType="EXPRESS") as stack:
        yield stack


@pytest.fixture
def express(express_stack):
    with checked_client(express_stack) as client:
        yield client


def test_a_turn_runs_on_an_express_workflow(express, scripted):
    machine = express.stack.client("stepfunctions").describe_state_machine(
        stateMachineArn=express.stack.state_machine_arn
    )
    assert machine["type"] == "EXPRESS"
    assert express.stack.environment("StreamReaderFunction")["RAGLINE_WORKFLOW_TYPE"] == "EXPRESS"
    session = express.session()
    scripted.queue(Script.answer("Fast ", "and ", "short."))
    ids = express.ask(session, "Express?")
    frames = express.frames(ids)
    assert frames[-1].type == "complete"
    assert answer_text(frames) == "Fast and short."


def test_a_reader_ends_a_turn_whose_express_execution_passed_its_time_limit(express, scripted):
    """Nothing wrote the end (the execution was cut at its limit mid-step; here its steps fail and so does
    fail_turn). While the execution may still run the reader waits; once its start is older than the limit
    and a margin, the reader writes one terminal error and serves it — without DescribeExecution, which AWS
    does not offer for EXPRESS."""
    session = express.session()

    express.stack.lambdas.around(
        "PipelineStepFunction", failing_steps("load_history", "fail", error_type="Sandbox.Timedout")
    )
    since = len(express.stack.calls())
    ids = express.ask(session, "Will anyone notice?")
    express.wait(ids)
    types = [e.type.value for e in express.log(ids)]
    assert not {"error", "complete", "stop"} & set(types)
    # Deployed, a reader asks about a turn idle for 10 s and ends its response after 840 s; here after 1 s
    # and 5 s (the same variables, set as a redeploy would): seconds of waiting, not half a minute.
    with express.stack.function_environment(
        "StreamReaderFunction", RAGLINE_EXECUTION_CHECK_S="1", RAGLINE_STREAM_MAX_SECONDS="5"
    ):
        # A young execution is taken for alive: a reader gives up at its own time limit, the turn stays open.
        frames = express.frames(ids)
        assert frames[-1].type not in ("error", "complete", "stop")
        # The execution started longer ago than EXPRESS's 5 minutes and the margin.
        from ragline.serverless.watch import EXPRESS_GRACE_S, EXPRESS_LIMIT_S

        record = {"turn": f"{ids['session_id']}#{ids['assistant_message_id']}", "item": "execution"}
        state = express.stack.table("StateTable")
        started_at = int(state.get_item(Key=record)["Item"]["started_at"])
        state.update_item(
            Key=record,
            UpdateExpression="SET started_at = :t",
            ExpressionAttributeValues={":t": started_at - int(EXPRESS_LIMIT_S + EXPRESS_GRACE_S) - 1},
        )
        frames = express.frames(ids)
    assert frames[-1].type == "error"
    assert frames[-1].extra["reason"] == "interrupted"
    # The interrupted error every runtime writes, with the execution's status beside it.
    assert (frames[-1].extra["cause"], frames[-1].extra["execution_status"]) == ("runner_lost", "EXPIRED")
    assert [e.type.value for e in express.log(ids)].count("error") == 1
    assert express.assistant(ids)["is_completed"] is True
    reader_calls = {c.action for c in express.stack.calls()[since:] if c.function == "StreamReaderFunction"}
    assert "states:DescribeExecution" not in reader_calls


def test_a_streaming_task_delivered_twice_answers_once(express, scripted):
    """EXPRESS runs a task at least once: the streaming step's invocation arrives a second time while the first
    streams. One attempt owns the answer; the other waits for its outcome and returns it. The model is asked
    once, and the log, the stream and the stored message hold that one answer."""
    import threading

    from tests.support.polling import wait_until

    session = express.session()
    words = [f"a{i} " for i in range(200)]
    scripted.queue(Script.answer(*words, delay=0.05), Script.answer(*[f"b{i} " for i in range(200)], delay=0.01))
    answers_before = len(scripted.answers)
    duplicates = []

    def deliver_twice(event, run):
        if event["stage"] != "chat_completion_stream" or duplicates:
            return run()
        turn = event["turn"]
        ids = {"session_id": turn["session_id"], "assistant_message_id": turn["assistant_message_id"]}

        def redeliver():
            wait_until(lambda: "answer" in [e.type.value for e in express.log(ids)], timeout=60)
            duplicates.append(run())

        duplicate = threading.Thread(target=redeliver, daemon=True)
        duplicate.start()
        result = run()
        duplicate.join(120)
        return result

    express.stack.lambdas.around("PipelineStepFunction", deliver_twice)
    try:
        ids = express.ask(session, "Twice?")
        frames = express.frames(ids)
        assert express.wait(ids)["status"] == "SUCCEEDED"
        assert len(duplicates) == 1
        assert duplicates[0].function_error is None, duplicates[0].payload  # the duplicate returned the outcome
        events = express.log(ids)
        assert [e.seq for e in events] == list(range(len(events)))
        assert [e.type.value for e in events if e.is_terminal] == ["complete"]
        assert answer_text(frames) == "".join(words)
        assert express.assistant(ids)["content"] == "".join(words)
        assert len(scripted.answers) == answers_before + 1
        assert "waiting for the answer's owner" in express.stack.logs("PipelineStepFunction")
    finally:
        scripted.clear()
