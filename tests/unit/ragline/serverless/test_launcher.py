"""StepFunctionsLauncher against a moto state machine (a single Pass state: executions stay RUNNING here)."""

from __future__ import annotations

import asyncio
import json

import pytest

from ragline.runtime.plan import FULL_STAGE_ORDER, build_plan
from ragline.runtime.turns import AcceptedTurn
from ragline.serverless.launcher import StepFunctionsLauncher, execution_input, execution_name
from ragline.serverless.settings import AwsSettings
from ragline.serverless.state_store import StateRef, StateStore
from ragline.store.models import Message, Session
from ragline.types import ChatManage, EventType, PipelineRequest
from tests.unit.ragline.moto_env import ACCOUNT_ID, REGION

NOW = "2024-01-01T00:00:00.000+00:00"
PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/ragline-pipeline"


def accepted_turn(request_id: str = "req-1", knowledge: bool = True, max_rounds: int = 0) -> AcceptedTurn:
    """A turn as ``TurnService.accept`` returns it, built by hand."""
    kb_ids = ["kb-1"] if knowledge else []
    session = Session(id="sess-1", tenant_id="t-1", knowledge_base_ids=kb_ids, created_at=NOW, updated_at=NOW)
    common = {"session_id": session.id, "tenant_id": session.tenant_id, "request_id": request_id}
    user = Message(
        id=f"user-{request_id}",
        role="user",
        content="What is ragline?",
        is_completed=True,
        created_at=NOW,
        updated_at=NOW,
        **common,
    )
    assistant = Message(id=f"assistant-{request_id}", role="assistant", created_at=NOW, updated_at=NOW, **common)
    request = PipelineRequest(
        query="What is ragline?",
        knowledge_base_ids=tuple(kb_ids),
        user_message_id=user.id,
        assistant_message_id=assistant.id,
        max_rounds=max_rounds,
        **common,
    )
    return AcceptedTurn(session, request, build_plan(request), user, assistant)


class LambdaContext:
    """What Powertools idempotency reads from the invocation's context."""

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def all_executions(sfn) -> list[dict]:
    machines = sfn.list_state_machines()["stateMachines"]
    return [e for m in machines for e in sfn.list_executions(stateMachineArn=m["stateMachineArn"])["executions"]]


class Recorder:
    """Wraps one client method, records its keyword arguments."""

    def __init__(self, method) -> None:
        self.method = method
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        return self.method(**kwargs)


@pytest.fixture
def state(aws) -> StateStore:
    return StateStore(aws.table("StateTable"), aws.client("s3"), aws.bucket, 3600)


@pytest.fixture
def sfn(aws, monkeypatch):
    client = aws.client("stepfunctions")
    for name in ("start_execution", "stop_execution"):
        monkeypatch.setattr(client, name, Recorder(getattr(client, name)))
    return client


def state_machine(sfn, workflow_type: str) -> str:
    name = f"ragline-pipeline-{workflow_type.lower()}"
    reply = sfn.create_state_machine(name=name, definition=PASS_DEFINITION, roleArn=ROLE_ARN, type=workflow_type)
    return str(reply["stateMachineArn"])


@pytest.fixture
def standard(sfn, state) -> StepFunctionsLauncher:
    return StepFunctionsLauncher(sfn, state_machine(sfn, "STANDARD"), state)


@pytest.fixture
def express(sfn, state) -> StepFunctionsLauncher:
    return StepFunctionsLauncher(sfn, state_machine(sfn, "EXPRESS"), state, workflow_type="express")


def test_launch_saves_state_zero_and_starts_one_execution_with_a_small_input(sfn, state, standard):
    turn = accepted_turn()
    asyncio.run(standard.launch(turn))

    assert len(sfn.start_execution.calls) == 1
    arn = state.execution(turn.key)
    assert arn is not None
    execution = sfn.describe_execution(executionArn=arn)
    assert execution["status"] == "RUNNING"
    assert execution["name"] == execution_name(turn)
    payload = json.loads(execution["input"])
    assert payload["turn"] == {
        "tenant_id": "t-1",
        "session_id": "sess-1",
        "request_id": "req-1",
        "user_message_id": "user-req-1",
        "assistant_message_id": "assistant-req-1",
    }
    assert payload["plan"] == {stage.value: stage in turn.plan for stage in FULL_STAGE_ORDER}
    assert all(isinstance(flag, bool) for flag in payload["plan"].values())
    assert payload["result"] == {"state_ref": {"turn": turn.key, "version": 0}}
    assert len(execution["input"].encode()) < 2048  # a pointer, never the state

    saved = state.load(StateRef(turn=turn.key, version=0))
    assert saved is not None
    state_json, outcome = saved
    assert outcome == {"outcome": "accepted"}
    cm = ChatManage.load_json(state_json)
    assert cm.request == turn.request
    assert cm.state.rewrite_query == turn.request.query


def test_plan_flags_follow_the_turns_plan():
    # max_rounds=0 drops load_history; no knowledge drops the search stages.
    turn = accepted_turn(knowledge=False, max_rounds=0)
    assert turn.plan == [EventType.CHAT_COMPLETION_STREAM]
    plan = execution_input(turn, StateRef(turn=turn.key, version=0))["plan"]
    assert plan == {
        "load_history": False,
        "memory_recall": False,
        "query_understand": False,
        "chunk_search_parallel": False,
        "chunk_rerank": False,
        "web_fetch": False,
        "chunk_merge": False,
        "filter_top_k": False,
        "data_analysis": False,
        "into_chat_message": False,
        "chat_completion_stream": True,
    }


def test_launching_the_same_turn_twice_starts_one_execution(sfn, state, standard):
    turn = accepted_turn()
    asyncio.run(standard.launch(turn))
    first_arn = state.execution(turn.key)
    first_state = state.load(StateRef(turn=turn.key, version=0))
    asyncio.run(standard.launch(turn))

    assert [e["executionArn"] for e in all_executions(sfn)] == [first_arn]
    assert state.execution(turn.key) == first_arn
    assert state.load(StateRef(turn=turn.key, version=0)) == first_state  # the first state 0 is kept
    assert execution_name(accepted_turn()) == execution_name(turn)

    asyncio.run(standard.launch(accepted_turn(request_id="req-2")))  # another turn is another execution
    assert len(all_executions(sfn)) == 2


def test_execution_names_are_valid_and_distinct_per_turn():
    names = {execution_name(accepted_turn(request_id=f"req-{i}")) for i in range(50)}
    assert len(names) == 50
    # Step Functions: at most 80 characters of letters, digits, '-' and '_'.
    assert all(len(name) <= 80 and name.replace("-", "").replace("_", "").isalnum() for name in names)


def test_cancel_stops_a_standard_execution(sfn, state, standard):
    turn = accepted_turn()
    asyncio.run(standard.launch(turn))
    asyncio.run(standard.cancel(turn.session.id, turn.assistant_message.id))
    arn = state.execution(turn.key)
    assert [call["executionArn"] for call in sfn.stop_execution.calls] == [arn]
    assert sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"


def test_cancel_without_an_execution_or_after_it_ended_does_not_raise(sfn, state, standard):
    asyncio.run(standard.cancel("sess-1", "never-launched"))
    assert sfn.stop_execution.calls == []
    # An execution Step Functions no longer knows: StopExecution fails, cancel does not.
    missing = f"arn:aws:states:{REGION}:{ACCOUNT_ID}:execution:ragline-pipeline-standard:gone"
    state.set_execution("sess-1#gone", missing)
    asyncio.run(standard.cancel("sess-1", "gone"))
    assert [call["executionArn"] for call in sfn.stop_execution.calls] == [missing]


def test_cancel_does_nothing_on_express(sfn, state, express):
    turn = accepted_turn()
    asyncio.run(express.launch(turn))
    assert len(sfn.start_execution.calls) == 1
    asyncio.run(express.cancel(turn.session.id, turn.assistant_message.id))
    assert sfn.stop_execution.calls == []
    assert sfn.describe_execution(executionArn=state.execution(turn.key))["status"] == "RUNNING"


def test_the_idempotency_guard_starts_one_execution_per_request(aws, sfn, state):
    from ragline.serverless.aws import idempotent_start

    guard = idempotent_start(AwsSettings(idempotency_table=aws.tables["IdempotencyTable"]), aws.session)
    guard.config.register_lambda_context(LambdaContext())  # as the ingest_turn handler does per invocation
    launcher = StepFunctionsLauncher(sfn, state_machine(sfn, "EXPRESS"), state, "EXPRESS", start_guard=guard)
    turn = accepted_turn()
    asyncio.run(launcher.launch(turn))
    first_arn = state.execution(turn.key)
    asyncio.run(launcher.launch(turn))
    # EXPRESS names do not deduplicate; the guard on (session, request) does.
    assert len(sfn.start_execution.calls) == 1
    assert state.execution(turn.key) == first_arn
    asyncio.run(launcher.launch(accepted_turn(request_id="req-2")))
    assert len(sfn.start_execution.calls) == 2
