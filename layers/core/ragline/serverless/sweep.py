"""The scheduled sweep of the AWS runtime: what no reader and no step will ever finish, finished.

``stream_reader`` ends an orphaned turn when someone reads it (:class:`~ragline.serverless.watch.WatchedLog`);
a turn nobody reads would stay open — its message ``is_completed: false``, its log without a terminal event —
for ever. An EventBridge schedule runs the sweep function every few minutes: it lists the open turns (the
messages table's sparse index, so it reads those alone) and ends, through the library's recovery
(:class:`~ragline.runtime.recovery.TurnRecovery`), each one whose execution no longer runs — DescribeExecution
on STANDARD, the 5-minute limit on EXPRESS, and for a turn whose execution was never recorded (the accept
step died between the message and StartExecution), its age. Ending is idempotent (``append_if_open``): a
sweep racing a reader, a stop or another sweep writes one terminal event.

The same sweep finds the documents (and uploaded files) whose indexing no invocation finishes: ``pending`` or
``processing`` and not updated for ``STALE_S`` (longer than an invocation of the indexing function lasts: one
that works records its progress after every batch). It invokes the indexing function for them again; its
leases keep that from doubling the work of one still queued, and its count of attempts without progress ends
a document that cannot be indexed ``failed`` instead of retrying it for ever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragline.runtime.recovery import OpenTurn, RecoveryReport, TurnRecovery
from ragline.serverless.indexing import IndexRequest, LambdaIndexScheduler
from ragline.serverless.uploads import UploadStore, stale_before
from ragline.serverless.watch import ExecutionLiveness
from ragline.store.base import KnowledgeStore

logger = logging.getLogger(__name__)

# A turn is recorded with its execution right after StartExecution, within the accept request (ingest_turn's
# 30-second timeout): one that is still unrecorded well after that was never started.
UNRECORDED_GRACE_S = 120.0
# Longer than an invocation of the indexing function (900 s), which records progress after every batch.
STALE_S = 1200.0
_UNRECORDED = "UNRECORDED"


class ExecutionRunnerLiveness:
    """:class:`~ragline.runtime.recovery.RunnerLiveness` of the serverless runtime.

    A turn's runner is its workflow execution.
    """

    def __init__(
        self,
        liveness: ExecutionLiveness,
        *,
        unrecorded_grace_s: float = UNRECORDED_GRACE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Liveness by execution status; a turn with no execution recorded is alive for ``unrecorded_grace_s``."""
        self._liveness = liveness
        self._grace_s = unrecorded_grace_s
        self._clock = clock

    async def alive(self, turn: OpenTurn) -> bool:
        """True while the turn's execution runs (or, unrecorded, while it is young)."""
        status = await asyncio.to_thread(self._liveness.status, turn.key, _UNRECORDED)
        if status == _UNRECORDED:
            return turn.age_s(self._clock()) < self._grace_s
        return status == "RUNNING"


@dataclass
class SweepReport:
    """What one sweep did (the function's reply, and its log line)."""

    turns: RecoveryReport = field(default_factory=RecoveryReport)
    documents: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The report as the function's reply and log fields."""
        return {
            "turns_examined": self.turns.examined,
            "turns_running": self.turns.running,
            "turns_interrupted": list(self.turns.interrupted),
            "messages_completed": list(self.turns.finalized),
            "documents_rescheduled": list(self.documents),
            "uploads_rescheduled": list(self.uploads),
            "seconds": round(self.seconds, 3),
        }


class Sweeper:
    """One sweep: the orphaned turns ended, the stalled documents and uploads indexed again."""

    def __init__(
        self,
        recovery: TurnRecovery,
        knowledge: KnowledgeStore | None = None,
        uploads: UploadStore | None = None,
        scheduler: LambdaIndexScheduler | None = None,
        *,
        stale_s: float = STALE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """A sweeper ending turns through ``recovery`` and, when given the stores, rescheduling stalled work."""
        self._recovery = recovery
        self._knowledge = knowledge
        self._uploads = uploads
        self._scheduler = scheduler
        self._stale_s = stale_s
        self._clock = clock

    async def run(self) -> SweepReport:
        """Sweep once: end orphaned turns, then reschedule documents and uploads stalled ``stale_s``."""
        started = time.monotonic()
        report = SweepReport(turns=await self._recovery.sweep(cause="runner_lost"))
        if self._scheduler is not None:
            await asyncio.to_thread(self._reschedule, report)
        report.seconds = time.monotonic() - started
        logger.info("sweep", extra=report.summary())
        return report

    def _reschedule(self, report: SweepReport) -> None:
        assert self._scheduler is not None
        before = stale_before(self._stale_s, self._clock)
        if self._knowledge is not None:
            stalled = self._knowledge.pending_documents(limit=500, updated_before=before)
            if stalled:
                self._scheduler(stalled)
                report.documents = [d.id for d in stalled]
        if self._uploads is not None:
            for tenant_id, upload_id in self._uploads.processing(updated_before=before):
                self._scheduler.send(IndexRequest(kind="upload", tenant_id=tenant_id, upload_id=upload_id))
                report.uploads.append(upload_id)


def build_sweeper(runtime: Any) -> Sweeper:
    """The sweep of an :class:`~ragline.serverless.aws.AwsRuntime` (a reader's: no model, engine or secret)."""
    container = runtime.container
    aws = runtime.aws
    liveness = ExecutionRunnerLiveness(ExecutionLiveness(runtime.sfn, runtime.state, aws.workflow_type))
    recovery = TurnRecovery(container.sessions, container.stream, container.turns, liveness)
    scheduler = None
    if aws.index_function:
        lambda_client = runtime.session.client("lambda", endpoint_url=aws.aws_endpoint_url or None)
        scheduler = LambdaIndexScheduler(lambda_client, aws.index_function)
    uploads = UploadStore(runtime.state.table, aws.event_ttl_seconds)
    return Sweeper(recovery, container.knowledge, uploads, scheduler)
