"""The embedded runner batches answer chunks by ``stream.embedded_batch_max_delay_ms``, not by AWS's
``batch_max_delay_ms``: its log is a local SQLite table, where a write costs nothing but its time, so it sends frames
four times as often as the DynamoDB log does (bench/mixed_load.py measured the readers' gaps and the server's CPU).

Real SQLite stores and log; the orchestrator is a stand-in that streams three chunks back to back, then ends.
"""

from __future__ import annotations

import asyncio

from ragline.config import load_config
from ragline.event.bus import BusEventType
from ragline.pipeline.emit import emit, event_id
from ragline.runtime.embedded import LocalRunner
from ragline.runtime.turns import QuestionBody, TurnService
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.sessions import SqliteSessionStore
from ragline.stream.sqlite import SqliteStreamManager
from ragline.types import ResponseType


class ThreeChunks:
    async def run(self, cm, plan):
        for word in ("one ", "two ", "three"):
            await emit(cm, BusEventType.FINAL_ANSWER, event_id(cm, "answer"), word)
        await emit(cm, BusEventType.FINAL_ANSWER, event_id(cm, "answer"), done=True)
        await emit(cm, BusEventType.COMPLETE, event_id(cm, "complete"), done=True)


def _answer_events(db, *, embedded_ms: int, aws_ms: int) -> list[str]:
    """The answer's log events (their contents) with the two windows set so."""
    config, templates = load_config()
    stream_config = config.stream.model_copy(
        update={"embedded_batch_max_delay_ms": embedded_ms, "batch_max_delay_ms": aws_ms}
    )
    sessions = SqliteSessionStore(db)
    stream = SqliteStreamManager(db)
    turns = TurnService(config, templates, SqliteKnowledgeStore(db), sessions, stream)
    if db.query_one("SELECT 1 FROM tenants WHERE id = 't1'") is None:
        db.execute("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 't1', '2024-01-01')")
    session = sessions.create_session("t1", [])

    async def scenario():
        runner = LocalRunner(ThreeChunks(), stream, turns, stream_config)
        turn = await turns.accept(session, QuestionBody(query="Count to three", enable_rewrite=False))
        await runner.launch(turn)
        seq = -1
        while True:
            events = await stream.get_events(turn.key)
            if any(e.is_terminal for e in events):
                return events
            seq = events[-1].seq if events else seq
            assert await stream.wait_for_append(turn.key, seq, timeout=10)

    events = asyncio.run(scenario())
    return [e.content for e in events if e.type == ResponseType.ANSWER and e.content]


def test_the_embedded_runner_batches_by_its_own_window_not_awss(db):
    assert _answer_events(db, embedded_ms=0, aws_ms=10_000) == ["one ", "two ", "three"]
    # The first chunk goes at once (nothing was written before it), the next two wait out the window, joined.
    assert _answer_events(db, embedded_ms=10_000, aws_ms=0) == ["one ", "two three"]


def test_the_embedded_window_is_shorter_than_awss_as_shipped():
    config, _ = load_config()
    assert 0 < config.stream.embedded_batch_max_delay_ms < config.stream.batch_max_delay_ms
