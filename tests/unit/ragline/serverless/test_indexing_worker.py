"""The indexing function's worker (``ragline.serverless.indexing``) on real stores: the embedded container's
SQLite knowledge store and engine, its leases in the template's state table (moto). What Lambda does to it —
a deadline, a second delivery, a crashed attempt — is played by the test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragline.config import Settings
from ragline.container import Container
from ragline.ingest.language import MINILM_MODEL
from ragline.ingest.service import DocumentInput
from ragline.models.registry import ModelRegistry
from ragline.serverless.indexing import DocumentWorker, IndexingLeases, IndexRequest
from ragline.store.models import DocumentStatus
from tests.unit.ragline.ingest.test_ingest_steps import HashEmbedder


@dataclass
class Runtime:
    container: Container


class Scheduler:
    def __init__(self) -> None:
        self.sent: list[IndexRequest] = []

    def send(self, request: IndexRequest) -> None:
        self.sent.append(request)


class Clock:
    """The invocation's remaining time: plenty, until ``expire_after`` embedding batches have run."""

    def __init__(self, embedder: HashEmbedder, expire_after: int | None = None) -> None:
        self._embedder = embedder
        self.expire_after = expire_after

    def __call__(self) -> int:
        if self.expire_after is not None and len(self._embedder.calls) >= self.expire_after:
            return 30_000  # within the margin: stop taking batches
        return 900_000


@pytest.fixture
def env(tmp_path: Path, aws: Any):
    embedder = HashEmbedder(MINILM_MODEL, fail_on="POISON")
    models = ModelRegistry()
    models.add_embedder(MINILM_MODEL, lambda: embedder, default=True)
    container = Container.embedded(Settings(data_dir=tmp_path), models=models)
    container.config.ingestion.embed_window = 2
    tenant, _ = container.tenants.create("t")
    kb = container.knowledge.create_knowledge_base(tenant.id, "kb", MINILM_MODEL)
    scheduler = Scheduler()
    leases = IndexingLeases(aws.table("StateTable"), 3600)
    worker = DocumentWorker(Runtime(container), leases, scheduler)  # type: ignore[arg-type]
    yield container, kb, embedder, scheduler, leases, worker
    container.close()


def _accept(container: Container, kb: Any, paragraphs: int, marker: str = "") -> str:
    text = "\n\n".join(f"## Part {i}\n\nParagraph {i} about brewing {marker} coffee." for i in range(paragraphs))
    result = container.ingest.accept_many(kb, [DocumentInput(content=f"# Guide\n\n{text}", title="Guide")])[0]
    assert result.document.status == DocumentStatus.PENDING
    return result.document.id


def _event(kb: Any, *ids: str) -> dict[str, Any]:
    return IndexRequest(tenant_id=kb.tenant_id, document_ids=list(ids)).model_dump()


def test_a_document_longer_than_one_invocation_continues_in_a_fresh_one_without_redoing_batches(env):
    container, kb, embedder, scheduler, _, worker = env
    document_id = _accept(container, kb, 12)
    clock = Clock(embedder, expire_after=2)
    report = worker.handle(_event(kb, document_id), clock, "first")
    assert report["continued"] == [document_id]
    assert [r.document_ids for r in scheduler.sent] == [[document_id]]
    partial = container.knowledge.document(kb.tenant_id, document_id)
    assert partial is not None
    assert partial.status == DocumentStatus.PENDING
    assert partial.embedded_count == 4  # two batches of two
    embedded_first = sum(embedder.calls)

    clock.expire_after = None
    again = worker.handle(scheduler.sent[0].model_dump(), clock, "second")
    assert again["indexed"] == [document_id]
    done = container.knowledge.document(kb.tenant_id, document_id)
    assert done is not None
    assert done.status == DocumentStatus.INDEXED
    # The second invocation embedded only what the first had not: every passage once.
    assert sum(embedder.calls) - embedded_first == done.embedded_count - 4
    assert sum(embedder.calls) == done.embedded_count


def test_a_second_delivery_finds_the_document_indexed_and_does_nothing(env):
    container, kb, embedder, _, _, worker = env
    document_id = _accept(container, kb, 3)
    clock = Clock(embedder)
    assert worker.handle(_event(kb, document_id), clock, "first")["indexed"] == [document_id]
    calls = len(embedder.calls)
    assert worker.handle(_event(kb, document_id), clock, "duplicate")["indexed"] == [document_id]
    assert len(embedder.calls) == calls


def test_a_delivery_while_another_invocation_holds_the_document_leaves_it_alone(env):
    container, kb, embedder, _, leases, worker = env
    document_id = _accept(container, kb, 3)
    held = leases.take(f"{kb.tenant_id}#{document_id}", "other-invocation", until=4_102_444_800.0, progress=0)
    assert held is not None
    report = worker.handle(_event(kb, document_id), Clock(embedder), "second")
    assert report["busy"] == [document_id]
    assert embedder.calls == []
    leases.release(held)
    assert worker.handle(_event(kb, document_id), Clock(embedder), "third")["indexed"] == [document_id]


def test_attempts_that_crash_without_progress_end_the_document_failed_with_the_reason(env):
    container, kb, embedder, _, leases, worker = env
    document_id = _accept(container, kb, 3)
    for attempt in range(3):  # three invocations that died holding the lease (timeout, out of memory)
        assert leases.take(f"{kb.tenant_id}#{document_id}", f"dead-{attempt}", until=0.0, progress=0) is not None
    report = worker.handle(_event(kb, document_id), Clock(embedder), "fourth")
    assert report["failed"] == [document_id]
    failed = container.knowledge.document(kb.tenant_id, document_id)
    assert failed is not None
    assert failed.status == DocumentStatus.FAILED
    assert "no progress in 3 attempts" in failed.reason
    assert "timeout or crash" in failed.reason
    assert embedder.calls == []


def test_a_document_the_model_cannot_embed_ends_failed_with_the_reason(env):
    container, kb, embedder, _, _, worker = env
    document_id = _accept(container, kb, 6, marker="POISON")
    report = worker.handle(_event(kb, document_id), Clock(embedder), "first")
    assert report["failed"] == [document_id]
    failed = container.knowledge.document(kb.tenant_id, document_id)
    assert failed is not None
    assert failed.status == DocumentStatus.FAILED
    assert "out of memory" in failed.reason
