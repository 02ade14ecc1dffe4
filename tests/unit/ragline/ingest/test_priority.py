"""Background work runs below the API's priority (``ingestion.background_nice``): the accept step, the indexing
thread and the threads it starts (the embedding model's pool), the enrichment and graph workers and their pools.

Under the mixed load of issue 25 (bench/mixed_load.py) they used to take the cores at the same priority as the
event loop that serves every stream and the threads that answer searches.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ragline.config import Settings
from ragline.container import Container
from ragline.ingest.background import AsyncWorker
from ragline.ingest.language import MINILM_MODEL
from ragline.ingest.priority import ForegroundWriter, lower_this_thread, thread_nice
from ragline.ingest.service import DocumentInput
from ragline.models.registry import ModelRegistry
from ragline.store.models import DocumentStatus

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread is Linux's")

DIMENSIONS = 8


def _in_thread(call):
    """``call()``'s result, run on a new thread (its nice value starts as this thread's)."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(call()))
    thread.start()
    thread.join(30)
    return out[0]


def _base() -> int:
    base = thread_nice()
    assert base is not None
    if base >= 19:
        pytest.skip("this process already runs at the lowest priority: nothing can go lower")
    return base


def test_lowering_a_thread_changes_that_thread_only_and_stops_at_19():
    base = _base()

    def lowered(step: int) -> tuple[bool, int | None, int | None]:
        changed = lower_this_thread(step)
        child = _in_thread(thread_nice)  # a thread started from here starts from here
        return changed, thread_nice(), child

    assert _in_thread(lambda: lowered(3)) == (True, base + 3, base + 3)
    assert _in_thread(lambda: lowered(40)) == (True, 19, 19)
    assert _in_thread(lambda: lowered(0)) == (False, base, base)
    assert thread_nice() == base


class RecordingEmbedder:
    """Records the nice value of each thread it embeds documents on."""

    def __init__(self) -> None:
        self.model_id = MINILM_MODEL
        self.dimensions = DIMENSIONS
        self.nice: list[int | None] = []

    def embed_documents(self, texts):
        self.nice.append(thread_nice())
        return np.ones((len(texts), DIMENSIONS), dtype=np.float32) / np.sqrt(DIMENSIONS)

    def embed_query(self, text):
        return np.ones(DIMENSIONS, dtype=np.float32) / np.sqrt(DIMENSIONS)


@pytest.fixture
def container(tmp_path: Path):
    embedder = RecordingEmbedder()
    models = ModelRegistry()
    models.add_embedder(MINILM_MODEL, lambda: embedder, default=True)
    container = Container.embedded(Settings(data_dir=tmp_path), models=models)
    container.start_indexing()
    yield container, embedder
    container.close()


def test_an_upload_is_accepted_and_indexed_below_the_apis_priority_as_configured(container):
    container, embedder = container
    base = _base()
    step = container.config.ingestion.background_nice
    assert step > 0  # as shipped
    tenant, _ = container.tenants.create("t")
    kb = container.knowledge.create_knowledge_base(tenant.id, "kb", MINILM_MODEL)
    accepted_at: list[int | None] = []
    stored_at: list[int | None] = []
    insert = container.knowledge.insert_document

    def recording_insert(document, chunks):
        stored_at.append(thread_nice())
        insert(document, chunks)

    container.knowledge.insert_document = recording_insert

    def work(cancel: threading.Event):
        accepted_at.append(thread_nice())
        return container.ingest.accept_many(kb, [DocumentInput(content="Bees make honey. " * 40, title="Bees")])[0]

    async def upload():
        result = await container.uploads.accept(kb, work, wait=True)
        return result, thread_nice()

    result, loop_nice = asyncio.run(upload())
    assert result.document.status == DocumentStatus.INDEXED
    assert accepted_at == [min(19, base + step)]
    # Its write transaction, which holds the database's write lock, ran at the API's priority.
    assert stored_at == [base]
    assert embedder.nice
    assert set(embedder.nice) == {min(19, base + step)}
    assert loop_nice == base  # the loop's own thread keeps the process's priority


def test_the_background_workers_loop_and_pool_run_below_the_callers_priority():
    base = _base()
    worker = AsyncWorker("test-nice", nice=4)

    async def where() -> tuple[int | None, int | None]:
        return thread_nice(), await asyncio.to_thread(thread_nice)

    try:
        assert worker.submit(where).result(30) == (base + 4, base + 4)
    finally:
        assert worker.stop()
    assert thread_nice() == base


def test_the_foreground_writer_runs_a_background_threads_write_at_its_makers_priority():
    base = _base()
    writer = ForegroundWriter("test-writer")

    def failing() -> None:
        raise LookupError("gone")

    def from_background() -> tuple[int | None, int | None, str]:
        lower_this_thread(5)
        try:
            writer.run(failing)
        except LookupError as exc:
            failed = str(exc)
        return thread_nice(), writer.run(thread_nice), failed

    try:
        assert _in_thread(from_background) == (base + 5, base, "gone")
        # A write the writer's own thread asks for runs at once, not queued behind itself.
        assert writer.run(lambda: writer.run(thread_nice)) == base
    finally:
        writer.close()
