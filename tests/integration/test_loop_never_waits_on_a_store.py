"""The event loop that serves every stream never runs a store call: SQLite waits happen on other threads.

One shared SQLite connection guards every store; a thread holding it (indexing a batch, storing a 20 MB upload)
made any store call on the loop wait, and every SSE stream with it. Here every statement the embedded server runs
is checked for the thread it runs on while a user does what users do — upload, list, search, chat, read a stream,
rename, stop — and a statement run on a thread with a running event loop fails the test, naming where it came from.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from typing import Any

import pytest

from ragline.store.db import Database
from tests.support.polling import wait_until
from tests.support.scripted_model import Script


@pytest.fixture
def loop_calls(monkeypatch) -> list[str]:
    """Where each statement run on an event loop's thread came from (ragline's frames, innermost first)."""
    found: list[str] = []
    lock = threading.Lock()

    def checked(name: str) -> Any:
        original = getattr(Database, name)

        def call(self: Database, *args: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return original(self, *args, **kwargs)
            frames = [
                f for f in traceback.extract_stack()[:-1] if "/ragline/" in f.filename and "/store/" not in f.filename
            ]
            where = " <- ".join(
                f"{f.filename.rsplit('/ragline/', 1)[-1]}:{f.lineno} {f.name}" for f in frames[::-1][:4]
            )
            with lock:
                found.append(where)
            return original(self, *args, **kwargs)

        return call

    for name in ("query", "query_one", "execute", "transaction", "snapshot"):
        monkeypatch.setattr(Database, name, checked(name))
    return found


def test_a_users_session_runs_no_statement_on_the_event_loop(ragline, scripted, loop_calls) -> None:
    client = ragline.client
    kb = ragline.create_kb("handbook", {"Leave": "# Leave\n\nStaff take twenty days of paid leave each year."})
    documents = client.get(f"/api/v1/knowledge-bases/{kb}/knowledge").json()["data"]
    assert client.get(f"/api/v1/knowledge-bases/{kb}").status_code == 200
    assert client.get("/api/v1/knowledge-bases").status_code == 200
    added = client.post(
        f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
        json={"title": "Sick days", "content": "Sick days are unlimited."},
    )
    assert added.status_code in (200, 201, 202), added.text
    found = client.post("/api/v1/knowledge-search", json={"query": "paid leave", "knowledge_base_ids": [kb]})
    assert found.status_code == 200, found.text

    session = ragline.session([kb])
    scripted.queue(Script.answer("Twenty ", "days."))
    frames = ragline.chat(session, "How much leave do staff take?")
    assert frames[-1].type == "complete"
    asked = ragline.ask(session, "And sick days?")
    replay = ragline.events(session, asked["assistant_message_id"])
    assert replay[-1].type in ("complete", "error")
    assert client.put(f"/api/v1/sessions/{session}", json={"title": "Leave"}).status_code == 200
    assert client.get(f"/api/v1/sessions/{session}/messages").status_code == 200
    assert client.get(f"/api/v1/messages/{session}/load?limit=20").status_code == 200
    stop = client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": asked["assistant_message_id"]})
    assert stop.status_code == 200, stop.text
    assert client.delete(f"/api/v1/knowledge/{documents[0]['id']}").status_code == 200
    wait_until(lambda: ragline.container.indexer.idle, timeout=120)

    assert not loop_calls, "statements run on the event loop:\n" + "\n".join(sorted(set(loop_calls)))
