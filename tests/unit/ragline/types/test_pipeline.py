import pytest

from ragline.types import PRESETS, EventType, PipelineBuilder
from ragline.types.pipeline import preset


def test_add_keeps_order():
    stages = PipelineBuilder().add(EventType.LOAD_HISTORY).add(EventType.CHUNK_SEARCH).add(EventType.FILTER_TOP_K)
    assert stages.build() == [EventType.LOAD_HISTORY, EventType.CHUNK_SEARCH, EventType.FILTER_TOP_K]


def test_add_if_only_adds_when_condition_holds():
    built = (
        PipelineBuilder()
        .add_if(True, EventType.LOAD_HISTORY)
        .add_if(False, EventType.WEB_FETCH)
        .add(EventType.CHUNK_SEARCH)
        .add_if(False, EventType.DATA_ANALYSIS)
        .add_if(True, EventType.CHAT_COMPLETION_STREAM)
        .build()
    )
    assert built == [EventType.LOAD_HISTORY, EventType.CHUNK_SEARCH, EventType.CHAT_COMPLETION_STREAM]


def test_builder_methods_return_the_builder():
    builder = PipelineBuilder()
    assert builder.add(EventType.CHUNK_SEARCH) is builder
    assert builder.add_if(False, EventType.CHUNK_SEARCH) is builder


def test_empty_builder_builds_empty_list():
    assert PipelineBuilder().build() == []


def test_build_returns_a_copy_unaffected_by_later_changes():
    builder = PipelineBuilder().add(EventType.CHUNK_SEARCH)
    first = builder.build()
    builder.add(EventType.CHUNK_RERANK).add_if(True, EventType.CHUNK_MERGE)
    assert first == [EventType.CHUNK_SEARCH]
    second = builder.build()
    assert second == [EventType.CHUNK_SEARCH, EventType.CHUNK_RERANK, EventType.CHUNK_MERGE]
    assert first is not second


def test_mutating_built_list_does_not_change_builder():
    builder = PipelineBuilder().add(EventType.CHUNK_SEARCH)
    built = builder.build()
    built.append(EventType.WEB_FETCH)
    built.clear()
    assert builder.build() == [EventType.CHUNK_SEARCH]


def test_duplicate_stages_are_kept():
    assert PipelineBuilder().add(EventType.CHUNK_SEARCH).add(EventType.CHUNK_SEARCH).build() == [
        EventType.CHUNK_SEARCH,
        EventType.CHUNK_SEARCH,
    ]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_returns_fresh_list_equal_to_the_preset(name):
    first = preset(name)
    assert isinstance(first, list)
    assert first == list(PRESETS[name])
    first.append(EventType.WEB_FETCH)
    second = preset(name)
    assert second == list(PRESETS[name])
    assert second is not first


def test_presets_are_immutable_tuples_of_event_types():
    for stages in PRESETS.values():
        assert isinstance(stages, tuple)
        assert stages
        assert all(isinstance(stage, EventType) for stage in stages)


def test_rag_presets_end_with_generation():
    assert preset("rag")[-1] == EventType.CHAT_COMPLETION
    assert preset("rag_stream")[-1] == EventType.CHAT_COMPLETION_STREAM
    assert preset("chat_history_stream")[0] == EventType.LOAD_HISTORY


def test_unknown_preset_raises_key_error_naming_it():
    with pytest.raises(KeyError, match="nope"):
        preset("nope")
