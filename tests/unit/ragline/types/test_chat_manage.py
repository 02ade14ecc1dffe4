import json

import pytest
from pydantic import ValidationError

from ragline.types import (
    ChatManage,
    History,
    PipelineContext,
    PipelineState,
    SearchResult,
    SearchTarget,
    SearchTargetType,
)


def rich_state() -> PipelineState:
    return PipelineState(
        rewrite_query="rewritten",
        intent="kb_search",
        history=[
            History(query="q0", answer="a0", request_id="r0", knowledge_references=[SearchResult(id="h", content="hc")])
        ],
        search_result=[SearchResult(id="s1", content="one", score=0.5, metadata={"k": "v"})],
        rerank_result=[SearchResult(id="r1", content="two", score=0.9, chunk_metadata={"nested": {"a": 1}})],
        merge_result=[SearchResult(id="m1", content="three", sub_chunk_id=["x", "y"])],
        candidate_count=7,
        entity=["e1"],
        graph_result={"nodes": [{"id": 1}]},
        user_content="user",
        started_at_ms=123,
        steps_run=4,
    )


def test_start_initialises_rewrite_to_query(make_request):
    cm = ChatManage.start(make_request(query="hello"))
    assert cm.state.rewrite_query == "hello"
    assert cm.search_query == "hello"
    assert cm.state.started_at_ms > 0


def test_search_query_prefers_rewrite(make_request):
    cm = ChatManage(make_request(query="orig"), PipelineState(rewrite_query="new"))
    assert cm.search_query == "new"
    cm.state.rewrite_query = ""
    assert cm.search_query == "orig"


def test_clone_deep_copies_request_and_state_but_shares_context(make_request):
    context = PipelineContext(session_id="s", message_id="m")
    request = make_request(knowledge_base_ids=("kb1",), search_targets=(SearchTarget(knowledge_base_id="kb1"),))
    cm = ChatManage(request, rich_state(), context)
    copy = cm.clone()

    assert copy.context is cm.context
    assert copy.request == cm.request
    assert copy.state == cm.state
    assert copy.request is not cm.request
    assert copy.state is not cm.state

    copy.state.search_result.append(SearchResult(id="new", content="n"))
    copy.state.rerank_result[0].score = 0.1
    copy.state.rerank_result[0].chunk_metadata["nested"]["a"] = 2
    copy.state.history.append(History(query="q1", answer="a1"))
    copy.state.graph_result["nodes"].append({"id": 2})
    copy.state.entity.append("e2")
    copy.state.rewrite_query = "changed"

    assert [r.id for r in cm.state.search_result] == ["s1"]
    assert cm.state.rerank_result[0].score == 0.9
    assert cm.state.rerank_result[0].chunk_metadata == {"nested": {"a": 1}}
    assert [h.query for h in cm.state.history] == ["q0"]
    assert cm.state.graph_result == {"nodes": [{"id": 1}]}
    assert cm.state.entity == ["e1"]
    assert cm.state.rewrite_query == "rewritten"


def test_clone_shares_the_frozen_history_rounds(make_request):
    """Deep-copying five rounds with their references took ~20 times as long as the rest of the state, for each
    parallel branch of every turn; the rounds are frozen instead, and shared."""
    cm = ChatManage(make_request(), rich_state())
    copy = cm.clone()
    assert copy.state.history is not cm.state.history
    assert copy.state.history[0] is cm.state.history[0]
    with pytest.raises(ValidationError):
        copy.state.history[0].answer = "changed"  # type: ignore[misc]
    assert isinstance(cm.state.history[0].knowledge_references, tuple)


def test_clone_context_changes_are_seen_by_both(make_request):
    cm = ChatManage.start(make_request())
    copy = cm.clone()
    copy.context.extras["seen"] = True
    assert cm.context.extras == {"seen": True}


def test_request_is_immutable(make_request):
    cm = ChatManage.start(make_request())
    with pytest.raises(ValidationError):
        cm.request.query = "other"  # type: ignore[misc]


def test_dump_and_load_round_trip(make_request):
    request = make_request(
        knowledge_base_ids=("kb1", "kb2"),
        search_targets=(SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id="kb1", knowledge_ids=("d1",)),),
        citation_enabled=False,
        web_search_enabled=True,
        images=("img",),
        max_rounds=2,
    )
    cm = ChatManage(request, rich_state(), PipelineContext(session_id="ctx"))
    raw = cm.dump_json()
    context = PipelineContext(session_id="other")
    loaded = ChatManage.load_json(raw, context)
    assert loaded.request == cm.request
    assert loaded.state == cm.state
    assert loaded.context is context
    assert loaded.dump_json() == raw


def test_load_json_accepts_bytes_and_builds_fresh_context(make_request):
    cm = ChatManage.start(make_request())
    loaded = ChatManage.load_json(cm.dump_json().encode())
    assert loaded.request == cm.request
    assert loaded.state == cm.state
    assert loaded.context is not cm.context
    assert loaded.context.event_bus is None


def test_context_is_not_serialised(make_request):
    cm = ChatManage(make_request(), PipelineState(), PipelineContext(session_id="secret-ctx", extras={"k": "v"}))
    raw = cm.dump_json()
    assert "secret-ctx" not in raw
    assert set(json.loads(raw)) == {"request", "state"}


def test_final_results_prefers_latest_non_empty(make_request):
    cm = ChatManage(make_request(), rich_state())
    assert [r.id for r in cm.final_results()] == ["m1"]
    cm.state.merge_result = []
    assert [r.id for r in cm.final_results()] == ["r1"]
    cm.state.rerank_result = []
    assert [r.id for r in cm.final_results()] == ["s1"]
    cm.state.search_result = []
    assert cm.final_results() == []


def test_citations_on_defaults_to_enabled(make_request):
    assert make_request().citations_on
    assert make_request(citation_enabled=True).citations_on
    assert not make_request(citation_enabled=False).citations_on


def test_context_cancelled():
    from ragline.event.cancel import CancelToken

    assert not PipelineContext().cancelled()
    token = CancelToken()
    context = PipelineContext(cancel=token)
    assert not context.cancelled()
    token.cancel()
    assert context.cancelled()
