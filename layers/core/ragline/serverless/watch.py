"""Turns whose workflow ended without a terminal event, noticed by the reader that waits for one.

``fail_turn`` writes the ``error`` of a failed turn, but it can fail itself; an EXPRESS execution that passes
its 5-minute limit, or a StopExecution that lands between two steps, ends the workflow with nothing written.
A reader would then poll an open log forever. :class:`WatchedLog` is the log stream_reader reads through:
once a turn's log has been idle for ``check_after_s``, it asks the workflow (:class:`ExecutionLiveness`)
whether the turn still runs, and if not writes the terminal ``error`` itself (the interrupted error of every
runtime: ``data.reason = "interrupted"``, ``cause`` runner_lost, ``partial``) at the next offset — a conditional write, so a step that does write its own end still wins
— and completes the message with the answer so far. The reader then serves that ``error`` and closes.

A check that fails is logged with the call that failed. A refusal (the role lacks the grant, the credentials are
bad) will not pass by waiting, and a throttle or outage that outlasts the client's own retries for
``MAX_FAILED_CHECKS`` checks in a row is no better: either way the reader cannot tell whether anything still
writes, so it ends the turn with the interrupted error (``cause`` unverifiable) instead of waiting on pings
until its own time limit.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from botocore.exceptions import ClientError

from ragline.observability import failed_call
from ragline.runtime.turns import interrupted_event
from ragline.serverless.state_store import StateStore
from ragline.stream.dynamodb import DynamoDBStreamManager
from ragline.stream.replay import summarize_answer
from ragline.types import StreamEvent

logger = logging.getLogger(__name__)

# An EXPRESS execution lasts 5 minutes at most; past this (with a margin) nothing will write to the log.
EXPRESS_LIMIT_S = 300.0
EXPRESS_GRACE_S = 30.0
RUNNER_LOST = "runner_lost"
UNVERIFIABLE = "unverifiable"
# Failed checks in a row after which a reader stops hoping the next one will do (one check per idle interval).
MAX_FAILED_CHECKS = 3
# Errors that no retry cures: the call is refused as configured.
REFUSALS = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "InvalidClientTokenId",
        "MissingAuthenticationToken",
    }
)


class ExecutionLiveness:
    """Whether a turn's workflow execution may still write to its log.

    STANDARD: DescribeExecution (RUNNING is alive; SUCCEEDED, FAILED, TIMED_OUT, ABORTED are not). EXPRESS has
    no DescribeExecution: an execution older than the 5-minute limit (plus a margin) is gone. A turn whose
    execution was never recorded is alive while it is young (the launcher records the ARN right after
    StartExecution).
    """

    def __init__(self, sfn: Any, state: StateStore, workflow_type: str, clock: Any = time.time) -> None:
        """Liveness read from Step Functions (STANDARD) or the execution's age (EXPRESS)."""
        self._sfn = sfn
        self._state = state
        self._workflow_type = workflow_type.upper()
        self._clock = clock

    def status(self, turn: str, unrecorded: str = "RUNNING") -> str:
        """The execution status of a turn, or ``unrecorded`` when none was recorded.

        RUNNING, a final status (SUCCEEDED, FAILED, TIMED_OUT, ABORTED), EXPIRED (EXPRESS past its limit), or
        ``unrecorded`` for a turn whose execution was never recorded.
        """
        recorded = self._state.execution_record(turn)
        if recorded is None:
            return unrecorded
        arn, started_at = recorded
        if self._workflow_type == "EXPRESS":
            age = self._clock() - started_at if started_at else 0.0
            return "EXPIRED" if age > EXPRESS_LIMIT_S + EXPRESS_GRACE_S else "RUNNING"
        try:
            return str(self._sfn.describe_execution(executionArn=arn)["status"])
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return "EXPIRED"
            raise


def interrupted_error(turn: str, status: str, events: list[StreamEvent], cause: str = RUNNER_LOST) -> StreamEvent:
    """The ``error`` a reader writes for a turn whose execution ended without one.

    The interrupted error every runtime writes for a turn whose runner is gone (``cause`` runner_lost, ``partial``),
    with the execution's status beside it (UNKNOWN, with ``cause`` unverifiable, when it could not be read).
    """
    request_id = events[0].id if events else hashlib.sha1(turn.encode()).hexdigest()[:8]
    event = interrupted_event(request_id, cause, summarize_answer(events))
    event.data["execution_status"] = status
    return event


class WatchedLog(DynamoDBStreamManager):
    """The DynamoDB log as a reader sees it, with the workflow checked when a turn's log stays idle."""

    def __init__(
        self,
        table: Any,
        ttl_seconds: int,
        liveness: ExecutionLiveness,
        *,
        check_after_s: float = 10.0,
        on_interrupted: Callable[[str, str], Awaitable[Any]] | None = None,
    ) -> None:
        """A log on ``table`` that checks the workflow after ``check_after_s`` of silence on a turn."""
        super().__init__(table, ttl_seconds)
        self._liveness = liveness
        self._check_after_s = check_after_s
        # Completes the turn's message once its log has ended (TurnService.finalize).
        self.on_interrupted = on_interrupted
        # key → (the last offset seen, when it was first seen, when the workflow was last asked)
        self._idle: dict[str, tuple[int, float, float]] = {}
        # key → checks that failed in a row
        self._failed_checks: dict[str, int] = {}

    async def wait_for_append(self, key: str, after_seq: int, timeout: float) -> bool:
        """Wait for an append; after a silence, end the turn when its execution is gone (then return at once)."""
        now = time.monotonic()
        seen, since, asked = self._idle.get(key, (after_seq, now, 0.0))
        if seen != after_seq:
            seen, since, asked = after_seq, now, 0.0
        self._idle[key] = (seen, since, asked)
        if now - since >= self._check_after_s and now - asked >= self._check_after_s:
            self._idle[key] = (seen, since, now)
            if await self._end_if_orphaned(key, after_seq):
                return True  # the error is there: read it at once
        return await super().wait_for_append(key, after_seq, timeout)

    def _check_failed(self, key: str, exc: Exception) -> bool:
        """Log a failed check; True when the reader should give up on this turn (a refusal, or too many)."""
        failed = self._failed_checks.get(key, 0) + 1
        self._failed_checks[key] = failed
        call = failed_call(exc)
        give_up = call.get("error_code") in REFUSALS or failed >= MAX_FAILED_CHECKS
        logger.error(
            "could not read the turn's execution status",
            exc_info=True,
            extra={**call, "failed_checks": failed, "ending_turn": give_up},
        )
        return give_up

    async def _end_if_orphaned(self, key: str, after_seq: int) -> bool:
        cause = RUNNER_LOST
        try:
            status = await asyncio.to_thread(self._liveness.status, key)
        except Exception as exc:  # retried at the next interval, unless it will not pass
            if not self._check_failed(key, exc):
                return False
            status, cause = "UNKNOWN", UNVERIFIABLE
        else:
            self._failed_checks.pop(key, None)
        if status == "RUNNING":
            return False
        self._failed_checks.pop(key, None)
        events = await self.get_events(key)
        if events and events[-1].is_terminal:
            return True
        seq = events[-1].seq + 1 if events else 0
        written = await asyncio.to_thread(self.put_at, key, seq, interrupted_error(key, status, events, cause))
        if written:
            logger.warning(
                "turn interrupted: its workflow ended without a terminal event, or could not be checked",
                extra={"status": status, "cause": cause},
            )
            if self.on_interrupted is not None:
                session_id, message_id = key.split("#", 1)
                await self.on_interrupted(session_id, message_id)
        return True
