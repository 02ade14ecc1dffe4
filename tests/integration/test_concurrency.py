"""Twenty turns at once: every one completes with its own answer and log."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from ragline.stream.base import stream_key
from ragline.stream.coalesce import coalesce
from tests.support.scripted_model import Script
from tests.support.sse import answer_text, read_frames


def test_twenty_concurrent_turns(ragline, scripted):
    kb = ragline.create_kb("kb", {"Doc": "# Doc\n\nThe lighthouse keeper lit the lamp at dusk every day."})
    scripted.default = Script.answer("The ", "keeper ", "lit ", "the ", "lamp.", delay=0.02)
    sessions = [ragline.session([kb]) for _ in range(20)]

    def turn(session):
        return read_frames(
            ragline.client, "POST", f"/api/v1/knowledge-chat/{session}", json={"query": "When was the lamp lit?"}
        )

    try:
        with ThreadPoolExecutor(max_workers=20) as pool:
            results = list(pool.map(turn, sessions))
    finally:
        scripted.default = Script.answer("The ", "answer ", "is ", "42.")
    for session, frames in zip(sessions, results, strict=True):
        assert frames[-1].type == "complete", [f.type for f in frames]
        assert answer_text(frames) == "The keeper lit the lamp."
        assert {f.data.get("session_id") for f in frames} == {session}
        # Every event once, in log order: a reader that fell behind gets the answer chunks waiting for it as one
        # frame with the last one's id (replay coalescing), as a reader resuming would; under load that happens.
        (message_id,) = {f.data.get("assistant_message_id") for f in frames}
        log = asyncio.run(ragline.container.stream.get_events(stream_key(session, message_id)))
        assert [f.id for f in frames] == sorted({f.id for f in frames})
        assert frames[-1].id == log[-1].seq
        by_seq = {e.seq: e for e in log}
        for before, frame in zip([None, *frames], frames, strict=False):
            first = 0 if before is None else before.id + 1
            (joined,) = coalesce(log[first : frame.id + 1])  # what lay between is this frame, joined
            assert (joined.seq, joined.type.value, joined.content) == (frame.id, frame.type, frame.content)
        assert by_seq[frames[-1].id].is_terminal
    assert len(scripted.answers) == 20
