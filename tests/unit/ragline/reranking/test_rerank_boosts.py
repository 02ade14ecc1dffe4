import pytest

from ragline.reranking.boosts import affinity_factor, apply_memory_affinity, apply_wiki_boost
from ragline.reranking.config import MemoryAffinityConfig
from ragline.store.citations import SqliteCitationHistory
from ragline.store.sessions import SqliteSessionStore
from ragline.types import ChunkType, SearchResult

AFFINITY = MemoryAffinityConfig()


@pytest.mark.parametrize(
    ("hits", "factor"),
    [(0, 1.0), (1, 1.0), (2, 1.075), (3, 1.0946), (8, 1.15), (50, 1.15)],
)
def test_affinity_factor(hits, factor):
    assert affinity_factor(hits, AFFINITY) == pytest.approx(factor, abs=1e-4)


def result(id: str, score: float, **fields) -> SearchResult:
    return SearchResult(id=id, content=id, score=score, **fields)


def test_memory_affinity_boosts_familiar_documents_and_resorts_stably():
    results = [
        result("a", 0.80, knowledge_id="doc-a"),
        result("b", 0.78, knowledge_id="doc-b"),
        result("c", 0.78, knowledge_id="doc-c"),
        result("d", 0.50, knowledge_id=""),
    ]
    boosted = apply_memory_affinity(results, {"doc-b": 3, "doc-c": 1, "": 9}, AFFINITY)
    assert boosted == 1
    assert [r.id for r in results] == ["b", "a", "c", "d"]
    assert results[0].score == pytest.approx(0.78 * 1.0946, abs=1e-4)
    assert results[0].metadata["memory_affinity_boost"] == "1.0946"
    assert "memory_affinity_boost" not in results[2].metadata


def test_memory_affinity_without_familiar_documents_keeps_the_order():
    results = [result("a", 0.5, knowledge_id="x"), result("b", 0.9, knowledge_id="y")]
    assert apply_memory_affinity(results, {"x": 1}, AFFINITY) == 0
    assert [r.id for r in results] == ["a", "b"]


def test_wiki_boost_multiplies_wiki_pages_and_resorts_stably():
    results = [
        result("t1", 0.9),
        result("w1", 0.8, chunk_type=ChunkType.WIKI_PAGE),
        result("t2", 0.6),
        result("w2", 0.45, chunk_type=ChunkType.WIKI_PAGE),
        result("t3", 0.585),
    ]
    assert apply_wiki_boost(results, lambda r: True, 1.3) == 2
    assert [r.id for r in results] == ["w1", "t1", "t2", "w2", "t3"]
    assert results[0].score == pytest.approx(1.04)
    assert results[0].metadata["wiki_boosted"] == "true"


def test_wiki_boost_respects_the_predicate():
    results = [result("w", 0.5, chunk_type=ChunkType.WIKI_PAGE), result("t", 0.6)]
    assert apply_wiki_boost(results, lambda r: False, 1.3) == 0
    assert [r.id for r in results] == ["w", "t"]


# --- the SQLite citation history


def answer(store: SqliteSessionStore, session, request_id: str, documents: list[str], user_id: str = "") -> None:
    _, assistant = store.create_turn(session, request_id, "question", user_id=user_id)
    references = [{"id": f"chunk-{i}", "content": "c", "knowledge_id": d} for i, d in enumerate(documents)]
    store.complete_assistant_message(session.id, assistant.id, "answer", references)


def test_sqlite_citation_history_counts_answers_per_document(db):
    store = SqliteSessionStore(db)
    session = store.create_session("t-1", [])
    other_tenant = store.create_session("t-2", [])
    answer(store, session, "r1", ["doc-a", "doc-a", "doc-b"], "user-1")  # two chunks of doc-a count once
    answer(store, session, "r2", ["doc-a"], "user-1")
    answer(store, session, "r3", ["doc-a", "doc-c"], "user-1")
    answer(store, session, "r4", [], "user-1")
    answer(store, session, "r5", ["doc-d", "doc-d"], "user-2")  # another person of the same tenant
    answer(store, session, "r6", ["doc-e"])  # the tenant's default user
    answer(store, other_tenant, "r7", ["doc-a", "doc-b"], "user-1")
    store.create_turn(session, "r8", "pending question", user_id="user-1")  # pending answer: no references yet
    history = SqliteCitationHistory(db, max_messages=AFFINITY.max_messages)
    assert history.cited_documents("t-1", "user-1", AFFINITY.max_doc_ids) == {"doc-a": 3, "doc-b": 1, "doc-c": 1}
    assert history.cited_documents("t-1", "user-1", limit=1) == {"doc-a": 3}
    assert history.cited_documents("t-1", "user-2", AFFINITY.max_doc_ids) == {"doc-d": 1}
    assert history.cited_documents("t-1", "", AFFINITY.max_doc_ids) == {"doc-e": 1}
    assert history.cited_documents("t-3", "", AFFINITY.max_doc_ids) == {}


def test_sqlite_citation_history_reads_only_recent_answers(db):
    store = SqliteSessionStore(db)
    session = store.create_session("t-1", [])
    for i in range(4):
        answer(store, session, f"r{i}", ["doc-a"])
    assert SqliteCitationHistory(db, max_messages=2).cited_documents("t-1", "", AFFINITY.max_doc_ids) == {"doc-a": 2}


def test_sqlite_citation_history_skips_unreadable_rows(db):
    store = SqliteSessionStore(db)
    session = store.create_session("t-1", [])
    answer(store, session, "r1", ["doc-a"])
    _, broken = store.create_turn(session, "r2", "q")
    db.execute("UPDATE messages SET knowledge_references = ? WHERE id = ?", ("{oops", broken.id))
    _, odd = store.create_turn(session, "r3", "q")
    db.execute("UPDATE messages SET knowledge_references = ? WHERE id = ?", ('[1, {"knowledge_id": 7}]', odd.id))
    assert SqliteCitationHistory(db, max_messages=AFFINITY.max_messages).cited_documents(
        "t-1", "", AFFINITY.max_doc_ids
    ) == {"doc-a": 1}
