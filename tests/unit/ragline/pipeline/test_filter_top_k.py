import asyncio
import random

from ragline.pipeline.filter_top_k import PluginFilterTopK
from ragline.pipeline.plugin import EventManager
from ragline.types import ChatManage, EventType, SearchResult
from ragline.types.search import deterministic_key, sort_deterministically


def r(id: str, score: float, knowledge_id: str = "k", chunk_type: str = "text", chunk_index: int = 0) -> SearchResult:
    return SearchResult(
        id=id, content=id, score=score, knowledge_id=knowledge_id, chunk_type=chunk_type, chunk_index=chunk_index
    )


def test_sort_by_score_descending():
    results = [r("a", 0.1), r("b", 0.9), r("c", 0.5)]
    assert [x.id for x in sort_deterministically(results)] == ["b", "c", "a"]


def test_ties_broken_by_knowledge_id_chunk_type_chunk_index_then_id():
    results = [
        r("z", 0.5, "k2", "text", 0),
        r("y", 0.5, "k1", "text", 3),
        r("x", 0.5, "k1", "faq", 9),
        r("w", 0.5, "k1", "text", 1),
        r("v2", 0.5, "k1", "text", 1),
        r("v1", 0.5, "k1", "text", 1),
        r("top", 0.7, "k9", "text", 99),
    ]
    ordered = [x.id for x in sort_deterministically(results)]
    assert ordered == ["top", "x", "v1", "v2", "w", "y", "z"]


def test_chunk_index_compares_numerically():
    results = [r("a", 0.5, chunk_index=10), r("b", 0.5, chunk_index=9), r("c", 0.5, chunk_index=100)]
    assert [x.id for x in sort_deterministically(results)] == ["b", "a", "c"]


def test_order_is_independent_of_input_order():
    rng = random.Random(3)
    results = [
        r(
            f"id{i}",
            rng.choice([0.1, 0.5, 0.9]),
            rng.choice(["k1", "k2"]),
            rng.choice(["text", "faq"]),
            rng.randint(0, 3),
        )
        for i in range(40)
    ]
    expected = sort_deterministically(results)
    for _ in range(10):
        shuffled = results[:]
        rng.shuffle(shuffled)
        assert [x.id for x in sort_deterministically(shuffled)] == [x.id for x in expected]
    keys = [deterministic_key(x) for x in expected]
    assert keys == sorted(keys)


def make_cm(make_request, top_k: int, **state) -> ChatManage:
    cm = ChatManage.start(make_request(rerank_top_k=top_k))
    for name, value in state.items():
        setattr(cm.state, name, value)
    return cm


def run_filter(cm: ChatManage):
    manager = EventManager()
    manager.register(PluginFilterTopK())
    reached = []

    class Tail:
        def activation_events(self):
            return [EventType.FILTER_TOP_K]

        async def on_event(self, event_type, cm, next):
            reached.append(True)
            return await next()

    manager.register(Tail())
    error = asyncio.run(manager.trigger(EventType.FILTER_TOP_K, cm))
    return error, reached


def test_plugin_cuts_merge_result_and_leaves_others(make_request):
    search = [r(f"s{i}", i / 10) for i in range(5)]
    rerank = [r(f"r{i}", i / 10) for i in range(5)]
    merge = [r("m1", 0.2), r("m2", 0.9), r("m3", 0.5), r("m4", 0.9, knowledge_id="a")]
    cm = make_cm(make_request, 2, search_result=search, rerank_result=rerank, merge_result=merge)
    error, reached = run_filter(cm)
    assert error is None
    assert reached == [True]  # next() was called
    assert [x.id for x in cm.state.merge_result] == ["m4", "m2"]
    assert [x.id for x in cm.state.rerank_result] == [f"r{i}" for i in range(5)]
    assert [x.id for x in cm.state.search_result] == [f"s{i}" for i in range(5)]


def test_plugin_cuts_rerank_when_merge_empty(make_request):
    search = [r(f"s{i}", i / 10) for i in range(5)]
    rerank = [r(f"r{i}", i / 10) for i in range(5)]
    cm = make_cm(make_request, 3, search_result=search, rerank_result=rerank)
    run_filter(cm)
    assert [x.id for x in cm.state.rerank_result] == ["r4", "r3", "r2"]
    assert len(cm.state.search_result) == 5
    assert cm.state.merge_result == []


def test_plugin_cuts_search_when_only_search(make_request):
    cm = make_cm(make_request, 2, search_result=[r("a", 0.1), r("b", 0.3), r("c", 0.2)])
    run_filter(cm)
    assert [x.id for x in cm.state.search_result] == ["b", "c"]


def test_plugin_top_k_at_least_one(make_request):
    cm = make_cm(make_request, 0, search_result=[r("a", 0.1), r("b", 0.3)])
    run_filter(cm)
    assert [x.id for x in cm.state.search_result] == ["b"]


def test_plugin_sorts_even_when_under_top_k(make_request):
    cm = make_cm(make_request, 30, rerank_result=[r("a", 0.1), r("b", 0.3)])
    run_filter(cm)
    assert [x.id for x in cm.state.rerank_result] == ["b", "a"]


def test_plugin_with_nothing_to_filter_calls_next(make_request):
    cm = make_cm(make_request, 5)
    error, reached = run_filter(cm)
    assert error is None
    assert reached == [True]
    assert cm.final_results() == []


def test_images_rerank_kept_take_no_place_and_follow():
    from ragline.pipeline.filter_top_k import top

    kept = r("img", 0.05, chunk_type="image_ocr")
    kept.metadata["kept_by"] = "image_vector"
    results = [r("a", 0.9), kept, r("b", 0.8), r("c", 0.7)]
    assert [x.id for x in top(results, 2)] == ["a", "b", "img"]
