"""MEMORY_RECALL: memories into the prompt and one memory_recalled event; never in the way of the answer."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from ragline.event.bus import BusEvent, BusEventType, EventBus
from ragline.memory.models import new_memory
from ragline.memory.recall import MEMORY_PROMPT_HEADER
from ragline.memory.sqlite import SqliteMemoryStore
from ragline.memory.text import embedding_text
from ragline.models.registry import ModelRegistry
from ragline.pipeline.emit import turn_hex
from ragline.pipeline.memory_recall import PluginMemoryRecall
from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, EventManager, PluginError
from ragline.types import ChatManage, EventType, PipelineContext, PipelineRequest
from tests.unit.ragline.memory.fakes import ConceptEmbedder, memory_request


@pytest.fixture
def store(db):
    return SqliteMemoryStore(db)


@pytest.fixture
def embedder():
    return ConceptEmbedder()


@pytest.fixture
def models(embedder):
    registry = ModelRegistry()
    registry.add_embedder(embedder.model_id, lambda: embedder)
    return registry


def seed(store, embedder, *contents):
    stored = []
    for content in contents:
        memory = new_memory("t-1", "alice", content).model_copy(update={"embedding_model": embedder.model_id})
        stored.append(store.add(memory, embedder.embed_documents([embedding_text(content)])[0]))
    return stored


def start(request: PipelineRequest) -> tuple[ChatManage, list[BusEvent]]:
    events: list[BusEvent] = []
    bus = EventBus()

    async def record(event: BusEvent) -> None:
        events.append(event)

    bus.subscribe(record)
    return ChatManage.start(request, PipelineContext(event_bus=bus)), events


class Next:
    """The inner chain: records that it ran and returns a given outcome."""

    def __init__(self, result: PluginError | None = None) -> None:
        self.calls = 0
        self.result = result

    async def __call__(self) -> PluginError | None:
        self.calls += 1
        return self.result


def run(plugin: PluginMemoryRecall, cm: ChatManage, next: Next) -> PluginError | None:
    return asyncio.run(plugin.on_event(EventType.MEMORY_RECALL, cm, next))


def test_recalled_memories_reach_the_prompt_and_one_event(store, embedder, models):
    work, _ = seed(store, embedder, "The user works at Acme.", "The user is vegetarian.")
    cm, events = start(memory_request(query="Where is my office?"))
    next = Next()
    assert run(PluginMemoryRecall(store, models), cm, next) is None
    assert next.calls == 1
    assert cm.state.memory_prompt.startswith(MEMORY_PROMPT_HEADER)
    assert "- The user works at Acme." in cm.state.memory_prompt
    assert "vegetarian" not in cm.state.memory_prompt
    [event] = events
    assert event.type == BusEventType.MEMORY_RECALLED
    assert event.id == f"{turn_hex(cm)}-memory"
    assert event.done is True
    assert event.data["count"] == 1
    [shown] = event.data["memories"]
    assert (shown["id"], shown["content"]) == (work.id, "The user works at Acme.")
    assert 0.3 <= shown["score"] <= 1.0
    assert set(shown) == {"id", "content", "score"}


def test_top_k_bounds_what_is_recalled(store, embedder, models):
    for city in ("Berlin", "Paris", "Lyon"):
        store.add(new_memory("t-1", "alice", f"The user visited {city}."))
    cm, events = start(memory_request(query="Which cities have I visited?"))
    run(PluginMemoryRecall(store, models, top_k=2), cm, Next())
    assert events[0].data["count"] == 2
    assert cm.state.memory_prompt.count("\n- ") == 2


def test_disabled_memory_does_nothing(store, embedder, models):
    seed(store, embedder, "The user works at Acme.")
    for request in (
        memory_request(memory_enabled=False),
        PipelineRequest(query="Where do I work?", request_id="r", session_id="s", tenant_id="t-1", user_id="alice"),
    ):
        cm, events = start(request)
        next = Next()
        run(PluginMemoryRecall(store, models), cm, next)
        assert (events, cm.state.memory_prompt, next.calls) == ([], "", 1)
    assert embedder.calls == ["I work at Acme."]  # only the seeding: the question was never embedded


def test_nothing_recalled_means_no_event(store, embedder, models):
    seed(store, embedder, "The user works at Acme.")
    cm, events = start(memory_request(query="Explain the RRF formula", user_id="bob"))
    run(PluginMemoryRecall(store, models), cm, Next())
    assert (events, cm.state.memory_prompt) == ([], "")


class BrokenStore:
    def search(self, *args, **kwargs):
        raise OSError("database is locked")


def test_store_failure_emits_nothing_and_the_chain_continues(models):
    cm, events = start(memory_request())
    next = Next(ERR_SEARCH_NOTHING)
    assert run(PluginMemoryRecall(BrokenStore(), models), cm, next) is ERR_SEARCH_NOTHING  # type: ignore[arg-type]
    assert (events, cm.state.memory_prompt, next.calls) == ([], "", 1)


def test_without_an_embedder_keywords_still_recall(store, embedder):
    seed(store, embedder, "The user works at Acme.")
    cm, events = start(memory_request(query="Where do I work?"))
    run(PluginMemoryRecall(store, ModelRegistry()), cm, Next())
    assert events[0].data["memories"][0]["score"] == 1.0


def test_registered_stage_runs_in_the_event_manager(store, embedder, models):
    seed(store, embedder, "The user works at Acme.")
    manager = EventManager()
    manager.register(PluginMemoryRecall(store, models))
    cm, events = start(memory_request())
    assert asyncio.run(manager.trigger(EventType.MEMORY_RECALL, cm)) is None
    assert [e.type for e in events] == [BusEventType.MEMORY_RECALLED]


class OtherSpaceEmbedder(ConceptEmbedder):
    """Another model: the same concepts on other dimensions, so its vectors mean nothing to ConceptEmbedder's."""

    def _vector(self, text: str) -> np.ndarray:
        return np.roll(super()._vector(text), 5)


def test_memories_of_the_previous_default_model_are_still_recalled_by_meaning(store):
    # Stored while "fake:old" was the default embedder; the default is now "fake:new". The question shares no
    # word with the memory ("office" / "works at Acme"): only a vector of the memory's own model finds it.
    old, new = ConceptEmbedder("fake:old"), OtherSpaceEmbedder("fake:new")
    seed(store, old, "The user works at Acme.")
    registry = ModelRegistry()
    registry.add_embedder(new.model_id, lambda: new, default=True)
    registry.add_embedder(old.model_id, lambda: old)
    cm, events = start(memory_request(query="Where is my office?"))
    run(PluginMemoryRecall(store, registry), cm, Next())
    [event] = events
    assert [m["content"] for m in event.data["memories"]] == ["The user works at Acme."]
    assert event.data["memories"][0]["score"] >= 0.3
    assert old.calls[-1] == new.calls[-1] == "Where is my office?"


def test_memories_of_a_model_no_longer_registered_rank_by_their_words(store):
    old, new = ConceptEmbedder("fake:old"), OtherSpaceEmbedder("fake:new")
    seed(store, old, "The user works at Acme.")
    registry = ModelRegistry()
    registry.add_embedder(new.model_id, lambda: new, default=True)
    cm, events = start(memory_request(query="Where is my office?"))
    run(PluginMemoryRecall(store, registry), cm, Next())
    assert events == []  # no shared word, and no vector of its model to compare
    cm, events = start(memory_request(query="Do I still work at Acme?"))
    run(PluginMemoryRecall(store, registry), cm, Next())
    assert [m["content"] for m in events[0].data["memories"]] == ["The user works at Acme."]
