"""Resume from any offset rebuilds the identical answer; stop cancels generation with no client attached."""

from __future__ import annotations

import time
from functools import partial

from tests.support.polling import wait_until
from tests.support.scripted_model import Script
from tests.support.sse import answer_text, joined_runs

DOCS = {"Guide": "# Guide\n\nThe reactor cools with heavy water. Heavy water slows neutrons down."}
WORDS = [f"word{i} " for i in range(40)]


_wait_for = partial(wait_until, timeout=15.0, interval=0.02)


def test_resume_with_last_event_id_rebuilds_the_identical_answer(ragline, scripted):
    session = ragline.session([ragline.create_kb("kb", DOCS)])
    scripted.queue(Script.answer(*WORDS, delay=0.03))
    ids = ragline.ask(session, "How does the reactor cool?")
    message = ids["assistant_message_id"]

    # Read until the answer is under way, then drop the connection.
    first = ragline.events(session, message, limit=9)
    assert any(f.type == "answer" for f in first), [f.type for f in first]
    last_id = first[-1].id
    rest = ragline.events(session, message, headers={"Last-Event-ID": str(last_id)})
    assert rest[0].id > last_id
    assert rest[-1].type == "complete"
    resumed = answer_text(first) + answer_text(rest)

    full = ragline.events(session, message)
    assert resumed == answer_text(full) == "".join(WORDS)
    assert ragline.messages(session)[1]["content"] == resumed
    # Frames are never repeated across the reconnect.
    assert not {f.id for f in first} & {f.id for f in rest}


def _runs(frames):
    return joined_runs((f.type, f.content, f.done) for f in frames)


def test_offset_query_starts_at_that_sequence_number(ragline, scripted):
    session = ragline.session([ragline.create_kb("kb", DOCS)])
    scripted.queue(Script.answer(*WORDS[:5]))
    ids = ragline.ask(session, "How does the reactor cool?")
    full = ragline.events(session, ids["assistant_message_id"])
    # The pivot: an event no read joins to its neighbours (a chunk may be, in a read that catches up).
    pivot = next(f.id for f in full[len(full) // 2 :] if f.done or f.type not in {"answer", "thinking"})
    tail = ragline.events(session, ids["assistant_message_id"], params={"offset": pivot})
    assert tail[0].id == pivot
    assert tail[-1].id == full[-1].id
    assert _runs(tail) == _runs([f for f in full if f.id >= pivot])
    # The WeKnora-compatible route replays the same log from 0.
    compat = _compat(ragline, session, ids["assistant_message_id"])
    assert _runs(compat) == _runs(full)
    assert compat[-1].id == full[-1].id


def _compat(ragline, session, message):
    from tests.support.sse import read_frames

    return read_frames(
        ragline.client, "GET", f"/api/v1/sessions/continue-stream/{session}", params={"message_id": message}
    )


def test_stop_without_a_client_cancels_generation_and_keeps_the_partial_answer(ragline, scripted):
    session = ragline.session([ragline.create_kb("kb", DOCS)])
    scripted.queue(Script.answer(*WORDS, delay=0.1))
    ids = ragline.ask(session, "How does the reactor cool?")
    message = ids["assistant_message_id"]

    # No client is connected: wait until the model has streamed a few pieces, then stop.
    _wait_for(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 5)
    stop = ragline.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": message})
    assert stop.status_code == 200, stop.text
    assert stop.json()["data"]["status"] == "stopped"

    frames = ragline.events(session, message)
    types = [f.type for f in frames]
    assert types[-1] == "stop"
    assert frames[-1].done
    assert frames[-1].extra["reason"] == "user_requested"
    assert "complete" not in types
    partial = answer_text(frames)
    assert partial
    assert partial != "".join(WORDS)
    assert "".join(WORDS).startswith(partial)

    assistant = _wait_for(lambda: next((m for m in ragline.messages(session) if m["role"] == "assistant"), None))
    assert assistant["is_completed"] is True
    assert assistant["content"] == partial
    # The model's stream was abandoned: it never got to send every piece.
    time.sleep(0.5)
    assert scripted.answers[-1].pieces_sent < len(WORDS)
    assert not scripted.answers[-1].completed
    # Nothing is appended after the stop.
    assert [f.type for f in ragline.events(session, message)] == types

    again = ragline.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": message})
    assert again.status_code == 200
    # Said as it is: the answer was stopped, not completed.
    assert again.json()["data"]["status"] == "already_stopped"
    assert again.json()["message"] == "The answer had already been stopped"


def test_stop_while_a_client_is_reading_ends_its_stream(ragline, scripted):
    import threading

    session = ragline.session([ragline.create_kb("kb", DOCS)])
    scripted.queue(Script.answer(*WORDS, delay=0.1))
    ids = ragline.ask(session, "How does the reactor cool?")
    message = ids["assistant_message_id"]
    result = {}
    reader = threading.Thread(target=lambda: result.setdefault("frames", ragline.events(session, message)))
    reader.start()
    _wait_for(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 3)
    ragline.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": message}).raise_for_status()
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert result["frames"][-1].type == "stop"


def test_only_the_owning_tenant_may_stop(ragline, scripted):
    session = ragline.session([ragline.create_kb("kb", DOCS)])
    scripted.queue(Script.answer(*WORDS, delay=0.05))
    ids = ragline.ask(session, "How does the reactor cool?")
    _, other_key = ragline.container.tenants.create("intruder")
    reply = ragline.client.post(
        f"/api/v1/sessions/{session}/stop",
        json={"message_id": ids["assistant_message_id"]},
        headers={"X-API-Key": other_key},
    )
    assert reply.status_code == 404
    frames = ragline.events(session, ids["assistant_message_id"])
    assert frames[-1].type == "complete"


def test_a_question_asked_again_after_its_accept_died_before_the_start_is_answered(ragline, scripted, monkeypatch):
    """The accept stored the turn (and its ``agent_query``) and died before the turn started (a crash between
    the two); the client asks again with the same request id: the same turn, now started, answered once."""
    from ragline.runtime.embedded import LocalRunner

    session = ragline.session([])
    launch = LocalRunner.launch

    async def dies(self, turn):
        raise RuntimeError("the process died before the turn started")

    monkeypatch.setattr(LocalRunner, "launch", dies)
    body = {"query": "Are you there?", "request_id": "asked-twice"}
    first = ragline.client.post(f"/api/v1/sessions/{session}/questions", json=body)
    assert first.status_code == 500
    monkeypatch.setattr(LocalRunner, "launch", launch)

    scripted.queue(Script.answer("Here ", "I am."))
    again = ragline.ask(session, "Are you there?", request_id="asked-twice")
    frames = ragline.events(session, again["assistant_message_id"])
    assert [f.type for f in frames].count("agent_query") == 1
    assert frames[-1].type == "complete"
    assert answer_text(frames) == "Here I am."
    # Asked a third time: the same turn, finished; nothing runs again.
    third = ragline.ask(session, "Are you there?", request_id="asked-twice")
    assert third["assistant_message_id"] == again["assistant_message_id"]
    # Read again once finished, the log's answer chunks may come joined in one frame (a catch-up), where the first
    # read may have followed them live: the same events, not necessarily the same frames.
    replayed = ragline.events(session, again["assistant_message_id"])
    assert [f.type for f in replayed].count("agent_query") == 1
    assert answer_text(replayed) == "Here I am."
    assert replayed[-1] == frames[-1]
    assert len(scripted.answers) == 1


def test_the_conversation_read_right_after_the_last_frame_has_the_saved_answer(ragline, scripted, monkeypatch):
    """The runner saves the answer from its log just after the log's last event: a client that reads that frame
    and asks for the conversation at once (WeKnora's app does) gets the answer saved, not one still being
    written. Here the runner's save is held until the conversation has been read."""
    import asyncio
    import threading

    from ragline.runtime.embedded import LocalRunner

    read = threading.Event()
    held: list[str] = []
    end = LocalRunner._end

    async def held_end(self, turn, handler, cancel):
        held.append(turn.assistant_message.id)
        await asyncio.to_thread(read.wait, 60)
        return await end(self, turn, handler, cancel)

    monkeypatch.setattr(LocalRunner, "_end", held_end)
    session = ragline.session([])
    scripted.queue(Script.answer("Saved ", "at once."))
    try:
        frames = ragline.chat(session, "Are you saved?")
        assert frames[-1].type == "complete"
        assert held  # the runner had not saved the answer when the last frame was read
        for reply in (
            ragline.client.get(f"/api/v1/sessions/{session}/messages"),
            ragline.client.get(f"/api/v1/messages/{session}/load?limit=20"),
        ):
            answer = reply.json()["data"][-1]
            assert (answer["is_completed"], answer["content"]) == (True, "Saved at once."), answer
    finally:
        read.set()
