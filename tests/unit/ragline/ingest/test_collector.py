"""Full garbage collections wait while documents are accepted and indexed: a full collection walks every
object of the process with the interpreter lock held, and a large document's chunks make each one a stall of
the whole server (the API's requests included)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.container import Container
from ragline.ingest.collector import full_collections_deferred
from ragline.ingest.service import DocumentInput
from ragline.models.registry import ModelRegistry
from tests.unit.ragline.ingest.test_ingest_steps import MINILM_MODEL, HashEmbedder

# Collector thresholds under which full collections come due after a couple of young ones, so a short
# document shows what a large one does on a busy server.
EAGER = (700, 2, 1)


@pytest.fixture
def eager_collector() -> Iterator[list[int]]:
    """Full collections come due quickly; yields the generations collected (a gc callback)."""
    collected: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["generation"])

    saved = gc.get_threshold()
    gc.collect()
    gc.freeze()  # the test process's own heap does not count towards when a full collection is due ...
    gc.collect()  # ... (a full collection counts the heap it leaves behind: nearly nothing now)
    gc.set_threshold(*EAGER)
    gc.callbacks.append(record)
    try:
        yield collected
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*saved)
        gc.unfreeze()


def _service(tmp_path: Path, defer: bool) -> tuple[Container, object]:
    models = ModelRegistry()
    embedder = HashEmbedder(MINILM_MODEL)
    models.add_embedder(MINILM_MODEL, lambda: embedder, default=True)
    container = Container.embedded(Settings(data_dir=tmp_path), models=models)
    container.ingest._config.defer_full_gc = defer
    tenant, _ = container.tenants.create("t")
    kb = container.knowledge.create_knowledge_base(tenant.id, "kb", MINILM_MODEL)
    return container, kb


def _text(paragraphs: int) -> str:
    return "\n\n".join(
        f"## Section {i}\n\nParagraph {i} says that the rover {i} drives {i * 7 % 113} kilometres on one charge "
        f"across terrain number {i % 17}, and that its batteries weigh {i % 29} kilograms."
        for i in range(paragraphs)
    )


@pytest.mark.parametrize("defer", [False, True], ids=["as-is", "deferred"])
def test_accepting_and_indexing_a_large_document_starts_no_full_collection(tmp_path, eager_collector, defer):
    container, kb = _service(tmp_path, defer)
    try:
        eager_collector.clear()
        [accepted] = container.ingest.accept_many(kb, [DocumentInput(content=_text(3000), title="Rover")])
        during_accept = list(eager_collector)
        eager_collector.clear()
        [indexed] = container.ingest.index_documents([accepted.document])
        during_index = list(eager_collector)
    finally:
        container.close()
    assert accepted.chunk_count > 100
    assert indexed.status == "indexed"
    assert 1 in during_accept + during_index  # young collections still run
    if defer:
        assert 2 not in during_accept
        assert 2 not in during_index
        assert gc.get_threshold() == EAGER  # put back as it was
    else:  # the control: the same work, the collector as is, does start full collections
        assert 2 in during_accept
        assert 2 in during_index


def test_overlapping_ingestions_restore_the_thresholds_when_the_last_one_ends():
    saved = gc.get_threshold()
    first_in, second_done, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, tuple[int, ...]] = {}

    def first() -> None:
        with full_collections_deferred():
            first_in.set()
            assert second_done.wait(10)
            seen["first, after second ended"] = gc.get_threshold()
        first_out.set()

    worker = threading.Thread(target=first)
    worker.start()
    assert first_in.wait(10)
    with full_collections_deferred():
        seen["second"] = gc.get_threshold()
    second_done.set()
    worker.join(10)
    assert first_out.is_set()
    assert seen["second"][:2] == saved[:2]
    assert seen["second"][2] > 10**6
    assert seen["first, after second ended"] == seen["second"]  # still deferred: the first is running
    assert gc.get_threshold() == saved
    with full_collections_deferred(enabled=False):
        assert gc.get_threshold() == saved
