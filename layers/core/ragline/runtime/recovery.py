"""Ending the turns whose runner is gone: every turn ends with exactly one terminal event.

A turn's runner (a task of an embedded server, a Step Functions execution) can vanish without writing
``complete``, ``error`` or ``stop``: kill -9, a crash, a lost Lambda, a shutdown that ran out of time.
Readers of such a turn would wait forever. :class:`TurnRecovery` finds those turns and ends them with
``error`` (``data.reason = "interrupted"``) through :meth:`TurnService.interrupt`, which appends only
if the log has no terminal event yet (``StreamManager.append_if_open``) and completes the message with
the partial answer, so the message and the stream agree and a sweep racing a stop or another sweep
changes nothing.

Both runtimes use it; each says how to tell a live runner from a gone one (:class:`RunnerLiveness`):
the embedded runtime by its runners' leases (``ragline.runtime.leases``), the serverless one by the
execution's status.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ragline.runtime.turns import TurnService
from ragline.store.base import SessionStore
from ragline.stream.base import StreamManager, stream_key
from ragline.stream.replay import summarize_answer

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenTurn:
    """A turn that may lack its terminal event: an assistant message not completed, or a log not ended."""

    session_id: str
    message_id: str
    request_id: str = ""
    # When its message was created (epoch seconds); 0 when unknown (a log found without its message).
    created_at: float = 0.0

    @property
    def key(self) -> str:
        """The turn's log key."""
        return stream_key(self.session_id, self.message_id)

    def age_s(self, now: float) -> float:
        """Seconds since the turn was created, at ``now``; infinite when its creation time is unknown."""
        return now - self.created_at if self.created_at else float("inf")


class RunnerLiveness(Protocol):
    """Is this turn's runner alive? A runner that is alive will write the terminal event itself."""

    async def alive(self, turn: OpenTurn) -> bool:
        """True when the turn's runner may still write its terminal event."""
        ...


@dataclass
class RecoveryReport:
    """What one sweep found and did."""

    examined: int = 0
    # Turns ended by this sweep with ``error`` "interrupted".
    interrupted: list[str] = field(default_factory=list)
    # Turns whose log had ended but whose message had not been completed (completed now).
    finalized: list[str] = field(default_factory=list)
    # Turns whose runner is alive.
    running: int = 0


def _epoch(timestamp: str) -> float:
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return 0.0


class TurnRecovery:
    """Finds open turns and ends those whose runner is gone; ``cause`` labels the ``error`` it writes."""

    def __init__(
        self,
        sessions: SessionStore,
        stream: StreamManager,
        turns: TurnService,
        liveness: RunnerLiveness,
        *,
        batch: int = 1000,
    ) -> None:
        """A recovery reading ``sessions`` and ``stream``, ending turns through ``turns`` when ``liveness`` says they are orphaned."""
        self._sessions = sessions
        self._stream = stream
        self._turns = turns
        self._liveness = liveness
        self._batch = batch

    async def open_turns(self) -> list[OpenTurn]:
        """Assistant messages not completed, plus logs without a terminal event.

        Assistant messages not completed, plus logs without a terminal event where the log can list them (a message
        completed without one is what an older version left after SIGTERM).
        """
        found: dict[str, OpenTurn] = {}
        for message in await asyncio.to_thread(self._sessions.incomplete_assistant_messages, self._batch):
            turn = OpenTurn(message.session_id, message.id, message.request_id, _epoch(message.created_at))
            found[turn.key] = turn
        for key in await self._stream.unended_keys(self._batch) or []:
            if key not in found and "#" in key:
                session_id, message_id = key.split("#", 1)
                found[key] = OpenTurn(session_id, message_id)
        return list(found.values())

    async def end_if_orphaned(self, turn: OpenTurn, cause: str = "runner_lost") -> str:
        """End a turn whose runner is gone, and say what this call found.

        ``"interrupted"`` when this call ended the turn, ``"finalized"`` when its log had ended and only the message was
        left to complete, ``"running"`` when its runner is alive, ``"ended"`` otherwise.
        """
        last = await self._stream.last_event(turn.key)
        if last is not None and last.is_terminal:
            # Ended, but the runner died before saving the message: save it from the log.
            if await self._turns.finalize(turn.session_id, turn.message_id):
                return "finalized"
            return "ended"
        if await self._liveness.alive(turn):
            return "running"
        written = await self._turns.interrupt(turn.session_id, turn.message_id, turn.request_id, cause)
        if not written:
            return "ended"
        summary = summarize_answer(await self._stream.get_events(turn.key))
        logger.warning(
            "turn interrupted: its runner is gone",
            extra={
                "session_id": turn.session_id,
                "message_id": turn.message_id,
                "cause": cause,
                "answer_chars": len(summary.content),
            },
        )
        return "interrupted"

    async def sweep(self, cause: str = "runner_lost") -> RecoveryReport:
        """End every open turn whose runner is gone. Safe to run anywhere, any time, concurrently."""
        report = RecoveryReport()
        started = time.monotonic()
        for turn in await self.open_turns():
            report.examined += 1
            try:
                outcome = await self.end_if_orphaned(turn, cause)
            except Exception:
                logger.exception("recovery of a turn failed", extra={"session_id": turn.session_id})
                continue
            if outcome == "interrupted":
                report.interrupted.append(turn.key)
            elif outcome == "finalized":
                report.finalized.append(turn.key)
            elif outcome == "running":
                report.running += 1
        if report.interrupted or report.finalized:
            logger.warning(
                "recovery: %d turns interrupted, %d messages completed from their log (%.0f ms)",
                len(report.interrupted),
                len(report.finalized),
                (time.monotonic() - started) * 1000,
            )
        return report
