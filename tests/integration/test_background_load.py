"""The server keeps answering while documents index and enrich behind it.

With a generative chat model every upload is enriched once its vectors are computed. Each upload used to park a
thread of the event loop's default pool waiting for those vectors (min(32, cores + 4) threads: six on two cores),
so the sixth upload got no reply, a search answered 502 after 30 s and a delete hung. Here the embedding of
passages is held until the test lets it go, with more uploads waiting than that pool has threads: search, a chat
turn, another upload and a delete must all be answered meanwhile, then every document indexes and is enriched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from tests.conftest import Ragline, start_ragline
from tests.support.polling import wait_until
from tests.support.scripted_model import Script

GATED_MODEL = "test:gated-minilm"
# asyncio's default pool on this machine, and two more uploads than it has threads.
DEFAULT_POOL_THREADS = min(32, (os.cpu_count() or 1) + 4)
UPLOADS = DEFAULT_POOL_THREADS + 2


class GatedEmbedder:
    """MiniLM whose passage embedding waits until the gate opens (queries pass: search embeds them)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.model_id = GATED_MODEL
        self.dimensions = inner.dimensions
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.waiting.set()
        self.gate.wait()
        return np.asarray(self._inner.embed_documents(texts), dtype=np.float32)

    def embed_query(self, text: str) -> Any:
        return self._inner.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def held(tmp_path: Path, shared_models: Any, scripted: Any) -> Iterator[tuple[Ragline, GatedEmbedder]]:
    gated = GatedEmbedder(shared_models.embedder(shared_models.default_embedder_id))
    shared_models.add_embedder(GATED_MODEL, lambda: gated)
    scripted.questions = Script.answer("1. What does this note say?")
    scripted.summary = Script.answer("A short note.")
    scripted.kb_description = Script.answer("Notes.")
    server, handle = start_ragline(tmp_path / "data", shared_models)
    # A safety net against a hang, not the condition: every reply below is expected at once.
    handle.client.timeout = httpx.Timeout(120.0)
    try:
        yield handle, gated
    finally:
        gated.gate.set()
        handle.client.close()
        server.stop()
        handle.container.close()
        scripted.questions = Script.answer("")
        scripted.summary = Script.answer("")
        scripted.kb_description = Script.answer("")


def _upload(ragline: Ragline, kb: str, n: int) -> str:
    reply = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={"title": f"Note {n}", "content": f"# Note {n}\n\nThe heron number {n} nests by the river in spring."},
    )
    assert reply.status_code == 202, reply.text
    assert reply.json()["data"]["summary_status"] == "pending"
    return str(reply.json()["data"]["id"])


def test_search_chat_uploads_and_deletes_answer_while_more_uploads_than_pool_threads_wait_for_vectors(held) -> None:
    ragline, gated = held
    kb = ragline.client.post("/api/v1/knowledge-bases", json={"name": "herons", "embedding_model": GATED_MODEL})
    assert kb.status_code == 201, kb.text
    kb_id = kb.json()["data"]["id"]
    documents = [_upload(ragline, kb_id, n) for n in range(UPLOADS)]
    assert gated.waiting.wait(60), "the indexing thread never asked for vectors"

    # Keyword-searchable at once, vectors or not.
    found = ragline.client.post(
        "/api/v1/knowledge-search", json={"query": "heron river", "knowledge_base_ids": [kb_id]}
    )
    assert found.status_code == 200, found.text
    assert len(found.json()["data"]) >= 1

    session = ragline.session([kb_id])
    frames = ragline.chat(session, "Where does the heron nest?")
    assert frames[-1].type == "complete", frames[-1]

    documents.append(_upload(ragline, kb_id, UPLOADS))
    deleted = ragline.client.delete(f"/api/v1/knowledge/{documents.pop(0)}")
    assert deleted.status_code == 200, deleted.text

    # Nothing was enriched while the vectors were held; once they come, every document is.
    statuses = {ragline.client.get(f"/api/v1/knowledge/{d}").json()["data"]["summary_status"] for d in documents}
    assert statuses == {"pending"}
    gated.gate.set()

    def enriched() -> bool:
        views = [ragline.client.get(f"/api/v1/knowledge/{d}").json()["data"] for d in documents]
        return all(v["parse_status"] == "completed" and v["summary_status"] == "completed" for v in views)

    wait_until(enriched, timeout=300, interval=0.2)
