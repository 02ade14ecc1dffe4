"""Uploads through the real HTTP server: keyword-searchable at the reply, vectors in the background with a
status and progress, one size limit for every upload route, a chunk limit, and the CLI's --wait/--no-wait.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ragline.ingest.language import preferred_embedding_model
from tests.support.polling import CLIENT_TIMEOUT, wait_until

NOTE = "# Heavy water\n\nHeavy water is deuterium oxide; reactors use it as a moderator."


def search(ragline, kb: str, query: str, retrievers: str) -> list[dict]:
    body = {"query": query, "knowledge_base_ids": [kb], "retrievers": retrievers, "enable_query_expansion": False}
    reply = ragline.client.post("/api/v1/knowledge-search", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def test_an_upload_is_keyword_searchable_at_the_reply_and_indexed_in_the_background(ragline):
    kb = ragline.create_kb("reactors")
    reply = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Moderators", "content": NOTE}
    )
    assert reply.status_code == 202, reply.text
    document = reply.json()["data"]
    assert document["status"] in ("pending", "indexed")  # the worker may already be done
    assert document["size_bytes"] == len(NOTE.encode())
    assert document["chunk_count"] == 1
    # Keyword search finds it as soon as the reply is there, vectors or not.
    assert [h["knowledge_id"] for h in search(ragline, kb, "deuterium moderator", "keyword")] == [document["id"]]
    url = f"/api/v1/knowledge-bases/{kb}/documents/{document['id']}"
    indexed = wait_until(lambda: (d := ragline.client.get(url).json()["data"])["status"] == "indexed" and d)
    assert indexed["embedded_count"] == indexed["chunk_count"] == 1
    # Detection gave the English knowledge base today's English model (bge-small-en where make install fetched it).
    assert indexed["embedding_model"] == preferred_embedding_model("en", ragline.container.models)
    listed = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"]
    assert [d["status"] for d in listed] == ["indexed"]
    assert [h["knowledge_id"] for h in search(ragline, kb, "what slows neutrons in a reactor", "vector")] == [
        document["id"]
    ]


def test_wait_replies_once_indexed(ragline):
    kb = ragline.create_kb("waited")
    reply = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", params={"wait": "true"}, json={"title": "M", "content": NOTE}
    )
    assert reply.status_code == 201, reply.text
    assert (reply.json()["data"]["status"], reply.json()["data"]["embedded_count"]) == ("indexed", 1)


def test_one_size_limit_for_json_and_multipart_uploads(ragline, monkeypatch):
    kb = ragline.create_kb("limits")
    monkeypatch.setattr(ragline.container.config.limits, "max_upload_bytes", 1000)
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    big = "word " * 400
    for reply in (
        ragline.client.post(url, json={"title": "Big", "content": big}),
        ragline.client.post(url, files={"file": ("big.txt", big.encode(), "text/plain")}),
        ragline.client.post(
            f"/api/v1/knowledge-bases/{kb}/faq", files={"file": ("faq.json", big.encode(), "application/json")}
        ),
        ragline.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": [{"question": big, "answer": "a"}]}),
    ):
        assert reply.status_code == 413, reply.text
        assert reply.json()["error"]["field"] == "file"
    # A chunked JSON body (no Content-Length) is cut off at the limit too.
    chunked = ragline.client.post(
        url,
        content=iter([json.dumps({"title": "Big", "content": big}).encode()]),
        headers={"Content-Type": "application/json"},
    )
    assert chunked.status_code == 413, chunked.text
    assert ragline.client.get(url).json()["data"] == []
    assert ragline.client.post(url, json={"title": "Small", "content": "word " * 50}).status_code == 202


def test_too_many_chunks_is_refused_with_a_clear_error(ragline, monkeypatch):
    kb = ragline.create_kb("chunks")
    monkeypatch.setattr(ragline.container.config.ingestion, "max_chunks_per_document", 2)
    text = "\n\n".join(f"Paragraph {i}. " + "filler " * 150 for i in range(5))
    reply = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Long", "content": text})
    assert reply.status_code == 413, reply.text
    assert reply.json()["error"]["type"] == "too_many_chunks"
    assert "limit is 2" in reply.json()["error"]["message"]


def test_a_document_deleted_while_it_is_stored_in_parts_answers_409_and_leaves_nothing(ragline, monkeypatch):
    """A large document is stored in parts; deleted through the API between two of them, its upload stops."""
    kb = ragline.create_kb("parts")
    monkeypatch.setattr(ragline.container.config.ingestion, "store_part_chunks", 2)
    service, url = ragline.container.ingest, f"/api/v1/knowledge-bases/{kb}/documents"
    writes, calls, deletes = service._writes, [], []

    def delete_after_the_first_part(call):
        calls.append(call)
        if len(calls) == 2:  # between the store's first two transactions, as any client's request may come
            (document,) = ragline.client.get(url).json()["data"]
            deletes.append(ragline.client.delete(f"/api/v1/knowledge/{document['id']}").status_code)
        return writes(call)

    monkeypatch.setattr(service, "_writes", delete_after_the_first_part)
    text = "\n\n".join(f"Paragraph {i}. " + "filler " * 150 for i in range(5))
    reply = ragline.client.post(url, json={"title": "Long", "content": text})
    assert deletes == [200]
    assert reply.status_code == 409, reply.text
    assert reply.json()["error"]["type"] == "document_deleted"
    assert ragline.client.get(url).json()["data"] == []


def test_the_api_answers_while_a_document_is_being_accepted(ragline, monkeypatch):
    """The accept step runs off the event loop: while one is in progress (held until the health check has
    its answer), the server answers a health check. On the loop, the check would wait for the upload."""
    kb = ragline.create_kb("large")
    accepting, answered = threading.Event(), threading.Event()
    original = ragline.container.ingest.accept_many

    def held_accept(*args, **kwargs):
        accepting.set()
        assert answered.wait(timeout=30), "the health check was not answered during the upload"
        return original(*args, **kwargs)

    monkeypatch.setattr(ragline.container.ingest, "accept_many", held_accept)
    replies: list[int] = []

    def upload() -> None:
        with httpx.Client(base_url=ragline.url, headers={"X-API-Key": ragline.key}, timeout=CLIENT_TIMEOUT) as client:
            replies.append(
                client.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "L", "content": NOTE}).status_code
            )

    worker = threading.Thread(target=upload)
    worker.start()
    assert accepting.wait(timeout=30)
    assert httpx.get(f"{ragline.url}/healthz", timeout=10).status_code == 200
    answered.set()
    worker.join(timeout=60)
    assert replies == [202]


def test_an_upload_whose_client_goes_away_is_cancelled_and_stores_nothing(ragline, monkeypatch):
    """While the accept step runs, the server watches its client: one that disconnects cancels it (the
    ingestion stops at its next check) and nothing of the document is stored."""
    kb = ragline.create_kb("gone")
    accepting = threading.Event()
    cancelled: list[bool] = []
    original = ragline.container.ingest.accept_many

    def held_accept(target_kb, items, cancel=None):
        accepting.set()
        cancelled.append(cancel.wait(timeout=30))  # held until the server has noticed the client is gone
        return original(target_kb, items, cancel=cancel)

    monkeypatch.setattr(ragline.container.ingest, "accept_many", held_accept)
    host, port = ragline.url.removeprefix("http://").split(":")
    body = json.dumps({"title": "Gone", "content": NOTE}).encode()
    head = (
        f"POST /api/v1/knowledge-bases/{kb}/documents HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {ragline.key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port))) as client:
        client.sendall(head + body)
        assert accepting.wait(timeout=30)
    wait_until(lambda: cancelled, timeout=30)
    assert cancelled == [True]
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"] == []


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGLINE_DATA_DIR": str(data_dir), "RAGLINE_LOG_LEVEL": "ERROR", "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )


# Two CLI processes load the model: on a busy shared machine that takes minutes (a hang guard, not a timing).
@pytest.mark.timeout(1800)
def test_cli_ingest_waits_for_vectors_by_default_and_no_wait_leaves_them_to_a_background_process(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "water.md").write_text(NOTE)
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius.")
    data = tmp_path / "data"
    waited = _cli(data, "ingest", str(docs / "water.md"), "--kb", "notes")
    assert waited.returncode == 0, waited.stderr
    assert "Computing vectors" in waited.stdout
    assert "done" in waited.stdout
    import sqlite3

    def statuses() -> dict[str, str]:
        db = sqlite3.connect(data / "ragline.db")
        try:
            return dict(db.execute("SELECT filename, status FROM documents").fetchall())
        finally:
            db.close()

    assert statuses() == {"water.md": "indexed"}
    quick = _cli(data, "ingest", str(docs), "--kb", "notes", "--no-wait")
    assert quick.returncode == 0, quick.stderr
    assert "keyword search works now" in quick.stdout
    assert "already ingested" in quick.stdout
    # The detached `ragline index` process finishes the vectors.
    wait_until(lambda: statuses() == {"water.md": "indexed", "tea.md": "indexed"}, timeout=900, interval=0.2)
    assert "indexed" in (data / "indexing.log").read_text()


def test_a_knowledge_base_model_is_chosen_at_creation_or_by_language_and_can_be_changed(ragline):
    auto = ragline.client.post("/api/v1/knowledge-bases", json={"name": "auto"}).json()["data"]
    assert (auto["embedding_model_auto"], auto["language"]) == (True, "")
    chosen = ragline.client.post("/api/v1/knowledge-bases", json={"name": "chosen", "embedding_model": "minilm"})
    assert chosen.status_code == 201, chosen.text
    assert (chosen.json()["data"]["embedding_model"], chosen.json()["data"]["embedding_model_auto"]) == (
        "local:all-MiniLM-L6-v2-int8",
        False,
    )
    wrong = ragline.client.post("/api/v1/knowledge-bases", json={"name": "wrong", "embedding_model": "gpt-9"})
    assert wrong.status_code == 422
    assert wrong.json()["error"]["field"] == "embedding_model"
    assert "minilm" in wrong.json()["error"]["message"]
    kb = chosen.json()["data"]["id"]
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", params={"wait": "true"}, json={"title": "M", "content": NOTE}
    )
    assert added.json()["data"]["embedding_model"] == "local:all-MiniLM-L6-v2-int8"
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb}").json()["data"]["language"] == "en"
    same = ragline.client.put(f"/api/v1/knowledge-bases/{kb}/embedding-model", json={"embedding_model": "minilm"})
    assert same.status_code == 200, same.text
    document = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{added.json()['data']['id']}").json()
    assert document["data"]["status"] == "indexed"
    bad = ragline.client.put(f"/api/v1/knowledge-bases/{kb}/embedding-model", json={"embedding_model": "nope"})
    assert bad.status_code == 422
