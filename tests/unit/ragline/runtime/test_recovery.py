"""Every turn ends once: recovery of turns whose runner is gone, the embedded leases, graceful drain.

Real SQLite stores and log; the runner's orchestrator is a stand-in that streams answer chunks until it is
told to finish, so a test decides which turns are still running when the process "goes away".
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from ragline.config import load_config
from ragline.event.bus import BusEventType
from ragline.pipeline.emit import emit, event_id
from ragline.runtime.embedded import LocalRunner
from ragline.runtime.leases import HOST, SqliteTurnLeases, process_alive, process_start
from ragline.runtime.recovery import OpenTurn, TurnRecovery
from ragline.runtime.turns import QuestionBody, TurnsClosed, TurnService
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.sessions import SqliteSessionStore
from ragline.stream.sqlite import SqliteStreamManager
from ragline.types import ResponseType, StreamEvent


class Stores:
    def __init__(self, db):
        config, templates = load_config()
        self.db = db
        self.config = config
        self.sessions = SqliteSessionStore(db)
        self.stream = SqliteStreamManager(db)
        self.turns = TurnService(config, templates, SqliteKnowledgeStore(db), self.sessions, self.stream)
        db.execute("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 't1', '2024-01-01')")
        self.session = self.sessions.create_session("t1", [])

    async def accept(self, query="How does it work?"):
        return await self.turns.accept(self.session, QuestionBody(query=query, enable_rewrite=False))

    async def answer(self, turn, *parts):
        for part in parts:
            await self.stream.append_event(turn.key, StreamEvent(id="a", type=ResponseType.ANSWER, content=part))

    async def events(self, turn):
        return await self.stream.get_events(turn.key)

    def message(self, turn):
        return self.sessions.message("t1", turn.session.id, turn.assistant_message.id)


@pytest.fixture
def stores(db):
    return Stores(db)


class Liveness:
    def __init__(self, alive=()):
        self.alive_keys = set(alive)

    async def alive(self, turn: OpenTurn) -> bool:
        return turn.key in self.alive_keys


def terminal_events(events):
    return [e for e in events if e.is_terminal]


# TurnService.interrupt -------------------------------------------------------------------------------------
def test_interrupt_appends_one_error_keeps_the_partial_answer_and_marks_the_message(stores):
    async def scenario():
        turn = await stores.accept()
        await stores.answer(turn, "Heavy water ", "slows neutrons")
        first = await stores.turns.interrupt(turn.session.id, turn.assistant_message.id, turn.request.request_id)
        again = await stores.turns.interrupt(turn.session.id, turn.assistant_message.id, turn.request.request_id)
        return turn, first, again, await stores.events(turn)

    turn, first, again, events = asyncio.run(scenario())
    assert (first, again) == (True, False)
    [error] = terminal_events(events)
    assert error is events[-1]
    assert error.type == ResponseType.ERROR
    assert error.data["reason"] == "interrupted"
    assert error.data["partial"] is True
    assert error.data["answer_chars"] == len("Heavy water slows neutrons")
    message = stores.message(turn)
    assert message.is_completed
    assert message.content == "Heavy water slows neutrons"
    assert message.stop_reason == "interrupted"


def test_interrupt_of_an_ended_turn_changes_nothing_but_saves_the_message(stores):
    async def scenario():
        turn = await stores.accept()
        await stores.answer(turn, "done")
        await stores.stream.append_event(turn.key, StreamEvent(id="c", type=ResponseType.COMPLETE, done=True))
        written = await stores.turns.interrupt(turn.session.id, turn.assistant_message.id)
        return turn, written, await stores.events(turn)

    turn, written, events = asyncio.run(scenario())
    assert written is False
    assert [e.type for e in terminal_events(events)] == [ResponseType.COMPLETE]
    assert stores.message(turn).content == "done"
    assert stores.message(turn).stop_reason == ""


# TurnRecovery ------------------------------------------------------------------------------------------------
def test_sweep_ends_only_the_turns_whose_runner_is_gone(stores):
    async def scenario():
        orphan = await stores.accept("orphan")
        await stores.answer(orphan, "partial")
        alive = await stores.accept("alive")
        await stores.answer(alive, "still going")
        # Ended in the log, but the runner died before it saved the message.
        unsaved = await stores.accept("unsaved")
        await stores.answer(unsaved, "whole answer")
        await stores.stream.append_event(unsaved.key, StreamEvent(id="c", type=ResponseType.COMPLETE, done=True))
        # What an older version left after SIGTERM: the message saved, the log never ended.
        legacy = await stores.accept("legacy")
        await stores.answer(legacy, "cut")
        await stores.turns.finalize(legacy.session.id, legacy.assistant_message.id)
        recovery = TurnRecovery(stores.sessions, stores.stream, stores.turns, Liveness({alive.key}))
        report = await recovery.sweep(cause="restart")
        second = await recovery.sweep(cause="restart")
        return (orphan, alive, unsaved, legacy), report, second

    (orphan, alive, unsaved, legacy), report, second = asyncio.run(scenario())
    assert sorted(report.interrupted) == sorted([orphan.key, legacy.key])
    assert report.finalized == [unsaved.key]
    assert report.running == 1
    assert (second.interrupted, second.finalized, second.running) == ([], [], 1)
    for turn in (orphan, legacy):
        events = asyncio.run(stores.events(turn))
        assert [e.data.get("reason") for e in terminal_events(events)] == ["interrupted"]
        assert events[-1].data["cause"] == "restart"
    assert stores.message(orphan).stop_reason == "interrupted"
    assert stores.message(orphan).content == "partial"
    assert stores.message(unsaved).is_completed
    assert stores.message(unsaved).content == "whole answer"
    assert terminal_events(asyncio.run(stores.events(alive))) == []
    assert not stores.message(alive).is_completed


def test_concurrent_sweeps_and_a_stop_leave_one_terminal_event(stores):
    class Launcher:
        async def launch(self, turn):
            return None

        async def cancel(self, session_id, message_id):
            return None

        async def started(self, turn):
            return True

    async def scenario():
        turn = await stores.accept()
        await stores.answer(turn, "some text")
        recovery = TurnRecovery(stores.sessions, stores.stream, stores.turns, Liveness())
        stop = stores.turns.stop(Launcher(), "t1", turn.session.id, turn.assistant_message.id)
        results = await asyncio.gather(recovery.sweep(), recovery.sweep(), stop, return_exceptions=True)
        return turn, results, await stores.events(turn)

    turn, results, events = asyncio.run(scenario())
    assert not [r for r in results if isinstance(r, Exception)]
    assert len(terminal_events(events)) == 1
    message = stores.message(turn)
    assert message.content == "some text"
    assert message.stop_reason == {"stop": "stopped", "error": "interrupted"}[events[-1].type.value]


# SqliteTurnLeases ----------------------------------------------------------------------------------------------
def _lease(db, key, runner_id, host, pid, start, heartbeat):
    db.execute(
        "INSERT INTO turn_runners (id, host, pid, process_start, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
        (runner_id, host, pid, start, heartbeat),
    )
    db.execute("INSERT INTO turn_leases (stream_key, runner_id, acquired_at) VALUES (?, ?, ?)", (key, runner_id, 0))


def _alive(leases, key, created_at=0.0):
    session_id, message_id = key.split("#")
    return asyncio.run(leases.alive(OpenTurn(session_id, message_id, created_at=created_at)))


def test_a_lease_of_a_process_that_is_gone_reads_as_gone_at_once(db):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    child.wait()
    leases = SqliteTurnLeases(db)
    _lease(db, "s#dead", "r-dead", HOST, child.pid, start, time.time())  # a fresh heartbeat does not matter
    assert _alive(leases, "s#dead") is False


def test_a_lease_of_a_live_process_on_this_host_reads_as_alive(db):
    parent = os.getppid()
    leases = SqliteTurnLeases(db)
    _lease(db, "s#live", "r-live", HOST, parent, process_start(parent), 0.0)  # however old its heartbeat
    assert _alive(leases, "s#live") is True
    # The same pid started at another time is another process: the runner is gone.
    _lease(db, "s#reused", "r-reused", HOST, parent, "1", 0.0)
    assert _alive(leases, "s#reused") is (process_start(parent) == "")


def test_a_runner_on_another_host_is_judged_by_its_heartbeat(db):
    leases = SqliteTurnLeases(db, ttl_s=30)
    _lease(db, "s#fresh", "r-fresh", "elsewhere/boot", 1, "", time.time() - 5)
    _lease(db, "s#stale", "r-stale", "elsewhere/boot", 2, "", time.time() - 31)
    assert _alive(leases, "s#fresh") is True
    assert _alive(leases, "s#stale") is False


def test_an_unclaimed_turn_is_left_alone_for_the_grace_period(db):
    leases = SqliteTurnLeases(db, unclaimed_grace_s=60)
    assert _alive(leases, "s#young", created_at=time.time() - 5) is True
    assert _alive(leases, "s#old", created_at=time.time() - 61) is False


def test_this_processs_runners_answer_for_their_own_turns(db):
    mine, other = SqliteTurnLeases(db), SqliteTurnLeases(db)
    mine.acquire("s#1")
    assert _alive(mine, "s#1") is True
    assert _alive(other, "s#1") is True  # another runner of this process asks the owner
    mine.release("s#1")
    assert _alive(other, "s#1", created_at=time.time() - 3600) is False
    mine.acquire("s#2")
    mine.close()  # a runner closed without ending its turn: gone
    assert _alive(other, "s#2", created_at=time.time() - 3600) is False


def test_process_alive_of_this_process():
    assert process_alive(os.getpid(), process_start(os.getpid())) is True


# LocalRunner.drain -----------------------------------------------------------------------------------------
class StandInOrchestrator:
    """Streams an answer chunk every 10 ms; turns named "quick" finish after three chunks."""

    async def run(self, cm, plan):
        for i in range(10_000):
            await emit(cm, BusEventType.FINAL_ANSWER, event_id(cm, "answer"), f"w{i} ")
            if cm.request.query == "quick" and i == 2:
                await emit(cm, BusEventType.FINAL_ANSWER, event_id(cm, "answer"), done=True)
                await emit(cm, BusEventType.COMPLETE, event_id(cm, "complete"), done=True)
                return
            await asyncio.sleep(0.01)


def test_drain_lets_quick_turns_finish_and_interrupts_the_rest_with_message_and_stream_agreeing(stores):
    async def scenario():
        leases = SqliteTurnLeases(stores.db)
        runner = LocalRunner(StandInOrchestrator(), stores.stream, stores.turns, stores.config.stream, leases=leases)
        slow = [await stores.accept("slow") for _ in range(3)]
        quick = await stores.accept("quick")
        for turn in [*slow, quick]:
            await runner.launch(turn)
        assert await stores.stream.wait_for_append(slow[0].key, 2, timeout=5)
        started = time.monotonic()
        interrupted = await runner.drain(grace_s=0.3)
        took = time.monotonic() - started
        with pytest.raises(TurnsClosed):
            await stores.accept("late")
        return slow, quick, interrupted, took, runner

    slow, quick, interrupted, took, runner = asyncio.run(scenario())
    assert sorted(interrupted) == sorted(t.key for t in slow)
    assert 0.3 <= took < 5
    assert runner.running == 0
    quick_events = asyncio.run(stores.events(quick))
    assert [e.type for e in terminal_events(quick_events)] == [ResponseType.COMPLETE]
    for turn in slow:
        events = asyncio.run(stores.events(turn))
        [terminal] = terminal_events(events)
        assert terminal is events[-1]
        assert terminal.data["reason"] == "interrupted"
        assert terminal.data["cause"] == "shutdown"
        message = stores.message(turn)
        streamed = "".join(e.content for e in events if e.type == ResponseType.ANSWER)
        assert message.is_completed
        assert message.stop_reason == "interrupted"
        assert message.content == streamed != ""
    # The runner left nothing behind that a sweep would take for a live turn.
    assert stores.db.query("SELECT * FROM turn_leases") == []
    assert stores.db.query("SELECT * FROM turn_runners") == []


def test_a_task_cancelled_from_outside_still_ends_its_turn(stores):
    """asyncio.run cancelling the turn's task (``ragline ask --local`` on Ctrl-C) ends it as interrupted."""

    async def scenario():
        runner = LocalRunner(StandInOrchestrator(), stores.stream, stores.turns, stores.config.stream)
        turn = await stores.accept("slow")
        await runner.launch(turn)
        assert await stores.stream.wait_for_append(turn.key, 2, timeout=5)
        return turn  # the loop closes with the task still running

    turn = asyncio.run(scenario())
    events = asyncio.run(stores.events(turn))
    assert [e.data.get("reason") for e in terminal_events(events)] == ["interrupted"]
    assert stores.message(turn).stop_reason == "interrupted"
