"""Starting and stopping turns in the serverless runtime (ingest_turn and the stop route)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from ragline.runtime.plan import FULL_STAGE_ORDER
from ragline.runtime.turns import AcceptedTurn, TurnStarting
from ragline.serverless.state_store import StateRef, StateStore
from ragline.serverless.step import TurnRef
from ragline.types import ChatManage

logger = logging.getLogger(__name__)


def execution_name(turn: AcceptedTurn) -> str:
    """Deterministic per turn: a repeated StartExecution of a STANDARD workflow returns the same execution."""
    digest = hashlib.sha1(f"{turn.session.id}:{turn.request.request_id}".encode()).hexdigest()
    return f"turn-{digest[:40]}"


def execution_input(turn: AcceptedTurn, ref: StateRef) -> dict[str, Any]:
    """The workflow's small input: the turn's ids, the plan and a pointer to the saved state."""
    return {
        "turn": TurnRef(
            tenant_id=turn.session.tenant_id,
            session_id=turn.session.id,
            request_id=turn.request.request_id,
            user_message_id=turn.user_message.id,
            assistant_message_id=turn.assistant_message.id,
        ).model_dump(),
        "plan": {stage.value: stage in turn.plan for stage in FULL_STAGE_ORDER},
        "result": {"state_ref": ref.model_dump()},
    }


class StepFunctionsLauncher:
    """Saves the turn's first state and starts one workflow execution with a small input."""

    def __init__(
        self,
        sfn: Any,
        state_machine_arn: str,
        state: StateStore,
        workflow_type: str = "STANDARD",
        start_guard: Callable[[Callable[..., str]], Callable[..., str]] | None = None,
    ) -> None:
        """A launcher of ``state_machine_arn``'s executions; ``start_guard`` makes a start idempotent per request."""
        self._sfn = sfn
        self._arn = state_machine_arn
        self._state = state
        self._workflow_type = workflow_type.upper()
        start = self._start
        # Powertools idempotency (or any wrapper) keyed on the request id: a duplicate accept in flight
        # does not start a second execution.
        self._start_guarded = start_guard(start) if start_guard is not None else start

    def _start(self, execution_input: dict[str, Any], name: str) -> str:
        reply = self._sfn.start_execution(stateMachineArn=self._arn, name=name, input=json.dumps(execution_input))
        return str(reply["executionArn"])

    async def started(self, turn: AcceptedTurn) -> bool:
        """True once the turn's execution was recorded."""
        return await asyncio.to_thread(self._state.execution, turn.key) is not None

    async def launch(self, turn: AcceptedTurn) -> None:
        """Save the turn's first state and start its execution (once per request)."""
        from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

        ref = StateRef(turn=turn.key, version=0)
        self._state.save(ref, ChatManage.start(turn.request).dump_json(), {"outcome": "accepted"})
        try:
            arn = await asyncio.to_thread(
                self._start_guarded, execution_input=execution_input(turn, ref), name=execution_name(turn)
            )
        except IdempotencyAlreadyInProgressError:
            # Another accept of this request is starting it (or died doing so, until its invocation's deadline).
            raise TurnStarting("the same question is being started; ask again in a few seconds") from None
        self._state.set_execution(turn.key, arn)

    async def cancel(self, session_id: str, message_id: str) -> None:
        """Set the turn's stop flag, then stop a STANDARD execution (EXPRESS ones end by the flag alone)."""
        turn = f"{session_id}#{message_id}"
        # The flag first: the step streaming the model polls it (a running Lambda is not interrupted).
        await asyncio.to_thread(self._state.request_stop, turn)
        if self._workflow_type != "STANDARD":
            return  # EXPRESS has no StopExecution
        arn = self._state.execution(turn)
        if arn is None:
            return
        try:
            await asyncio.to_thread(self._sfn.stop_execution, executionArn=arn, cause="stopped by the user")
        except ClientError as error:
            # Already finished: nothing to stop.
            logger.info("StopExecution: %s", error.response.get("Error", {}).get("Code"))
