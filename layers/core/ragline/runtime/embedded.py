"""The embedded runtime: each turn runs as a task in this process, stages in sequence.

Every turn ends with exactly one terminal event, whatever ends the task: the orchestrator's own
``complete``/``error``, a stop (the stopper appends ``stop``), an unexpected exception (``error``), or
the process going away — a graceful shutdown (:meth:`LocalRunner.drain`: running turns get a grace
period, the rest end with ``error`` "interrupted") or a crash (the turn's lease outlives the process and
the next start's recovery sweep ends it, see ``ragline.runtime.recovery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ragline.config import RecoveryConfig, StreamConfig
from ragline.event.bus import EventBus
from ragline.event.cancel import CancelToken
from ragline.pipeline.orchestrator import Orchestrator
from ragline.runtime.leases import SqliteTurnLeases
from ragline.runtime.turns import AcceptedTurn, TurnService
from ragline.stream.base import StreamManager
from ragline.stream.handler import StreamHandler
from ragline.types import ChatManage, PipelineContext, ResponseType, StreamEvent

logger = logging.getLogger(__name__)

# The stop route's cancel reason: whoever stopped the turn appends ``stop`` and saves the message.
USER_STOP = "user_requested"
SHUTDOWN = "shutdown"


@dataclass
class RunningTurn:
    """A turn running in this process: its accepted turn, its task and its cancel token."""

    turn: AcceptedTurn
    task: asyncio.Task[None]
    cancel: CancelToken


class LocalRunner:
    """Runs turns as asyncio tasks. Generation continues while no client is connected; a stop cancels it.

    With ``leases`` every running turn is recorded as this runner's, so a recovery sweep in any process
    can tell whether the turn's runner is still alive.
    """

    def __init__(
        self,
        orchestrator: Orchestrator,
        stream: StreamManager,
        turns: TurnService,
        stream_config: StreamConfig,
        leases: SqliteTurnLeases | None = None,
        heartbeat_interval_s: float = RecoveryConfig().heartbeat_interval_s,
    ) -> None:
        """A runner of ``orchestrator``'s turns writing to ``stream``; with ``leases``, a heartbeat every ``heartbeat_interval_s``."""
        self._orchestrator = orchestrator
        self._stream = stream
        self._turns = turns
        self._stream_config = stream_config
        self._leases = leases
        self._heartbeat_interval = heartbeat_interval_s
        self._heartbeat: asyncio.Task[None] | None = None
        self._running: dict[str, RunningTurn] = {}

    @property
    def running(self) -> int:
        """How many turns are running in this process."""
        return len(self._running)

    @property
    def leases(self) -> SqliteTurnLeases | None:
        """The leases this runner records its turns under; None without a recovery sweep to serve."""
        return self._leases

    async def started(self, turn: AcceptedTurn) -> bool:
        """True when the turn runs here, or another runner holds its lease."""
        if turn.assistant_message.id in self._running:
            return True
        return self._leases is not None and await asyncio.to_thread(self._leases.claimed, turn.key)

    async def launch(self, turn: AcceptedTurn) -> None:
        """Start the turn as a task (once: a turn asked again while it runs is left alone)."""
        if turn.assistant_message.id in self._running:
            return  # the same turn, asked again while it runs
        if self._leases is not None:
            await asyncio.to_thread(self._leases.acquire, turn.key)
            self._start_heartbeat()
        cancel = CancelToken()
        handler = StreamHandler(
            self._stream,
            turn.key,
            cancel=cancel,
            batch_max_delay_ms=self._stream_config.embedded_batch_max_delay_ms,
            batch_max_chars=self._stream_config.batch_max_chars,
        )
        bus = EventBus()
        bus.subscribe(handler.handle)
        cm = ChatManage.start(
            turn.request,
            PipelineContext(
                event_bus=bus,
                cancel=cancel,
                session_id=turn.session.id,
                message_id=turn.assistant_message.id,
                user_message_id=turn.user_message.id,
            ),
        )
        task = asyncio.create_task(self._run(cm, turn, handler), name=f"turn-{turn.assistant_message.id}")
        self._running[turn.assistant_message.id] = RunningTurn(turn, task, cancel)

    async def _run(self, cm: ChatManage, turn: AcceptedTurn, handler: StreamHandler) -> None:
        keys = {"session_id": turn.session.id, "message_id": turn.assistant_message.id}
        try:
            await self._orchestrator.run(cm, turn.plan)
        except asyncio.CancelledError:
            logger.info("turn cancelled", extra=keys)
        except Exception as exc:
            logger.exception("turn failed", extra=keys)
            await handler.flush()
            if not handler.finished and not cm.context.cancelled():
                await self._stream.append_if_open(
                    turn.key,
                    StreamEvent(
                        id=f"{turn.request.request_id[:8]}-error",
                        type=ResponseType.ERROR,
                        content="internal error",
                        done=True,
                        data={
                            "stage": "knowledge_qa_execution",
                            "error_type": "internal_error",
                            "error": str(exc),
                        },
                    ),
                )
        finally:
            try:
                await self._end(turn, handler, cm.context.cancel)
            finally:
                self._running.pop(turn.assistant_message.id, None)
                if self._leases is not None:
                    await asyncio.to_thread(self._leases.release, turn.key)

    async def _end(self, turn: AcceptedTurn, handler: StreamHandler, cancel: CancelToken | None) -> None:
        """The turn's task is over: make sure its log has ended, then save the message from it."""
        await handler.flush()
        session_id, message_id = turn.session.id, turn.assistant_message.id
        last = await self._stream.last_event(turn.key)
        if last is not None and last.is_terminal:
            await self._turns.finalize(session_id, message_id)
        elif cancel is not None and cancel.reason == USER_STOP:
            pass  # the stopper appends ``stop`` and saves the message
        else:
            # Cancelled by a shutdown (or by the loop closing), or ended without saying how: never open.
            await self._turns.interrupt(session_id, message_id, turn.request.request_id, SHUTDOWN)

    async def cancel(self, session_id: str, message_id: str) -> None:
        """Stop a running turn: no more events but ``stop``, and its model call closed; unknown turns are ignored."""
        running = self._running.get(message_id)
        if running is None:
            return
        # The token first: from here on the handler appends nothing, so ``stop`` is the last event. Then
        # the task, so a model that is slow to send its next chunk is not waited for (and its HTTP stream
        # is closed, which ends generation upstream too).
        running.cancel.cancel(USER_STOP)
        running.task.cancel()

    async def drain(self, grace_s: float, hurry: Callable[[], bool] | None = None) -> list[str]:
        """Graceful shutdown.

        Accept no more turns, let running ones finish for ``grace_s`` (less if ``hurry()`` turns true), then end the
        rest with ``error`` "interrupted" (the message saved with the partial answer). Returns the keys of the turns it
        interrupted.
        """
        self._turns.close()
        deadline = time.monotonic() + grace_s
        while self._running and (remaining := deadline - time.monotonic()) > 0:
            if hurry is not None and hurry():
                break
            step = remaining if hurry is None else min(remaining, 0.2)
            await asyncio.wait([r.task for r in self._running.values()], timeout=step)
        left = list(self._running.values())
        for running in left:
            # Nothing more from the turn itself: the ``error`` below is its last event.
            running.cancel.cancel(SHUTDOWN)
        interrupted: list[str] = []
        for running in left:
            turn = running.turn
            if await self._turns.interrupt(
                turn.session.id, turn.assistant_message.id, turn.request.request_id, SHUTDOWN
            ):
                interrupted.append(turn.key)
            running.task.cancel()
        if left:
            await asyncio.wait([r.task for r in left], timeout=5.0)
            logger.warning("shutdown: %d turns still running after %.1f s were interrupted", len(left), grace_s)
        await self.close()
        return interrupted

    async def shutdown(self, timeout: float = 5.0) -> None:
        """End every running turn now (the lifespan's last word; ``drain`` gives them time first)."""
        await self.drain(0.0)

    async def close(self) -> None:
        """Stop the heartbeat, and give up the leases once no turn runs."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None
        if self._leases is not None and not self._running:
            await asyncio.to_thread(self._leases.close)

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.create_task(self._beat(), name="runner-heartbeat")

    async def _beat(self) -> None:
        assert self._leases is not None
        while True:
            await asyncio.sleep(self._heartbeat_interval)
            try:
                await asyncio.to_thread(self._leases.heartbeat)
            except Exception:
                logger.warning("runner heartbeat failed", exc_info=True)
