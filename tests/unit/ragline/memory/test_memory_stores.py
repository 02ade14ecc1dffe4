"""The memory store contract, run against SQLite and DynamoDB (moto) with the same assertions."""

from __future__ import annotations

import numpy as np
import pytest

from ragline.memory import store as store_module
from ragline.memory.models import new_memory
from ragline.memory.store import DUPLICATE_SIMILARITY

TENANT = "t-1"
USER = "alice"


def unit(*values: float) -> list[float]:
    vector = np.asarray(values, dtype=np.float32)
    return (vector / np.linalg.norm(vector)).tolist()


def remember(store, content, vector=None, tenant=TENANT, user=USER, model="fake:concepts", **sources):
    memory = new_memory(tenant, user, content, **sources)
    if vector is not None:
        memory = memory.model_copy(update={"embedding_model": model})
    return store.add(memory, vector)


def test_add_then_list_newest_first(store):
    first = remember(store, "The user works at Acme.", source_session_id="s-1", source_message_id="m-1")
    second = remember(store, "The user lives in Berlin.")
    listed = store.list(TENANT, USER)
    assert [m.id for m in listed] == [second.id, first.id]
    assert listed[1].content == "The user works at Acme."
    assert (listed[1].source_session_id, listed[1].source_message_id) == ("s-1", "m-1")


def test_vectors_round_trip_as_float32_and_never_dump(store):
    vector = unit(0.1, 0.2, 0.3, 0.4)
    stored = remember(store, "The user works at Acme.", vector)
    [loaded] = store.list(TENANT, USER)
    assert loaded.id == stored.id
    assert loaded.vector == pytest.approx(vector, abs=1e-6)
    assert loaded.embedding_model == "fake:concepts"
    assert "vector" not in loaded.model_dump()
    assert "embedding_model" not in loaded.model_dump()


def test_restating_the_same_text_updates_instead_of_duplicating(store):
    original = remember(store, "The user lives in Berlin.", source_message_id="m-1")
    again = remember(store, "  the user LIVES in berlin ", source_message_id="m-2")
    [only] = store.list(TENANT, USER)
    assert again.id == original.id == only.id
    assert only.content == "the user LIVES in berlin"
    assert only.source_message_id == "m-2"
    assert only.created_at == original.created_at
    assert only.updated_at > original.updated_at


def test_a_very_close_vector_is_the_same_memory(store):
    original = remember(store, "The user works at Acme.", unit(1.0, 0.0, 0.0))
    close = unit(1.0, 0.1, 0.0)
    assert float(np.dot(close, unit(1.0, 0.0, 0.0))) >= DUPLICATE_SIMILARITY
    updated = remember(store, "The user works for Acme.", close)
    [only] = store.list(TENANT, USER)
    assert updated.id == original.id == only.id
    assert only.content == "The user works for Acme."
    assert only.vector == pytest.approx(close, abs=1e-6)


def test_related_but_different_facts_stay_apart(store):
    remember(store, "The user lives in Berlin.", unit(1.0, 0.0, 0.0))
    remember(store, "The user lives in Paris.", unit(1.0, 0.6, 0.0))  # cosine ~0.86
    assert len(store.list(TENANT, USER)) == 2


def test_vectors_of_another_model_are_not_compared(store):
    remember(store, "The user works at Acme.", unit(1.0, 0.0, 0.0), model="model-a")
    remember(store, "The user likes hiking.", unit(1.0, 0.0, 0.0), model="model-b")
    assert len(store.list(TENANT, USER)) == 2


def test_memories_are_per_user(store):
    mine = remember(store, "The user works at Acme.")
    remember(store, "The user works at Globex.", user="bob")
    assert [m.content for m in store.list(TENANT, USER)] == ["The user works at Acme."]
    assert [m.content for m in store.list(TENANT, "bob")] == ["The user works at Globex."]
    assert store.search(TENANT, "bob", None, "Acme", 5) == []
    assert store.delete(TENANT, "bob", mine.id) is False
    assert [m.id for m in store.list(TENANT, USER)] == [mine.id]


def test_memories_are_per_tenant(store):
    mine = remember(store, "The user works at Acme.")
    assert store.list("t-2", USER) == []
    assert store.search("t-2", USER, None, "Acme", 5) == []
    assert store.delete("t-2", USER, mine.id) is False
    assert store.delete_all("t-2", USER) == 0
    assert len(store.list(TENANT, USER)) == 1


def test_delete_one_then_absent(store):
    keep = remember(store, "The user works at Acme.")
    gone = remember(store, "The user lives in Berlin.")
    assert store.delete(TENANT, USER, gone.id) is True
    assert store.delete(TENANT, USER, gone.id) is False
    assert store.delete(TENANT, USER, "no-such-id") is False
    assert [m.id for m in store.list(TENANT, USER)] == [keep.id]


def test_delete_all_counts_and_spares_other_users(store):
    for content in ("The user works at Acme.", "The user lives in Berlin.", "The user likes hiking."):
        remember(store, content)
    remember(store, "The user works at Globex.", user="bob")
    assert store.delete_all(TENANT, USER) == 3
    assert store.list(TENANT, USER) == []
    assert store.delete_all(TENANT, USER) == 0
    assert len(store.list(TENANT, "bob")) == 1


def test_search_ranks_by_vector(store):
    work = remember(store, "The user works at Acme.", unit(1.0, 0.0, 0.0))
    city = remember(store, "The user lives in Berlin.", unit(0.0, 1.0, 0.0))
    food = remember(store, "The user is vegetarian.", unit(0.0, 0.0, 1.0))
    found = store.search(TENANT, USER, unit(0.2, 0.1, 0.9), "What should I cook tonight?", 3, "fake:concepts")
    assert [m.id for m, _ in found] == [food.id, work.id, city.id]
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)
    assert 0.0 < scores[-1] < scores[0] <= 1.0 + 1e-6
    assert store.search(TENANT, USER, unit(0.2, 0.1, 0.9), "", 1, "fake:concepts")[0][0].id == food.id


def test_search_compares_each_models_memories_with_the_question_in_that_model(store):
    old = remember(store, "The user works at Acme.", unit(1.0, 0.0, 0.0), model="model-old")
    new = remember(store, "The user is vegetarian.", unit(0.0, 1.0, 0.0), model="model-new")
    other = remember(store, "The user lives in Berlin.", unit(0.0, 0.0, 1.0), model="model-gone")
    asked: list[str] = []

    def query_vector_of(model):
        asked.append(model)
        return unit(0.8, 0.0, 0.6) if model == "model-old" else None

    found = dict(
        (m.id, score)
        for m, score in store.search(TENANT, USER, unit(0.0, 0.6, 0.8), "?", 3, "model-new", query_vector_of)
    )
    assert found[old.id] == pytest.approx(0.8, abs=1e-5)  # the question in model-old's space
    assert found[new.id] == pytest.approx(0.6, abs=1e-5)  # the default's own vector
    assert other.id not in found  # no vector of its model, no word in common
    assert sorted(asked) == ["model-gone", "model-old"]  # never the default's model again


def test_search_embeds_the_question_for_a_bounded_number_of_other_models(store):
    for i in range(store_module.MAX_OTHER_MODELS + 2):
        for j in range(i + 1):  # model-0 has one memory, model-3 four: the commonest are embedded first
            axis = [0.0] * 8
            axis[j] = 1.0  # one model's memories are orthogonal: none restates another
            remember(store, f"Fact {i}-{j} about the user.", axis, model=f"model-{i}")
    asked: list[str] = []
    store.search(TENANT, USER, None, "?", 5, "", lambda model: asked.append(model))
    assert asked == [f"model-{i}" for i in range(store_module.MAX_OTHER_MODELS + 1, 1, -1)]


def test_search_falls_back_to_keywords_without_vectors(store):
    work = remember(store, "The user works at Acme.")
    remember(store, "The user lives in Berlin.")
    found = store.search(TENANT, USER, None, "Where do I work?", 5)
    assert [(m.id, score) for m, score in found] == [(work.id, 1.0)]


def test_keyword_match_counts_for_memories_without_a_vector(store):
    remember(store, "The user lives in Berlin.", unit(0.0, 1.0, 0.0))
    acme = remember(store, "The user works at Acme.")
    found = store.search(TENANT, USER, unit(1.0, 0.0, 0.0), "which office at Acme", 5, "fake:concepts")
    assert found[0][0].id == acme.id
    assert found[0][1] == pytest.approx(0.5)


def test_search_respects_top_k(store):
    for city in ("Berlin", "Paris", "Lyon"):
        remember(store, f"The user visited {city}.")
    assert len(store.search(TENANT, USER, None, "visited", 2)) == 2
    assert store.search(TENANT, USER, None, "visited", 0) == []


def test_the_least_recently_confirmed_memory_is_evicted(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_MEMORIES_PER_USER", 3)
    oldest = remember(store, "The user works at Acme.")
    second = remember(store, "The user lives in Berlin.")
    remember(store, "The user likes hiking.")
    remember(store, "The user works at Acme.")  # confirmed again: now the newest
    remember(store, "The user speaks French.")
    kept = {m.content for m in store.list(TENANT, USER)}
    assert len(kept) == 3
    assert oldest.content in kept
    assert second.content not in kept
