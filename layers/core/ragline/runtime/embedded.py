"""The embedded runtime: each turn runs as a task in this process, stages in sequence."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from ragline.config import StreamConfig
from ragline.event.bus import EventBus
from ragline.pipeline.orchestrator import Orchestrator
from ragline.runtime.cancel import CancelToken
from ragline.runtime.turns import AcceptedTurn, TurnService
from ragline.stream.base import StreamManager
from ragline.stream.handler import StreamHandler
from ragline.types import ChatManage, PipelineContext, ResponseType, StreamEvent

logger = logging.getLogger(__name__)


@dataclass
class RunningTurn:
    task: asyncio.Task[None]
    cancel: CancelToken


class LocalRunner:
    """Runs turns as asyncio tasks. Generation continues while no client is connected; a stop cancels it."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        stream: StreamManager,
        turns: TurnService,
        stream_config: StreamConfig,
    ) -> None:
        self._orchestrator = orchestrator
        self._stream = stream
        self._turns = turns
        self._stream_config = stream_config
        self._running: dict[str, RunningTurn] = {}

    @property
    def running(self) -> int:
        return len(self._running)

    async def launch(self, turn: AcceptedTurn) -> None:
        cancel = CancelToken()
        handler = StreamHandler(
            self._stream,
            turn.key,
            cancel=cancel,
            batch_max_delay_ms=self._stream_config.batch_max_delay_ms,
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
        self._running[turn.assistant_message.id] = RunningTurn(task, cancel)

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
                await self._stream.append_event(
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
                await handler.flush()
                await self._turns.finalize(turn.session.id, turn.assistant_message.id)
            finally:
                self._running.pop(turn.assistant_message.id, None)

    async def cancel(self, session_id: str, message_id: str) -> None:
        running = self._running.get(message_id)
        if running is None:
            return
        # The token first: from here on the handler appends nothing, so ``stop`` is the last event. Then
        # the task, so a model that is slow to send its next chunk is not waited for (and its HTTP stream
        # is closed, which ends generation upstream too).
        running.cancel.cancel()
        running.task.cancel()

    async def shutdown(self, timeout: float = 5.0) -> None:
        turns = list(self._running.values())
        for turn in turns:
            turn.cancel.cancel("shutdown")
            turn.task.cancel()
        if turns:
            await asyncio.wait([t.task for t in turns], timeout=timeout)
