import pytest

from ragline.types import EventType

SEED_EVENTS = [
    "load_history",
    "memory_recall",
    "query_understand",
    "chunk_search",
    "chunk_search_parallel",
    "entity_search",
    "chunk_rerank",
    "web_fetch",
    "chunk_merge",
    "data_analysis",
    "into_chat_message",
    "chat_completion_stream",
    "filter_top_k",
]


def test_exactly_the_seeds_events_but_its_blocking_completion():
    assert len(EventType) == 13
    assert {event.value for event in EventType} == set(SEED_EVENTS)
    # The seed's CHAT_COMPLETION (a blocking answer) has no stage here: every answer streams.
    with pytest.raises(ValueError, match="chat_completion"):
        EventType("chat_completion")


def test_event_values_are_their_names_lowercased():
    for event in EventType:
        assert event.value == event.name.lower()


def test_event_type_is_a_string():
    assert EventType("chunk_rerank") is EventType.CHUNK_RERANK
    assert EventType.CHUNK_RERANK == "chunk_rerank"
