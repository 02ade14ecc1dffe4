"""The in-memory keyword index answers exactly as FTS5's bm25() in SQL, and keeps doing so as the keyword rows
change under it: uploads, deletes, edits, flags, other processes' writes, a pruned change log."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from ragline.ingest.chunk_edits import ChunkEditor
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.embedded import EmbeddedEngine, fts_match
from ragline.retrieval.keyword_index import KeywordIndex
from ragline.store.db import Database
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Chunk, Document

WORDS = [
    f"{stem}{suffix}" for stem in ("cell", "gene", "protein", "virus", "brain", "heart") for suffix in ("", "s", "ing")
]
WORDS += ["zebrafish", "mitochondria", "insulin", "café", "naïve", "x2", "covid19", "dna"]


@pytest.fixture
def world(tmp_path):
    db = Database(tmp_path / "k.db")
    knowledge = SqliteKnowledgeStore(db)
    engine = EmbeddedEngine(db)
    db.execute("INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', 'now')")
    kbs = [knowledge.create_knowledge_base("t", name, "m") for name in ("first", "second")]
    yield db, knowledge, engine, kbs
    db.close()


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def upload(knowledge, engine, kb, rng: random.Random, name: str, chunks: int = 3) -> list[Chunk]:
    document = Document(id=name, tenant_id="t", knowledge_base_id=kb.id, title=text(rng, 2))
    stored = [
        Chunk(
            id=f"{name}-{i}",
            tenant_id="t",
            knowledge_base_id=kb.id,
            knowledge_id=name,
            chunk_index=i,
            content=text(rng, rng.randint(3, 40)),
        )
        for i in range(chunks)
    ]
    with knowledge.atomic():
        knowledge.insert_document(document, stored)
        engine.index_keywords(kb.id, stored, document=document)
    return stored


def assert_same_as_fts5(engine, kbs, rng: random.Random, queries: int = 40, top_k: int = 20) -> None:
    for _ in range(queries):
        bases = rng.choice([[kbs[0].id], [kbs[1].id], [kbs[0].id, kbs[1].id]])
        params = RetrieveParams(query=text(rng, rng.randint(1, 5)), knowledge_base_ids=bases)
        fast, fts5 = engine.keyword_search(params, top_k), engine.keyword_search_fts5(params, top_k)
        assert [h.id for h in fast] == [h.id for h in fts5], params.query
        assert [h.score for h in fast] == [h.score for h in fts5], params.query


def test_scores_and_order_equal_fts5_bm25_across_knowledge_bases_and_documents(world):
    _db, knowledge, engine, kbs = world
    rng = random.Random(1)
    for n in range(30):
        upload(knowledge, engine, kbs[n % 2], rng, f"d{n}")
    assert_same_as_fts5(engine, kbs, rng, queries=150)
    narrowed = RetrieveParams(query="cell gene virus", knowledge_base_ids=[kbs[0].id], knowledge_ids=["d2", "d4"])
    hits = engine.keyword_search(narrowed, 10)
    assert hits
    assert {h.knowledge_id for h in hits} <= {"d2", "d4"}
    assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in engine.keyword_search_fts5(narrowed, 10)]


def test_the_index_follows_uploads_deletes_and_edits(world):
    _db, knowledge, engine, kbs = world
    rng = random.Random(2)
    for n in range(10):
        upload(knowledge, engine, kbs[n % 2], rng, f"d{n}")
    assert_same_as_fts5(engine, kbs, rng)
    state = engine._keywords._state
    upload(knowledge, engine, kbs[0], rng, "late")
    assert_same_as_fts5(engine, kbs, rng)
    assert engine._keywords._state is state  # appended rows were read in, nothing rebuilt
    knowledge.delete_document("t", "d3")
    assert_same_as_fts5(engine, kbs, rng)
    assert engine._keywords._state is state  # deleted rows were dropped in place
    assert not any(h.knowledge_id == "d3" for h in engine.keyword_search(RetrieveParams(WORDS[0], [kbs[1].id]), 50))
    knowledge.delete_chunk("t", "d4-1")
    assert_same_as_fts5(engine, kbs, rng)
    # An edit rewrites a row in place: the index is rebuilt, and the new words are found.
    models = ModelRegistry()
    models.add_embedder("m", _Embedder)
    editor = ChunkEditor(knowledge, engine, models)
    editor.update("t", "d5-0", content="quasar quasar nebula")
    assert engine.keyword_search(RetrieveParams("quasar", [kbs[1].id]), 5)[0].id == "d5-0"
    assert_same_as_fts5(engine, kbs, rng)
    # Rowids used again (the last document deleted, then another uploaded) are not mistaken for appends.
    last = upload(knowledge, engine, kbs[0], rng, "last")
    assert_same_as_fts5(engine, kbs, rng)
    knowledge.delete_document("t", "last")
    upload(knowledge, engine, kbs[1], rng, "reused", chunks=len(last))
    assert_same_as_fts5(engine, kbs, rng)
    knowledge.delete_knowledge_base("t", kbs[1].id)
    assert engine.keyword_search(RetrieveParams(" ".join(WORDS), [kbs[1].id]), 5) == []
    assert_same_as_fts5(engine, [kbs[0], kbs[0]], rng)


def test_the_index_follows_a_document_parsed_again_and_retitled(world):
    """A document parsed again keeps its id and gets new chunks (replace_document, then its keyword rows);
    a new title rewrites its rows in place. Neither leaves the old rows' postings behind."""
    _db, knowledge, engine, kbs = world
    rng = random.Random(7)
    for n in range(8):
        upload(knowledge, engine, kbs[n % 2], rng, f"d{n}")
    assert_same_as_fts5(engine, kbs, rng)
    old = knowledge.document("t", "d2")
    new_chunks = [
        Chunk(
            id=f"d2-v2-{i}",
            tenant_id="t",
            knowledge_base_id=kbs[0].id,
            knowledge_id="d2",
            chunk_index=i,
            content="quasar nebula pulsar" if i == 0 else text(rng, 12),
        )
        for i in range(2)
    ]
    with knowledge.atomic():
        assert knowledge.replace_document(old, new_chunks)
        engine.index_keywords(kbs[0].id, new_chunks, document=old)
    assert_same_as_fts5(engine, kbs, rng)
    hits = engine.keyword_search(RetrieveParams(" ".join(WORDS), [kbs[0].id]), 200)
    assert not any(h.id.startswith("d2-") and not h.id.startswith("d2-v2-") for h in hits)
    assert engine.keyword_search(RetrieveParams("quasar", [kbs[0].id]), 5)[0].id == "d2-v2-0"
    retitled = knowledge.update_document("t", "d2", title="Pulsar atlas")
    engine.index_keywords(kbs[0].id, new_chunks, document=retitled)
    assert_same_as_fts5(engine, kbs, rng)
    assert engine.keyword_search(RetrieveParams("atlas", [kbs[0].id]), 5)[0].knowledge_id == "d2"


def test_disabled_chunks_and_documents_are_filtered_as_fts5_filters_them(world):
    db, knowledge, engine, kbs = world
    rng = random.Random(3)
    for n in range(8):
        upload(knowledge, engine, kbs[0], rng, f"d{n}")
    params = RetrieveParams(query="cell gene brain", knowledge_base_ids=[kbs[0].id])
    best = engine.keyword_search(params, 3)
    knowledge.update_chunk("t", best[0].id, enabled=False)
    after = engine.keyword_search(params, 3)
    assert best[0].id not in [h.id for h in after]
    assert len(after) == 3
    db.execute("UPDATE documents SET enabled = 0 WHERE id = ?", (after[0].knowledge_id,))
    assert_same_as_fts5(engine, kbs, rng)
    assert [h.id for h in engine.keyword_search(params, 3)] == [h.id for h in engine.keyword_search_fts5(params, 3)]


def test_another_process_writes_are_followed_and_a_pruned_log_rebuilds(world, tmp_path):
    db, knowledge, engine, kbs = world
    rng = random.Random(4)
    for n in range(6):
        upload(knowledge, engine, kbs[0], rng, f"d{n}")
    assert_same_as_fts5(engine, kbs, rng)
    other = Database(tmp_path / "k.db")  # another process's connection to the same file
    try:
        other_knowledge, other_engine = SqliteKnowledgeStore(other), EmbeddedEngine(other)
        upload(other_knowledge, other_engine, kbs[0], rng, "theirs")
        other_knowledge.delete_document("t", "d1")
    finally:
        other.close()
    assert_same_as_fts5(engine, kbs, rng)
    state = engine._keywords._state
    upload(knowledge, engine, kbs[1], rng, "more")
    db.execute("DELETE FROM keyword_changes")  # pruned past this copy
    upload(knowledge, engine, kbs[1], rng, "after-prune")
    assert_same_as_fts5(engine, kbs, rng)
    assert engine._keywords._state is not state


def test_words_fts5_reads_as_phrases_and_searches_in_a_transaction_go_to_fts5(world):
    _db, knowledge, engine, kbs = world
    rng = random.Random(5)
    for n in range(5):
        upload(knowledge, engine, kbs[0], rng, f"d{n}")
    with knowledge.atomic():
        chunk = Chunk(
            id="u-0",
            tenant_id="t",
            knowledge_base_id=kbs[0].id,
            knowledge_id="u",
            chunk_index=0,
            content="snake_case word",
        )
        knowledge.insert_document(Document(id="u", tenant_id="t", knowledge_base_id=kbs[0].id, title="u"), [chunk])
        engine.index_keywords(kbs[0].id, [chunk])
        inside = engine.keyword_search(RetrieveParams("snake_case", [kbs[0].id]), 5)
    assert [h.id for h in inside] == ["u-0"]  # read inside the writing transaction, by FTS5
    assert engine._keywords.rank(["snake_case"], [kbs[0].id]) is None  # a phrase of two terms
    assert [h.id for h in engine.keyword_search(RetrieveParams("snake_case", [kbs[0].id]), 5)] == ["u-0"]
    assert_same_as_fts5(engine, kbs, rng)


def test_searches_during_concurrent_uploads_and_deletes_end_equal_to_fts5(world):
    _db, knowledge, engine, kbs = world
    rng = random.Random(6)
    for n in range(10):
        upload(knowledge, engine, kbs[n % 2], rng, f"d{n}")
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        local = random.Random(7)
        try:
            for n in range(40):
                upload(knowledge, engine, kbs[n % 2], local, f"w{n}")
                if n % 3 == 0:
                    knowledge.delete_document("t", f"w{n - 1}" if n else "d0")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            done.set()

    def search() -> None:
        local = random.Random(8)
        try:
            while not done.is_set():
                engine.keyword_search(RetrieveParams(text(local, 3), [kbs[0].id, kbs[1].id]), 10)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write), *(threading.Thread(target=search) for _ in range(3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert_same_as_fts5(engine, kbs, rng, queries=80)


class _Embedder:
    """Edits re-embed the chunk; the keyword index is what is tested here."""

    model_id = "m"
    dimensions = 2

    def embed_documents(self, texts):
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)


def test_remembered_hits_follow_edits_relinks_other_processes_and_rollbacks(world, tmp_path):
    _db, knowledge, engine, kbs = world
    document = Document(id="doc", tenant_id="t", knowledge_base_id=kbs[0].id, title="Doc")
    chunks = [
        Chunk(
            id=f"c{i}",
            tenant_id="t",
            knowledge_base_id=kbs[0].id,
            knowledge_id="doc",
            chunk_index=i,
            content=f"walrus number {i}",
            pre_chunk_id=f"c{i - 1}" if i else "",
            next_chunk_id=f"c{i + 1}" if i < 2 else "",
        )
        for i in range(3)
    ]
    with knowledge.atomic():
        knowledge.insert_document(document, chunks)
        engine.index_keywords(kbs[0].id, chunks, document=document)

    def hits() -> dict[str, object]:
        return {h.id: h for h in engine.keyword_search(RetrieveParams("walrus", [kbs[0].id]), 10)}

    assert hits()["c1"].chunk_metadata == {}
    hits()["c1"].metadata["stage"] = "filled in place"  # a later stage's own copy
    assert hits()["c1"].metadata == {}
    knowledge.update_chunk("t", "c1", metadata={"page": 3})
    assert hits()["c1"].chunk_metadata == {"page": 3}
    knowledge.delete_chunk("t", "c1")
    after = hits()
    assert set(after) == {"c0", "c2"}
    assert (after["c0"].next_chunk_id, after["c2"].pre_chunk_id) == ("c2", "c0")
    other = Database(tmp_path / "k.db")
    try:
        SqliteKnowledgeStore(other).update_chunk("t", "c2", metadata={"page": 9})
    finally:
        other.close()
    assert hits()["c2"].chunk_metadata == {"page": 9}
    inside: list[object] = []

    def edit_then_fail() -> None:
        with knowledge.atomic():
            knowledge.update_chunk("t", "c0", metadata={"draft": True})
            inside.append(hits()["c0"].chunk_metadata)  # read inside the transaction
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        edit_then_fail()
    assert inside == [{"draft": True}]
    assert hits()["c0"].chunk_metadata == {}


def test_column_weights_count_each_column_as_fts5_does(world):
    db, knowledge, engine, kbs = world
    rng = random.Random(9)
    for n in range(12):
        upload(knowledge, engine, kbs[0], rng, f"d{n}")
    index = KeywordIndex(db, (1.0, 3.0))  # titles weigh three times the text
    for _ in range(30):
        words = [rng.choice(WORDS).lower() for _ in range(rng.randint(1, 3))]
        ranking = index.rank(words, [kbs[0].id])
        assert ranking is not None
        expected = db.query(
            "SELECT rowid, -bm25(chunks_fts, 1.0, 3.0) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
            " ORDER BY score DESC, rowid",
            (fts_match(words),),
        )
        assert ranking.top(100) == [(row["score"], row["rowid"]) for row in expected]


def test_a_large_index_reads_every_terms_postings_in_the_background(world, monkeypatch):
    import ragline.retrieval.keyword_index as keyword_index

    _db, knowledge, engine, kbs = world
    monkeypatch.setattr(keyword_index, "PRELOAD_MIN_ROWS", 10)
    rng = random.Random(10)
    for n in range(8):
        upload(knowledge, engine, kbs[n % 2], rng, f"d{n}")
    engine.keyword_search(RetrieveParams("zebrafish", [kbs[0].id]), 5)  # the first search builds the index
    assert engine._keywords.wait_preloaded(timeout=60)
    state = engine._keywords._state
    assert {"cell", "gene", "brain", "insulin"} <= set(state.postings)  # read without a query naming them
    knowledge.delete_document("t", "d2")
    upload(knowledge, engine, kbs[1], rng, "after")
    assert_same_as_fts5(engine, kbs, rng, queries=60)
    assert engine._keywords._state is state
