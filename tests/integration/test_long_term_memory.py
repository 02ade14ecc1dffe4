"""Long-term memory over HTTP: extracted after a turn, recalled in another session, listed and deleted."""

from __future__ import annotations

import time

from tests.support.scripted_model import Script
from tests.support.sse import read_frames

DOCS = {"Espresso": "# Espresso\n\nEspresso needs a fine grind and water at about 93 degrees Celsius."}


def _memories(ragline, user):
    reply = ragline.client.get("/api/v1/memories", headers={"X-User-Id": user})
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def test_memory_is_extracted_recalled_listed_and_deleted(ragline, scripted):
    kb = ragline.create_kb("coffee", DOCS)
    scripted.memory_extraction = Script.answer('["The user works at Acme Rockets in Toulouse."]')
    first = ragline.session([kb])
    frames = read_frames(
        ragline.client,
        "POST",
        f"/api/v1/knowledge-chat/{first}",
        json={"query": "I work at Acme Rockets in Toulouse. What grind for espresso?", "memory_enabled": True},
        headers={"X-User-Id": "ana"},
    )
    assert frames[-1].type == "complete"
    deadline = time.monotonic() + 10
    while not _memories(ragline, "ana"):
        assert time.monotonic() < deadline, "no memory was extracted"
        time.sleep(0.05)
    [memory] = _memories(ragline, "ana")
    assert memory["content"] == "The user works at Acme Rockets in Toulouse."
    assert _memories(ragline, "bob") == []  # per user

    second = ragline.session([kb])
    frames = read_frames(
        ragline.client,
        "POST",
        f"/api/v1/knowledge-chat/{second}",
        json={"query": "Which company do I work for?", "memory_enabled": True},
        headers={"X-User-Id": "ana"},
    )
    recalled = next(f for f in frames if f.type == "memory_recalled")
    assert [m["content"] for m in recalled.extra["memories"]] == [memory["content"]]
    assert "Acme Rockets" in scripted.answers[-1].system
    types = [f.type for f in frames]
    assert types.index("memory_recalled") < types.index("answer")

    # Off by default: nothing recalled without opting in.
    plain = ragline.chat(ragline.session([kb]), "Which company do I work for?")
    assert "memory_recalled" not in [f.type for f in plain]

    deleted = ragline.client.delete(f"/api/v1/memories/{memory['id']}", headers={"X-User-Id": "ana"})
    assert deleted.status_code == 200
    assert _memories(ragline, "ana") == []
    missing = ragline.client.delete(f"/api/v1/memories/{memory['id']}", headers={"X-User-Id": "ana"})
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found"
