"""Twenty turns at once: every one completes with its own answer and log."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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
        assert [f.id for f in frames] == list(range(len(frames)))  # every frame once, in log order
    assert len(scripted.answers) == 20
