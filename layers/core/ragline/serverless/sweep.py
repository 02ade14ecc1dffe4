"""The scheduled sweep of the AWS runtime: what no reader and no step will ever finish, finished.

``stream_reader`` ends an orphaned turn when someone reads it (:class:`~ragline.serverless.watch.WatchedLog`);
a turn nobody reads would stay open — its message ``is_completed: false``, its log without a terminal event —
for ever. An EventBridge schedule runs the sweep function every few minutes: it lists the open turns (the
messages table's sparse index, so it reads those alone) and ends, through the library's recovery
(:class:`~ragline.runtime.recovery.TurnRecovery`), each one whose execution no longer runs — DescribeExecution
on STANDARD, the 5-minute limit on EXPRESS, and for a turn whose execution was never recorded (the accept
step died between the message and StartExecution), its age. Ending is idempotent (``append_if_open``): a
sweep racing a reader, a stop or another sweep writes one terminal event.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragline.runtime.recovery import OpenTurn, RecoveryReport, TurnRecovery
from ragline.serverless.watch import ExecutionLiveness

logger = logging.getLogger(__name__)

# A turn is recorded with its execution right after StartExecution, within the accept request (ingest_turn's
# 30-second timeout): one that is still unrecorded well after that was never started.
UNRECORDED_GRACE_S = 120.0
_UNRECORDED = "UNRECORDED"


class ExecutionRunnerLiveness:
    """:class:`~ragline.runtime.recovery.RunnerLiveness` of the serverless runtime: a turn's runner is its
    workflow execution."""

    def __init__(
        self,
        liveness: ExecutionLiveness,
        *,
        unrecorded_grace_s: float = UNRECORDED_GRACE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._liveness = liveness
        self._grace_s = unrecorded_grace_s
        self._clock = clock

    async def alive(self, turn: OpenTurn) -> bool:
        status = await asyncio.to_thread(self._liveness.status, turn.key, _UNRECORDED)
        if status == _UNRECORDED:
            return turn.age_s(self._clock()) < self._grace_s
        return status == "RUNNING"


@dataclass
class SweepReport:
    """What one sweep did (the function's reply, and its log line)."""

    turns: RecoveryReport = field(default_factory=RecoveryReport)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "turns_examined": self.turns.examined,
            "turns_running": self.turns.running,
            "turns_interrupted": list(self.turns.interrupted),
            "messages_completed": list(self.turns.finalized),
            "seconds": round(self.seconds, 3),
        }


class Sweeper:
    """One sweep: the orphaned turns ended."""

    def __init__(self, recovery: TurnRecovery) -> None:
        self._recovery = recovery

    async def run(self) -> SweepReport:
        started = time.monotonic()
        report = SweepReport(turns=await self._recovery.sweep(cause="runner_lost"))
        report.seconds = time.monotonic() - started
        logger.info("sweep", extra=report.summary())
        return report


def build_sweeper(runtime: Any) -> Sweeper:
    """The sweep of an :class:`~ragline.serverless.aws.AwsRuntime` (a reader's: no model, engine or secret)."""
    container = runtime.container
    liveness = ExecutionRunnerLiveness(ExecutionLiveness(runtime.sfn, runtime.state, runtime.aws.workflow_type))
    recovery = TurnRecovery(container.sessions, container.stream, container.turns, liveness)
    return Sweeper(recovery)
