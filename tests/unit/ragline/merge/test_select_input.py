from ragline.merge.select import select_input
from ragline.types import MatchType


def test_rerank_result_wins_and_is_copied(make_result):
    rerank = [make_result("r1", score=0.2), make_result("r2", score=0.9)]
    search = [make_result("s1", score=1.0)]
    selected = select_input(rerank, search, rerank_top_k=1)
    assert [r.id for r in selected] == ["r1", "r2"]  # rerank order and size as they are
    selected[0].content = "edited"
    selected[0].sub_chunk_id.append("x")
    assert rerank[0].content == "content of r1"
    assert rerank[0].sub_chunk_id == []


def test_search_result_is_sorted_by_score_and_cut_to_rerank_top_k(make_result):
    search = [make_result(f"s{i}", score=i / 10) for i in range(6)]
    selected = select_input([], search, rerank_top_k=3)
    assert [r.id for r in selected] == ["s5", "s4", "s3"]
    assert selected[0] is not search[5]


def test_graph_hits_below_the_cut_are_kept(make_result):
    search = [
        make_result("a", score=0.9),
        make_result("g1", score=0.0, match_type=MatchType.GRAPH),
        make_result("b", score=0.8),
        make_result("c", score=0.7),
        make_result("g2", score=0.0, match_type=MatchType.GRAPH),
    ]
    assert [r.id for r in select_input([], search, rerank_top_k=2)] == ["a", "b", "g1", "g2"]


def test_top_k_is_at_least_one_and_ties_keep_input_order(make_result):
    search = [make_result("x", score=0.5), make_result("y", score=0.5)]
    assert [r.id for r in select_input([], search, rerank_top_k=0)] == ["x"]
    assert [r.id for r in select_input([], search, rerank_top_k=5)] == ["x", "y"]
    assert select_input([], [], rerank_top_k=5) == []
