from ragline.types import EventType, PipelineBuilder


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
