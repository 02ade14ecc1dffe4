"""A stop with no reader attached closes the model's stream, in both runtimes (the reference's watcher).

The scripted model streams five pieces, then pauses 15 s before each of the next (a model thinking
slowly), and records when its client closed the stream before the end. Nobody reads the turn's events.
The stop, sent during a pause, must reach the model without waiting for its next piece: in the embedded
runtime by cancelling the turn's task, in the serverless one through the stop flag the running step polls
(no process can cancel a running Lambda). How fast is measured by bench/soak.py.
"""

from __future__ import annotations

from tests.support.polling import wait_until
from tests.support.scripted_model import Script
from tests.support.sse import answer_text

DOCS = {"Guide": "# Guide\n\nThe reactor cools with heavy water. Heavy water slows neutrons down."}
WORDS = [f"word{i} " for i in range(25)]


def _slow_answer() -> Script:
    script = Script.answer(*WORDS, delay=0.05)
    for piece in script.pieces[5:]:
        piece.delay = 15.0
    return script


def _answering(scripted):
    return scripted.answers and scripted.answers[-1].pieces_sent >= 5


def test_embedded_stop_without_a_reader_closes_the_model_stream(ragline, scripted):
    session = ragline.session([ragline.create_kb("kb", DOCS)])
    scripted.queue(_slow_answer())
    ids = ragline.ask(session, "How does the reactor cool?")
    wait_until(lambda: _answering(scripted))
    reply = ragline.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": ids["assistant_message_id"]})
    assert reply.json()["data"]["status"] == "stopped"
    answer = scripted.answers[-1]
    wait_until(lambda: answer.closed_early, timeout=10)
    assert not answer.completed
    assert answer.pieces_sent < len(WORDS)
    frames = ragline.events(session, ids["assistant_message_id"])
    assert frames[-1].type == "stop"
    assert ragline.messages(session)[1]["content"] == answer_text(frames)


def test_serverless_stop_without_a_reader_closes_the_model_stream(aws, aws_search, scripted):
    """On the deployed stack: the stop goes to stream_reader's function URL, the pipeline_step sandbox streaming
    the answer sees the flag at its next poll and closes the model's stream at once."""
    session = aws.session([aws.kb(DOCS)])
    scripted.queue(_slow_answer())
    ids = aws.ask(session, "How does the reactor cool?")
    wait_until(lambda: _answering(scripted), timeout=60)
    reply = aws.stream.post(f"api/v1/sessions/{session}/stop", json={"message_id": ids["assistant_message_id"]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["data"]["status"] == "stopped"
    answer = scripted.answers[-1]
    # The running step sees the flag at its next poll and closes the model's stream at once.
    wait_until(lambda: answer.closed_early, timeout=10)
    assert not answer.completed
    assert answer.pieces_sent < len(WORDS)
    aws.wait(ids)
    events = aws.log(ids)
    assert [e.type.value for e in events if e.is_terminal] == ["stop"]
