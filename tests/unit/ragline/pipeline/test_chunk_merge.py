import asyncio
import itertools
import logging
from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.container import Container
from ragline.merge import MergeConfig
from ragline.merge.coordinates import coordinates_trusted
from ragline.pipeline.chunk_merge import PluginMerge
from ragline.pipeline.plugin import EventManager
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Chunk, Document
from ragline.store.tenants import SqliteTenantStore
from ragline.types import ChatManage, ChunkType, EventType, History, MatchType, SearchResult

# Long enough together (a parent section over 350 characters) that step 7 leaves the section alone.
BACKUPS_1 = (
    "Backups run every night at two o'clock and copy every production volume to the object store in the same"
    " region, compressed and encrypted with the key of the account that owns the volume."
)
BACKUPS_2 = (
    "Each backup is kept for thirty days, after which the lifecycle rule deletes it; a backup needed for"
    " longer is copied to the archive bucket by hand and kept there for seven years."
)
# A short line between two long paragraphs: step 7 finds its ~850 characters without leaving the section.
BILLING = [
    "Invoices are issued on the first day of each month for the previous month of usage. Each invoice lists"
    " every project of the account with its compute hours, storage gigabyte-months and network egress, and"
    " the discounts of the contract are applied line by line before taxes. Credits from service incidents"
    " appear as a separate line with the incident number, so that finance teams can match them with the"
    " status page history when they reconcile the month.",
    "Billing questions go to the finance desk.",
    "Payment is due within thirty days of the invoice date, by card or by bank transfer to the account shown"
    " on the invoice. A payment that is more than fifteen days late suspends new deployments but never stops"
    " running services; a reminder is sent at five and at ten days. Accounts on annual contracts pay the"
    " committed amount in advance and receive a usage statement each month instead of an invoice, with any"
    " overage billed at the end of the contract year.",
]
SOURCE = "# Ops\n\n## Backups\n\n" + BACKUPS_1 + "\n\n" + BACKUPS_2 + "\n\n## Billing\n\n" + "\n\n".join(BILLING) + "\n"


def span(text: str) -> tuple[int, int]:
    start = SOURCE.index(text)
    return start, start + len(text)


@pytest.fixture
def store(db):
    tenant, _ = SqliteTenantStore(db).create("acme")
    knowledge = SqliteKnowledgeStore(db)
    kb = knowledge.create_knowledge_base(tenant.id, "ops", "minilm")
    section_start, _ = span(BACKUPS_1)
    _, section_end = span(BACKUPS_2)

    def chunk(id: str, content: str, index: int, **fields) -> Chunk:
        start, end = span(content)
        values = {"start_at": start, "end_at": end}
        values.update(fields)
        return Chunk(
            id=id,
            tenant_id=tenant.id,
            knowledge_base_id=kb.id,
            knowledge_id="doc",
            chunk_index=index,
            content=content,
            **values,
        )

    chunks = [
        chunk(
            "p1",
            SOURCE[section_start:section_end],
            0,
            chunk_type=ChunkType.PARENT_TEXT,
            searchable=False,
        ),
        chunk("c1", BACKUPS_1, 0, parent_chunk_id="p1", next_chunk_id="c2"),
        chunk("c2", BACKUPS_2, 1, parent_chunk_id="p1", pre_chunk_id="c1", next_chunk_id="c3"),
        chunk("c3", BILLING[0], 2, pre_chunk_id="c2", next_chunk_id="c4"),
        chunk("c4", BILLING[1], 3, pre_chunk_id="c3", next_chunk_id="c5"),
        chunk("c5", BILLING[2], 4, pre_chunk_id="c4"),
        Chunk(
            id="f1",
            tenant_id=tenant.id,
            knowledge_base_id=kb.id,
            knowledge_id="faq-doc",
            chunk_index=0,
            chunk_type=ChunkType.FAQ,
            content="How long are backups kept?",
            metadata={"standard_question": "How long are backups kept?", "answers": ["Thirty days."]},
        ),
    ]
    document = Document(id="doc", tenant_id=tenant.id, knowledge_base_id=kb.id, title="Ops")
    knowledge.insert_document(document, chunks[:-1])
    knowledge.insert_document(
        Document(id="faq-doc", tenant_id=tenant.id, knowledge_base_id=kb.id, title="FAQ"), chunks[-1:]
    )
    return knowledge, tenant.id, {c.id: c for c in chunks}


def as_result(chunk: Chunk, score: float, **fields) -> SearchResult:
    values = chunk.model_dump(exclude={"tenant_id", "metadata", "searchable", "enabled"})
    values.update(score=score, chunk_metadata=chunk.metadata, **fields)
    return SearchResult(**values)


def run(plugin: PluginMerge, cm: ChatManage) -> tuple[object, list[bool]]:
    manager = EventManager()
    manager.register(plugin)
    reached: list[bool] = []

    class Tail:
        def activation_events(self):
            return [EventType.CHUNK_MERGE]

        async def on_event(self, event_type, cm, next):
            reached.append(True)
            return await next()

    manager.register(Tail())
    return asyncio.run(manager.trigger(EventType.CHUNK_MERGE, cm)), reached


def by_id(results: list[SearchResult]) -> dict[str, SearchResult]:
    return {r.id: r for r in results}


def test_skipped_when_the_intent_needs_no_retrieval(store, make_request):
    knowledge, tenant, chunks = store
    cm = ChatManage.start(make_request(tenant_id=tenant))
    cm.state.intent = "greeting"
    cm.state.rerank_result = [as_result(chunks["c1"], 0.9)]
    error, reached = run(PluginMerge(knowledge, MergeConfig()), cm)
    assert (error, reached, cm.state.merge_result) == (None, [True], [])


def test_eight_steps_over_a_stored_document(store, make_request):
    knowledge, tenant, chunks = store
    cm = ChatManage.start(make_request(tenant_id=tenant, query="How long are backups kept by the lifecycle rule?"))
    duplicate = as_result(chunks["c2"], 0.4, id="copy-of-c2")  # same text under another id: step 2
    cm.state.rerank_result = [
        as_result(chunks["c1"], 0.9),
        as_result(chunks["c2"], 0.8),
        as_result(chunks["c4"], 0.7),
        as_result(chunks["f1"], 0.6),
        duplicate,
    ]
    cm.state.history = [
        History(
            query="older",
            answer="...",
            knowledge_references=[
                SearchResult(id="h1", content="Backups kept longer need a lifecycle exception.", score=0.5),
                SearchResult(id="h2", content="Unrelated note about invoices.", score=0.9),
            ],
        )
    ]
    rerank_before = [r.model_copy(deep=True) for r in cm.state.rerank_result]

    error, reached = run(PluginMerge(knowledge, MergeConfig()), cm)

    assert (error, reached) == (None, [True])
    results = by_id(cm.state.merge_result)
    assert set(results) == {"c1", "c4", "f1", "h1"}
    # Steps 4 and 5: both backups sub-chunks answer with their parent section, once.
    backups = results["c1"]
    assert backups.content == chunks["p1"].content
    assert backups.content == SOURCE[backups.start_at : backups.end_at]
    assert backups.sub_chunk_id == ["c1", "c2"]
    assert backups.score == 0.9
    assert coordinates_trusted(backups)
    # Step 7: the short billing line is widened with its neighbours, inside the document.
    billing = results["c4"]
    assert BILLING[1] in billing.content
    assert billing.content.index("reconcile the month.") < billing.content.index(BILLING[1])
    assert billing.content.index(BILLING[1]) < billing.content.index("Payment is due")
    assert 800 <= len(billing.content) <= MergeConfig().expand_target_chars + 4
    assert "Backups" not in billing.content
    assert billing.sub_chunk_id == ["c3", "c5"]
    # Step 6: the FAQ hit carries its answer.
    assert results["f1"].content == "Q: How long are backups kept?\nAnswer:\n- Thirty days."
    # Step 3: the relevant history reference, discounted.
    assert results["h1"].match_type == MatchType.HISTORY
    assert results["h1"].score == pytest.approx(0.3)
    # Deterministic order, and the earlier lists left as they were.
    assert [r.id for r in cm.state.merge_result] == ["c1", "c4", "f1", "h1"]
    assert cm.state.rerank_result == rerank_before


def test_search_result_is_the_fallback_input(store, make_request):
    knowledge, tenant, chunks = store
    cm = ChatManage.start(make_request(tenant_id=tenant, rerank_top_k=1))
    cm.state.search_result = [as_result(chunks["c5"], 0.2), as_result(chunks["c1"], 0.7)]
    run(PluginMerge(knowledge, MergeConfig()), cm)
    assert [r.id for r in cm.state.merge_result] == ["c1"]
    assert [r.id for r in cm.state.search_result] == ["c5", "c1"]


def test_configuration_is_honoured(store, make_request):
    knowledge, tenant, chunks = store
    cm = ChatManage.start(make_request(tenant_id=tenant))
    cm.state.rerank_result = [as_result(chunks["c4"], 0.7)]
    run(PluginMerge(knowledge, MergeConfig(short_passage_chars=10)), cm)
    assert cm.state.merge_result[0].content == BILLING[1]


def test_nothing_to_merge_still_continues(store, make_request):
    knowledge, tenant, _ = store
    cm = ChatManage.start(make_request(tenant_id=tenant))
    error, reached = run(PluginMerge(knowledge, MergeConfig()), cm)
    assert (error, reached, cm.state.merge_result) == (None, [True], [])


def test_another_tenant_reads_nothing(store, make_request):
    knowledge, _, chunks = store
    cm = ChatManage.start(make_request(tenant_id="someone-else"))
    cm.state.rerank_result = [as_result(chunks["c1"], 0.9), as_result(chunks["c4"], 0.7)]
    run(PluginMerge(knowledge, MergeConfig()), cm)
    assert {r.id: r.content for r in cm.state.merge_result} == {"c1": BACKUPS_1, "c4": BILLING[1]}


class FailingStore:
    def chunks(self, tenant_id, chunk_ids):
        raise RuntimeError("store is down")


def test_a_failing_store_degrades_to_the_hits_as_retrieved(store, make_request, caplog):
    _, tenant, chunks = store
    cm = ChatManage.start(make_request(tenant_id=tenant))
    cm.state.rerank_result = [as_result(chunks["c1"], 0.9), as_result(chunks["c4"], 0.7)]
    with caplog.at_level(logging.WARNING, logger="ragline.pipeline.chunk_merge"):
        error, reached = run(PluginMerge(FailingStore(), MergeConfig()), cm)
    assert (error, reached) == (None, [True])
    assert {r.id: r.content for r in cm.state.merge_result} == {"c1": BACKUPS_1, "c4": BILLING[1]}
    assert any("chunk read failed" in record.message for record in caplog.records)


def test_one_debug_line_with_the_step_counts(store, make_request, caplog):
    knowledge, tenant, chunks = store
    cm = ChatManage.start(make_request(tenant_id=tenant, assistant_message_id="msg-1"))
    cm.state.rerank_result = [as_result(chunks["c1"], 0.9), as_result(chunks["c2"], 0.8), as_result(chunks["c4"], 0.7)]
    with caplog.at_level(logging.DEBUG, logger="ragline.pipeline.chunk_merge"):
        run(PluginMerge(knowledge, MergeConfig()), cm)
    [record] = [r for r in caplog.records if r.name == "ragline.pipeline.chunk_merge"]
    assert record.levelno == logging.DEBUG
    assert record.getMessage() == (
        "merge selected=3 deduplicated=3 history=0 parents=2 merged=2 faq=0 expanded=1 output=2"
    )
    assert (record.session_id, record.message_id, record.stage) == ("sess-1", "msg-1", "chunk_merge")


# End to end: a Markdown document ingested by ragline itself, searched with the real MiniLM embedder.
HANDBOOK = """# Operations handbook

## Backups

Backups of every production volume run each night at two o'clock. The backup agent takes a consistent
snapshot of the volume, compresses it and uploads it to the object store in the same region.

A failed backup is retried three times at ten-minute intervals. When the third attempt fails, the agent
pages the on-call engineer, who must either fix the cause or start a manual backup before morning.

Backups are retained for thirty days. After thirty days the lifecycle rule of the backup bucket deletes
them; a backup needed for longer must be copied to the archive bucket, where it is kept for seven years.

Restoring from a backup creates a new volume from the snapshot. The restored volume is attached to a
staging instance first, so that its data can be checked before any production traffic reaches it.

## Billing

Invoices are issued on the first day of each month.

## Support

Questions about the handbook go to the operations channel.
"""


@pytest.fixture(scope="module")
def handbook(tmp_path_factory):
    container = Container.embedded(Settings(data_dir=Path(tmp_path_factory.mktemp("merge-e2e"))))
    tenant, _ = container.tenants.create("acme")
    kb = container.knowledge.create_knowledge_base(tenant.id, "ops", container.models.default_embedder_id)
    ingested = container.ingest.ingest_text(kb, content=HANDBOOK, filename="handbook.md")
    other = container.ingest.ingest_text(kb, content="# Other\n\nUnrelated text about gardening.\n", filename="g.md")
    yield container, tenant.id, kb.id, ingested.document.id, other.document.id
    container.close()


def search(container: Container, cm: ChatManage) -> None:
    error = asyncio.run(container.events.trigger(EventType.CHUNK_SEARCH_PARALLEL, cm))
    assert error is None


def test_adjacent_hits_merge_into_one_exact_slice_of_the_source(handbook, make_request):
    container, tenant, kb_id, document_id, _ = handbook
    stored = container.knowledge.chunks_of_document(tenant, document_id)
    section = [c for c in stored if c.chunk_type == ChunkType.TEXT and c.parent_chunk_id]
    assert len(section) >= 2, "the Backups section is long enough to be split under one parent"

    cm = ChatManage.start(
        make_request(
            tenant_id=tenant,
            knowledge_base_ids=(kb_id,),
            query="How are backups taken, retried, retained and restored?",
        )
    )
    search(container, cm)
    hits = [r for r in cm.state.search_result if r.parent_chunk_id]
    hit_indexes = sorted(r.chunk_index for r in hits)
    assert any(b - a == 1 for a, b in itertools.pairwise(hit_indexes)), "adjacent hits"
    cm.state.search_result = hits

    run(PluginMerge(container.knowledge, MergeConfig()), cm)

    [passage] = cm.state.merge_result
    assert passage.content in HANDBOOK
    assert passage.content == HANDBOOK[passage.start_at : passage.end_at]
    assert "two o'clock" in passage.content
    assert "staging instance" in passage.content
    assert set(passage.sub_chunk_id) == {r.id for r in hits}
    assert passage.score == max(r.score for r in hits)


def test_a_short_hit_is_widened_within_its_own_document(handbook, make_request):
    container, tenant, kb_id, document_id, other_id = handbook
    cm = ChatManage.start(
        make_request(tenant_id=tenant, knowledge_base_ids=(kb_id,), query="When are invoices issued?")
    )
    search(container, cm)
    billing = [r for r in cm.state.search_result if "Invoices are issued" in r.content]
    assert billing
    assert len(billing[0].content) < MergeConfig().short_passage_chars
    cm.state.search_result = billing[:1]

    run(PluginMerge(container.knowledge, MergeConfig()), cm)

    [passage] = cm.state.merge_result
    own_chunks = {c.id for c in container.knowledge.chunks_of_document(tenant, document_id)}
    assert passage.sub_chunk_id
    assert set(passage.sub_chunk_id) <= own_chunks
    assert "Invoices are issued on the first day of each month." in passage.content
    assert "operations channel" in passage.content
    assert "gardening" not in passage.content
    other_chunks = {c.id for c in container.knowledge.chunks_of_document(tenant, other_id)}
    assert not other_chunks & set(passage.sub_chunk_id)
    assert len(passage.content) <= MergeConfig().expand_target_chars + 4
