"""``pipeline_step``: one stage (or one phase of the parallel search) of one turn, per invocation.

The step loads the turn's state by pointer, runs the stage with the orchestrator's rules, writes the
stage's events to the log, saves the next state version and returns a small outcome. Outcomes the
workflow must route are raised as typed errors (``SearchNothing``, ``Stopped``, ``StageFailed``) so a
Catch routes them without a Choice after every stage.

Idempotent: a retry after the step finished returns the saved outcome without running again; a retry
after a crash writes its events to the same log offsets (claimed on the first attempt), where
conditional writes turn repeats into no-ops. A step that generates text (the streaming answer, the fallback)
cannot be repeated the same, so one attempt owns it (``answer_owner``): the others wait for its outcome.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from ragline.container import Container
from ragline.event.bus import EventBus
from ragline.pipeline.chunk_search_parallel import BranchResult, SearchBranch
from ragline.pipeline.orchestrator import StageOutcome
from ragline.runtime.plan import FULL_STAGE_ORDER
from ragline.serverless.answer_owner import WAIT_POLL_S, AnswerLease, AnswerOwnership, Claim
from ragline.serverless.cancel import StopFlagToken
from ragline.serverless.state_store import StateRef, StateStore
from ragline.stream.base import stream_key
from ragline.stream.dynamodb import DynamoDBStreamManager, StageLog
from ragline.stream.handler import StreamHandler
from ragline.types import ChatManage, EventType, PipelineContext, ResponseType, StreamEvent

logger = logging.getLogger(__name__)

Phase = Literal["run", "plan", "branch", "reduce", "fallback", "fail"]


class SearchNothing(Exception):
    """Search found nothing: the workflow answers with the fallback."""


class Stopped(Exception):
    """The user stopped the turn: the workflow ends."""


class StageFailed(Exception):
    """A stage failed; its ``error`` event is already in the log."""


class AnswerInProgress(Exception):
    """Another attempt owned the answer and was still streaming when this one ran out of time (retried)."""


# Stages whose events a second run would not reproduce (the model's words): one attempt owns each answer.
GENERATING_STAGES = frozenset({EventType.CHAT_COMPLETION_STREAM})
# A waiting attempt gives up this long before its own deadline, so it ends with AnswerInProgress, not a timeout.
WAIT_DEADLINE_MARGIN_S = 10.0


@dataclass(frozen=True)
class Attempt:
    """One invocation of a step: its id (the Lambda request id) and when it must have returned (epoch s)."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    deadline: float = math.inf

    def out_of_time(self) -> bool:
        """True when waiting longer would outlast the invocation."""
        return time.time() > self.deadline - WAIT_DEADLINE_MARGIN_S


class TurnRef(BaseModel):
    """The ids of one turn, as the workflow carries them."""

    tenant_id: str
    session_id: str
    request_id: str
    user_message_id: str
    assistant_message_id: str

    @property
    def key(self) -> str:
        """The turn's log key."""
        return stream_key(self.session_id, self.assistant_message_id)


class StepInput(BaseModel):
    """One workflow step's input: the stage, the phase, the turn, its plan and a pointer to its state."""

    stage: str
    phase: Phase = "run"
    turn: TurnRef
    plan: dict[str, bool] = {}
    state_ref: StateRef | None = None
    branch: SearchBranch | None = None
    branch_results: list[dict[str, Any]] | None = None
    error: dict[str, Any] | None = None

    def stages(self) -> list[EventType]:
        """The stages this turn runs, in pipeline order."""
        return [stage for stage in FULL_STAGE_ORDER if self.plan.get(stage.value)]


@dataclass
class StepDeps:
    """What a step runs on: the container, the state store, the log, and how often it polls the stop flag."""

    container: Container
    state: StateStore
    log: DynamoDBStreamManager
    ownership: AnswerOwnership
    stop_poll_s: float = 0.5


def _raise_for(record: dict[str, Any]) -> None:
    outcome = record.get("outcome")
    if outcome == StageOutcome.SEARCH_NOTHING:
        raise SearchNothing("no relevant content found")
    if outcome == StageOutcome.STOPPED:
        raise Stopped("stopped by the user")
    if outcome == StageOutcome.FAILED:
        raise StageFailed(str(record.get("error", "stage failed")))


def _reply(record: dict[str, Any], ref: StateRef) -> dict[str, Any]:
    _raise_for(record)
    reply: dict[str, Any] = {"outcome": record["outcome"], "state_ref": ref.model_dump()}
    if "branches" in record:
        reply["branches"] = record["branches"]
    return reply


class _StepRun:
    """The per-invocation runtime around one stage: log writer, handler, bus, stop polling."""

    def __init__(
        self,
        step: StepInput,
        deps: StepDeps,
        claim: Callable[[], Awaitable[int]],
        lease: AnswerLease | None = None,
    ) -> None:
        self.key = step.turn.key
        self.cancel = StopFlagToken(deps.state, self.key, deps.stop_poll_s)
        self.lease = lease
        stream_config = deps.container.config.stream
        self.handler = StreamHandler(
            StageLog(deps.log, claim, self._writable if lease is not None else None),
            self.key,
            cancel=self.cancel,
            batch_max_delay_ms=stream_config.batch_max_delay_ms,
            batch_max_chars=stream_config.batch_max_chars,
        )
        self.bus = EventBus()
        self.bus.subscribe(self.handler.handle)
        self.context = PipelineContext(
            event_bus=self.bus,
            cancel=self.cancel,
            session_id=step.turn.session_id,
            message_id=step.turn.assistant_message_id,
            user_message_id=step.turn.user_message_id,
        )

    async def _writable(self) -> bool:
        assert self.lease is not None
        if await self.lease.writable():
            return True
        self.cancel.cancel("answer_lost")  # another attempt answers: close the model's stream
        return False

    async def __aenter__(self) -> _StepRun:
        self.cancel.start()
        if self.lease is not None:
            self.lease.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.handler.flush()
        finally:
            await self.cancel.close()
            if self.lease is not None:
                await self.lease.close()


def _claimer(deps: StepDeps, step: StepInput, name: str) -> Callable[[], Awaitable[int]]:
    """The step's first log offset, claimed when it writes its first event (a retry reads it back)."""

    async def claim() -> int:
        last = await deps.log.last_event(step.turn.key)
        return await asyncio.to_thread(deps.state.claim, step.turn.key, name, 0 if last is None else last.seq + 1)

    return claim


async def _owner_wrote_words(deps: StepDeps, key: str, name: str) -> bool:
    """Whether any answer or thinking text of the step ``name`` reached the log (from its claimed offset on)."""
    start = await asyncio.to_thread(deps.state.claimed, key, name)
    if start is None:
        return False
    return any(
        event.content and event.type in (ResponseType.ANSWER, ResponseType.THINKING)
        for event in await deps.log.get_events(key, start)
    )


async def _own_answer(
    step: StepInput, deps: StepDeps, attempt: Attempt, name: str, finished: Callable[[], dict[str, Any] | None]
) -> AnswerLease | dict[str, Any]:
    """This attempt's lease on the step's answer, or the outcome of the attempt that answered.

    ``finished`` reads the outcome a finished attempt saved (the next state version), checked first each time.
    An attempt that takes over a dead owner's answer answers itself if none of the owner's words reached the log;
    otherwise it ends the turn with one ``error`` (interrupted), whose outcome it stores for every other attempt.
    """
    key = step.turn.key
    waiting_for = ""
    while True:
        done = await asyncio.to_thread(finished)
        if done is not None:
            return done
        acquired = await asyncio.to_thread(deps.ownership.acquire, key, name, attempt.id)
        if acquired.claim == Claim.ENDED:
            assert acquired.outcome is not None
            return acquired.outcome
        if acquired.claim in (Claim.OWNER, Claim.TAKEN_OVER):
            lease = AnswerLease(deps.ownership, key, name, attempt.id)
            if acquired.claim == Claim.OWNER or not await _owner_wrote_words(deps, key, name):
                return lease
            logger.warning(
                "answer's owner died mid-answer: ending the turn", extra={"previous": acquired.previous_owner}
            )
            turn = step.turn
            await deps.container.turns.interrupt(
                turn.session_id, turn.assistant_message_id, turn.request_id, cause="runner_lost"
            )
            outcome: dict[str, Any] = {"outcome": StageOutcome.FAILED, "error": "the answer was interrupted"}
            await lease.finish(outcome)
            return outcome
        if attempt.out_of_time():
            raise AnswerInProgress(f"attempt {acquired.owner} is still answering")
        if acquired.owner != waiting_for:
            waiting_for = acquired.owner
            logger.info("waiting for the answer's owner", extra={"owner": acquired.owner, "attempt": attempt.id})
        await asyncio.sleep(WAIT_POLL_S)


async def run_step_async(step: StepInput, deps: StepDeps, attempt: Attempt | None = None) -> dict[str, Any]:
    """Run one step of a turn's workflow; its reply (the outcome and the new state's reference) feeds the next state.

    ``attempt`` identifies this invocation (a retry or a duplicate delivery is another attempt).
    """
    attempt = attempt or Attempt()
    if step.phase == "branch":
        return await _run_branch(step, deps)
    if step.phase == "fallback":
        return await _run_fallback(step, deps, attempt)
    if step.phase == "fail":
        return await _run_fail(step, deps)
    return await _run_stage(step, deps, attempt)


async def _run_stage(step: StepInput, deps: StepDeps, attempt: Attempt) -> dict[str, Any]:
    if step.state_ref is None:
        raise ValueError("state_ref is required for a stage step")
    container, orchestrator = deps.container, deps.container.orchestrator
    stage, plan = EventType(step.stage), step.stages()
    ref = step.state_ref
    next_ref = StateRef(turn=ref.turn, version=ref.version + 1)
    # A retry after this step finished: answer exactly as the first attempt did, without running again.
    finished = deps.state.load(next_ref)
    if finished is not None:
        return _reply(finished[1], next_ref)
    loaded = deps.state.load(ref)
    if loaded is None:
        raise LookupError(f"state {ref} not found")
    name = f"{next_ref.version}:{stage.value}:{step.phase}"
    claim = _claimer(deps, step, name)
    lease: AnswerLease | None = None
    if stage in GENERATING_STAGES:

        def saved() -> dict[str, Any] | None:
            found = deps.state.load(next_ref)
            return None if found is None else found[1]

        owned = await _own_answer(step, deps, attempt, name, saved)
        if not isinstance(owned, AnswerLease):
            return _reply(owned, next_ref)
        lease = owned
    record: dict[str, Any]
    async with _StepRun(step, deps, claim, lease) as run:
        cm = ChatManage.load_json(loaded[0], run.context)
        if await run.cancel.refresh():
            outcome = StageOutcome.STOPPED
            record = {"outcome": outcome}
        elif step.phase == "plan":
            record = await _plan(cm, stage, plan, container)
            outcome = StageOutcome(record["outcome"])
        else:
            if step.phase == "reduce":
                outcomes = [
                    BranchResult.model_validate_json(deps.state.load_branch(ref.turn, str(item["branch_ref"])))
                    for item in step.branch_results or []
                ]
                error = container.search_parallel.reduce(cm, outcomes)
                outcome = await orchestrator.end_stage(cm, stage, plan, error)
            else:
                outcome = await orchestrator.run_stage(cm, stage, plan)
            if outcome == StageOutcome.CONTINUE and plan and stage == plan[-1]:
                # The last stage writes ``complete`` itself: one state transition fewer per turn.
                outcome = await orchestrator.complete(cm)
            record = {"outcome": outcome}
    if lease is not None and not await lease.writable():
        # Another attempt took the answer over while this one was stalled: its outcome is the step's.
        return _reply(await _outcome_of_owner(step, deps, attempt, name), next_ref)
    if outcome == StageOutcome.FAILED:
        record["error"] = await _last_error(deps, step.turn.key)
    deps.state.save(next_ref, cm.dump_json(), record)
    if lease is not None:
        await lease.finish(record)
    if outcome in (StageOutcome.COMPLETED, StageOutcome.FAILED):
        await container.turns.finalize(step.turn.session_id, step.turn.assistant_message_id)
    return _reply(record, next_ref)


async def _outcome_of_owner(step: StepInput, deps: StepDeps, attempt: Attempt, name: str) -> dict[str, Any]:
    """Wait for the outcome of the attempt that owns the answer now (this one lost it)."""
    while True:
        found = await asyncio.to_thread(deps.ownership.read, step.turn.key, name)
        if found is not None and found.outcome is not None:
            return found.outcome
        if attempt.out_of_time():
            raise AnswerInProgress("another attempt took the answer over and is still answering")
        await asyncio.sleep(WAIT_POLL_S)


async def _plan(cm: ChatManage, stage: EventType, plan: list[EventType], container: Container) -> dict[str, Any]:
    if not await container.orchestrator.begin_stage(cm, stage, plan):
        return {"outcome": StageOutcome.STOPPED}
    branches = container.search_parallel.plan_branches(cm)
    return {"outcome": StageOutcome.CONTINUE, "branches": [b.model_dump(mode="json") for b in branches]}


async def _last_error(deps: StepDeps, key: str) -> str:
    last = await deps.log.last_event(key)
    return last.content if last is not None and last.type == ResponseType.ERROR else "stage failed"


async def _run_branch(step: StepInput, deps: StepDeps) -> dict[str, Any]:
    if step.state_ref is None or step.branch is None:
        raise ValueError("state_ref and branch are required for a branch step")
    loaded = deps.state.load(step.state_ref)
    if loaded is None:
        raise LookupError(f"state {step.state_ref} not found")
    cm = ChatManage.load_json(loaded[0])
    result = await deps.container.search_parallel.run_branch(cm, step.branch)
    digest = hashlib.sha1(step.branch.model_dump_json().encode("utf-8")).hexdigest()[:16]
    name = deps.state.save_branch(step.turn.key, f"{step.state_ref.version}:{digest}", result.model_dump_json())
    return {"branch_ref": name}


async def _run_fallback(step: StepInput, deps: StepDeps, attempt: Attempt) -> dict[str, Any]:
    latest = deps.state.latest(step.turn.key)
    if latest is None:
        raise LookupError(f"no state for {step.turn.key}")
    ref, state_json = latest
    # The fallback may ask the model too: one attempt owns it, the others return its reply.
    owned = await _own_answer(step, deps, attempt, "fallback", lambda: None)
    if not isinstance(owned, AnswerLease):
        return _fallback_reply(owned)
    async with _StepRun(step, deps, _claimer(deps, step, "fallback"), owned) as run:
        cm = ChatManage.load_json(state_json, run.context)
        outcome = StageOutcome.STOPPED if await run.cancel.refresh() else await deps.container.orchestrator.fallback(cm)
    if not await owned.writable():
        return _fallback_reply(await _outcome_of_owner(step, deps, attempt, "fallback"))
    reply = {"outcome": outcome, "state_ref": ref.model_dump()}
    await owned.finish(reply)
    if outcome == StageOutcome.COMPLETED:
        await deps.container.turns.finalize(step.turn.session_id, step.turn.assistant_message_id)
    return reply


def _fallback_reply(outcome: dict[str, Any]) -> dict[str, Any]:
    """The reply of the attempt that owned the fallback; a turn it ended as interrupted fails the workflow."""
    if outcome.get("outcome") == StageOutcome.FAILED:
        raise StageFailed(str(outcome.get("error", "the answer was interrupted")))
    return outcome


def _failed_stage(error: dict[str, Any] | None) -> tuple[str, str]:
    """The workflow's error (``{"Error", "Cause"}``) as a stage name and a message."""
    if not error:
        return "knowledge_qa_execution", "the turn failed"
    cause = str(error.get("Cause", ""))
    try:
        parsed = json.loads(cause)
        message = str(parsed.get("errorMessage") or parsed.get("errorType") or cause)
    except (ValueError, AttributeError):
        message = cause or str(error.get("Error", "the turn failed"))
    return "knowledge_qa_execution", message


async def _run_fail(step: StepInput, deps: StepDeps) -> dict[str, Any]:
    """Whatever failed, a reader must see a terminal event: write ``error`` unless the log already ended."""
    stage, message = _failed_stage(step.error)
    # Through the log's check-and-append: a stop racing this step must not leave two terminal events.
    await deps.log.append_if_open(
        step.turn.key,
        StreamEvent(
            id=f"{hashlib.sha1(step.turn.request_id.encode()).hexdigest()[:8]}-error",
            type=ResponseType.ERROR,
            content=message,
            done=True,
            data={
                "stage": stage,
                "error_type": str((step.error or {}).get("Error", "internal_error")),
                "error": message,
            },
        ),
    )
    await deps.container.turns.finalize(step.turn.session_id, step.turn.assistant_message_id)
    return {"outcome": StageOutcome.FAILED}


def run_step(step: StepInput, deps: StepDeps, attempt: Attempt | None = None) -> dict[str, Any]:
    """The Lambda entry point's body: a fresh event loop per invocation."""

    async def run() -> dict[str, Any]:
        try:
            return await run_step_async(step, deps, attempt)
        finally:
            await deps.container.models.release_loop()

    return asyncio.run(run())
