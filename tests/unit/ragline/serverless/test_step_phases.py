"""Phases of ``pipeline_step`` run directly (no workflow): ``fail`` and the parallel search's branch → reduce.

The runtime is the AWS one in moto (log, state, sessions, tenants); knowledge and search are the embedded
ones (no OpenSearch here): a unit test of the step's phases, not of the deployment (the deployed stack's tests
are tests/integration/test_aws_*.py). No model is registered: search is keyword only.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ragline.models.registry import ModelRegistry
from ragline.pipeline.search_parallel import BranchResult, SearchBranch
from ragline.retrieval.embedded import EmbeddedEngine
from ragline.runtime.plan import FULL_STAGE_ORDER
from ragline.runtime.turns import AcceptedTurn, QuestionBody
from ragline.serverless.aws import AwsRuntime, build_aws_runtime
from ragline.serverless.settings import AwsSettings
from ragline.serverless.state_store import StateRef
from ragline.serverless.step import SearchNothing, StepInput, TurnRef, run_step
from ragline.store.db import Database
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Chunk, Document, KnowledgeBase, Message
from ragline.types import ChatManage, ResponseType, StreamEvent

EMBEDDING_MODEL = "not-loaded-here"
COFFEE = [
    "Brew coffee with water between 90 and 96 degrees Celsius.",
    "Espresso needs a fine grind and nine bars of pressure.",
]
TEA = ["Green tea is steeped at 70 to 80 degrees for two minutes."]


@dataclass
class Stack:
    runtime: AwsRuntime
    db: Database
    tenant_id: str = ""

    @property
    def container(self) -> Any:
        return self.runtime.container

    def knowledge_base(self, name: str, docs: dict[str, list[str]]) -> KnowledgeBase:
        """A knowledge base in the embedded store, its chunks in the keyword index."""
        kb = self.container.knowledge.create_knowledge_base(self.tenant_id, name, EMBEDDING_MODEL)
        for title, passages in docs.items():
            document = Document(id=f"{name}-{title}", tenant_id=self.tenant_id, knowledge_base_id=kb.id, title=title)
            chunks = [
                Chunk(
                    id=f"{document.id}-{i}",
                    tenant_id=self.tenant_id,
                    knowledge_base_id=kb.id,
                    knowledge_id=document.id,
                    chunk_index=i,
                    content=text,
                )
                for i, text in enumerate(passages)
            ]
            self.container.knowledge.insert_document(document, chunks)
            self.container.engine.index_chunks(
                kb.id, EMBEDDING_MODEL, chunks, np.zeros((len(chunks), 4), dtype=np.float32)
            )
        return kb

    def accept(self, kb_ids: list[str], query: str = "coffee water temperature") -> AcceptedTurn:
        """A turn accepted as ingest_turn does: both messages stored, ``agent_query`` at offset 0, state 0."""
        session = self.container.sessions.create_session(self.tenant_id, kb_ids)
        turn = asyncio.run(self.container.turns.accept(session, QuestionBody(query=query, request_id="req-1")))
        self.runtime.state.save(StateRef(turn=turn.key, version=0), ChatManage.start(turn.request).dump_json(), {})
        return turn

    def events(self, turn: AcceptedTurn) -> list[StreamEvent]:
        return self.runtime.log.events_sync(turn.key)

    def assistant(self, turn: AcceptedTurn) -> Message:
        message = self.container.sessions.message(self.tenant_id, turn.session.id, turn.assistant_message.id)
        assert message is not None
        return message


@pytest.fixture
def stack(aws, tmp_path):
    settings = AwsSettings(
        events_table=aws.tables["EventsTable"],
        sessions_table=aws.tables["SessionsTable"],
        messages_table=aws.tables["MessagesTable"],
        state_table=aws.tables["StateTable"],
        knowledge_table=aws.tables["KnowledgeTable"],
        tenants_table=aws.tables["TenantsTable"],
        idempotency_table=aws.tables["IdempotencyTable"],
        state_bucket=aws.bucket,
    )
    db = Database(tmp_path / "knowledge.db")
    runtime = build_aws_runtime(
        settings,
        session=aws.session,
        knowledge=SqliteKnowledgeStore(db),
        engine=EmbeddedEngine(db),
        models=ModelRegistry(),
    )
    handle = Stack(runtime, db)
    tenant, _ = runtime.container.tenants.create("acme")
    # The tenant lives in DynamoDB; the SQLite file standing in for OpenSearch's knowledge needs its row.
    db.execute(
        "INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)", (tenant.id, tenant.name, tenant.created_at)
    )
    handle.tenant_id = tenant.id
    yield handle
    db.close()


def step(turn: AcceptedTurn, stage: str, phase: str, **fields: Any) -> StepInput:
    return StepInput(
        stage=stage,
        phase=phase,
        turn=TurnRef(
            tenant_id=turn.session.tenant_id,
            session_id=turn.session.id,
            request_id=turn.request.request_id,
            user_message_id=turn.user_message.id,
            assistant_message_id=turn.assistant_message.id,
        ),
        plan={s.value: s in turn.plan for s in FULL_STAGE_ORDER},
        **fields,
    )


def append(stack: Stack, turn: AcceptedTurn, type: ResponseType, content: str = "", **fields: Any) -> None:
    stack.runtime.log.append_sync(turn.key, StreamEvent(id=f"{type.value}-1", type=type, content=content, **fields))


def lambda_error(error_type: str, message: str) -> dict[str, str]:
    """A Catch's ``$.error``: the Lambda error type and its JSON cause."""
    return {"Error": error_type, "Cause": json.dumps({"errorType": error_type, "errorMessage": message})}


# fail --------------------------------------------------------------------------------------------------------
def test_fail_appends_one_error_event_and_completes_the_message(stack):
    turn = stack.accept([])
    append(stack, turn, ResponseType.ANSWER, "Brew at ")
    append(stack, turn, ResponseType.ANSWER, "93 °C")
    before = stack.events(turn)

    failing = step(turn, "fail", "fail", error=lambda_error("RuntimeError", "disk on fire"))
    reply = run_step(failing, stack.runtime.step_deps())

    assert reply == {"outcome": "failed"}
    events = stack.events(turn)
    assert events[: len(before)] == before
    assert len(events) == len(before) + 1
    error = events[-1]
    assert (error.seq, error.type, error.done, error.content) == (len(before), ResponseType.ERROR, True, "disk on fire")
    assert error.data == {"stage": "knowledge_qa_execution", "error_type": "RuntimeError", "error": "disk on fire"}
    assistant = stack.assistant(turn)
    assert assistant.is_completed is True
    assert assistant.content == "Brew at 93 °C"  # what the reader received before the error
    assert assistant.stop_reason == "error"


def test_fail_without_an_error_or_with_a_plain_cause(stack):
    turn = stack.accept([])
    run_step(step(turn, "fail", "fail"), stack.runtime.step_deps())
    error = stack.events(turn)[-1]
    assert error.type == ResponseType.ERROR
    assert (error.content, error.data["error_type"]) == ("the turn failed", "internal_error")

    other = stack.accept([], query="another question")
    plain = {"Error": "States.Timeout", "Cause": "the task timed out"}
    run_step(step(other, "fail", "fail", error=plain), stack.runtime.step_deps())
    error = stack.events(other)[-1]
    assert (error.content, error.data["error_type"]) == ("the task timed out", "States.Timeout")


@pytest.mark.parametrize(
    ("terminal", "stop_reason"),
    [(ResponseType.COMPLETE, ""), (ResponseType.ERROR, "error"), (ResponseType.STOP, "stopped")],
)
def test_fail_appends_nothing_after_a_terminal_event(stack, terminal, stop_reason):
    turn = stack.accept([])
    append(stack, turn, ResponseType.ANSWER, "partial")
    append(stack, turn, terminal, "the end", done=True)
    before = stack.events(turn)

    reply = run_step(step(turn, "fail", "fail", error=lambda_error("RuntimeError", "late")), stack.runtime.step_deps())

    assert reply == {"outcome": "failed"}
    assert stack.events(turn) == before
    assistant = stack.assistant(turn)
    assert (assistant.is_completed, assistant.content, assistant.stop_reason) == (True, "partial", stop_reason)


def test_a_retried_fail_writes_no_second_error(stack):
    turn = stack.accept([])
    failing = step(turn, "fail", "fail", error=lambda_error("RuntimeError", "boom"))
    run_step(failing, stack.runtime.step_deps())
    first = stack.events(turn)
    completed = stack.assistant(turn)
    assert run_step(failing, stack.runtime.step_deps()) == {"outcome": "failed"}
    assert stack.events(turn) == first
    assert [e.type for e in first].count(ResponseType.ERROR) == 1
    assert stack.assistant(turn) == completed  # completed once, not rewritten


# branch → reduce ---------------------------------------------------------------------------------------------
def _plan_branches(stack: Stack, turn: AcceptedTurn) -> tuple[StateRef, list[SearchBranch]]:
    reply = run_step(
        step(turn, "chunk_search_parallel", "plan", state_ref=StateRef(turn=turn.key, version=0)),
        stack.runtime.step_deps(),
    )
    assert reply["outcome"] == "continue"
    return StateRef(**reply["state_ref"]), [SearchBranch.model_validate(b) for b in reply["branches"]]


def test_a_branch_result_is_stored_and_the_reduce_step_reads_it(stack):
    drinks = stack.knowledge_base("drinks", {"coffee": COFFEE, "tea": TEA})
    turn = stack.accept([drinks.id])
    ref, branches = _plan_branches(stack, turn)
    assert len(branches) == 1

    reply = run_step(
        step(turn, "chunk_search_parallel", "branch", state_ref=ref, branch=branches[0]), stack.runtime.step_deps()
    )
    stored = BranchResult.model_validate_json(stack.runtime.state.load_branch(turn.key, reply["branch_ref"]))
    assert stored.error == ""
    found = [r.id for r in stored.results]
    assert found == ["drinks-coffee-0"]  # keyword search: the one passage about coffee and water
    assert stored.results[0].knowledge_base_id == drinks.id
    # A branch reads the state and writes no new version: only the reduce step moves the turn on.
    assert stack.runtime.state.latest(turn.key)[0] == ref

    reduced = run_step(
        step(turn, "chunk_search_parallel", "reduce", state_ref=ref, branch_results=[reply]),
        stack.runtime.step_deps(),
    )
    next_ref = StateRef(turn=turn.key, version=ref.version + 1)
    assert reduced == {"outcome": "continue", "state_ref": next_ref.model_dump()}
    saved = stack.runtime.state.load(next_ref)
    assert saved is not None
    cm = ChatManage.load_json(saved[0])
    assert [r.id for r in cm.state.search_result] == found
    assert cm.state.candidate_count == len(found)
    events = stack.events(turn)
    assert [e.seq for e in events] == list(range(len(events)))
    assert not any(e.is_terminal for e in events)


def test_reduce_of_empty_branches_routes_to_the_fallback(stack):
    empty = stack.knowledge_base("empty", {"tea": TEA})
    turn = stack.accept([empty.id], query="espresso grind pressure")
    ref, branches = _plan_branches(stack, turn)
    assert len(branches) == 1
    deps = stack.runtime.step_deps()
    replies = [run_step(step(turn, "chunk_search_parallel", "branch", state_ref=ref, branch=b), deps) for b in branches]
    assert all(
        BranchResult.model_validate_json(stack.runtime.state.load_branch(turn.key, r["branch_ref"])).results == []
        for r in replies
    )
    reduce = step(turn, "chunk_search_parallel", "reduce", state_ref=ref, branch_results=replies)
    with pytest.raises(SearchNothing):
        run_step(reduce, deps)
    # A retried reduce answers as the first attempt did, from the saved outcome.
    with pytest.raises(SearchNothing):
        run_step(reduce, deps)
    assert stack.runtime.state.load(StateRef(turn=turn.key, version=ref.version + 1))[1] == {
        "outcome": "search_nothing"
    }
