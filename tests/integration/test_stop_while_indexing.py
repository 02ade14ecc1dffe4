"""What a stop leaves while documents are being stored and indexed: a real ``ragline serve`` and its data directory.

- SIGTERM while a large document is being indexed: the process exits within its grace period (it waited for the
  whole 256-chunk window under way, 37.6 s with a 10 s grace), and the next start resumes the document from its
  progress.
- kill -9 between keeping an upload's original and storing its document: the next start removes the file no
  document owns (it was kept through six restarts).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.polling import wait_until
from tests.support.process import RaglineProcess

GRACE_S = 2
# Past the grace: the interpreter's own exit (threads joined, files closed) on a loaded machine.
EXIT_MARGIN_S = 20


def _large_text(paragraphs: int) -> str:
    return "\n\n".join(
        f"## Part {n}\n\nThe ledger entry {n} records that crate {n * 7} left dock {n % 13} on day {n % 365}. "
        f"Its cargo, item {n * 3}, was counted twice by clerk {n % 29} and found complete."
        for n in range(paragraphs)
    )


@pytest.fixture
def server(tmp_path, scripted):
    process = RaglineProcess(tmp_path / "data", f"{scripted.url}/v1", RAGLINE_SHUTDOWN_GRACE_S=str(GRACE_S))
    yield process.start()
    process.stop()


def _kept_file(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".tmp-")


def _document(server: RaglineProcess, document_id: str) -> dict:
    with server.client() as client:
        reply = client.get(f"/api/v1/knowledge/{document_id}")
        assert reply.status_code == 200, reply.text
        return dict(reply.json()["data"])


def test_sigterm_while_a_large_document_indexes_exits_within_the_grace_and_indexing_resumes(server) -> None:
    with server.client() as client:
        kb = client.post("/api/v1/knowledge-bases", json={"name": "ledger", "embedding_model": "minilm"})
        assert kb.status_code == 201, kb.text
        added = client.post(
            f"/api/v1/knowledge-bases/{kb.json()['data']['id']}/documents",
            json={"title": "Ledger", "content": _large_text(4000)},
        )
        assert added.status_code == 202, added.text
        document_id = added.json()["data"]["id"]
    # A first window of vectors is stored: the indexing thread is in the middle of the document.
    started = wait_until(lambda: (d := _document(server, document_id))["embedded_count"] > 0 and d, timeout=300)
    assert started["status"] == "pending"

    stopped_at = time.monotonic()
    server.terminate()
    server.wait(timeout=GRACE_S + EXIT_MARGIN_S)
    exit_s = time.monotonic() - stopped_at

    server.start()
    resumed = _document(server, document_id)
    assert resumed["embedded_count"] >= started["embedded_count"], (resumed, started, exit_s)
    done = wait_until(
        lambda: (d := _document(server, document_id))["status"] != "pending" and d, timeout=900, interval=0.5
    )
    assert done["status"] == "indexed", done
    assert done["embedded_count"] == done["chunk_count"]


def test_an_upload_killed_between_its_original_and_its_document_leaves_no_file_after_a_restart(server) -> None:
    originals = server.data_dir / "originals"
    with server.client() as client:
        kb = client.post("/api/v1/knowledge-bases", json={"name": "ledger", "embedding_model": "minilm"})
        kb_id = kb.json()["data"]["id"]
        kept = client.post(
            f"/api/v1/knowledge-bases/{kb_id}/documents", json={"title": "Kept", "content": "A kept note."}
        )
        assert kept.status_code == 202, kept.text
    kept_files = {p for p in originals.rglob("*") if _kept_file(p)}
    assert kept_files

    def upload() -> None:
        # Its reply never comes: the server is killed while it stores the document.
        with server.client() as client, pytest.raises(httpx.HTTPError):
            client.post(
                f"/api/v1/knowledge-bases/{kb_id}/documents",
                json={"title": "Ledger", "content": _large_text(12000)},
                timeout=httpx.Timeout(600.0),
            )

    uploading = threading.Thread(target=upload)
    uploading.start()
    # The original is kept before the document and its chunks are stored (one transaction of seconds here).
    orphan = wait_until(
        lambda: next((p for p in originals.rglob("*") if _kept_file(p) and p not in kept_files), None),
        timeout=300,
        interval=0.005,
    )
    server.kill()
    uploading.join()
    with sqlite3.connect(server.data_dir / "ragline.db") as db:
        titles = [row[0] for row in db.execute("SELECT title FROM documents")]
    assert titles == ["Kept"]
    assert orphan.exists()

    # As if the next start came ten minutes later (recovery.orphaned_original_age_s): an upload still being
    # stored by another process is younger than that and left alone.
    old = time.time() - 3600
    for path in originals.rglob("*"):
        if path.is_file():
            os.utime(path, (old, old))
    server.start()
    wait_until(lambda: not orphan.exists(), timeout=60)
    assert {p for p in originals.rglob("*") if p.is_file()} == kept_files
    assert not [p for p in Path(orphan.parent).iterdir() if p.name.startswith(".tmp-")]
