import threading

import numpy as np
import pytest

from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.config import RetrievalConfig
from ragline.retrieval.hybrid import fuse, hybrid_search, normalize_keyword_scores, pool_size
from ragline.types import MatchType, SearchResult

CONFIG = RetrievalConfig(fusion="rrf")  # the arithmetic below is the seed's RRF; score fusion is tested after it
K, WV, WK = 60, 0.7, 0.3


def hit(id: str, score: float, **kwargs) -> SearchResult:
    return SearchResult(id=id, content=f"content of {id}", score=score, **kwargs)


def rrf(rv: int | None, rk: int | None) -> float:
    raw = (WV / (K + rv) if rv else 0.0) + (WK / (K + rk) if rk else 0.0)
    return raw / ((WV + WK) / (K + 1))


def test_config_defaults_are_the_seeds():
    assert CONFIG.rrf_k == 60
    assert CONFIG.vector_weight == 0.7
    assert CONFIG.keyword_weight == 0.3
    assert CONFIG.default_match_count == 50


@pytest.mark.parametrize(
    ("match_count", "kbs", "expected"),
    [
        (10, 1, 50),  # max(50, 50)
        (9, 1, 50),  # max(45, 50)
        (11, 1, 55),
        (20, 1, 100),
        (20, 3, 300),
        (20, 6, 500),  # capped
        (100, 1, 500),
        (200, 1, 500),
        (0, 1, 250),  # MatchCount <= 0 means 50 → 250
        (-5, 1, 250),
        (0, 2, 500),
        (1, 4, 200),
    ],
)
def test_pool_size(match_count, kbs, expected):
    assert pool_size(match_count, kbs, CONFIG) == expected
    if match_count > 0:
        assert expected == min(max(match_count * 5, 50) * kbs, 500)


def test_normalize_keyword_scores_divides_by_max():
    hits = [hit("a", 8.0), hit("b", 2.0), hit("c", 4.0)]
    normalised = normalize_keyword_scores(hits)
    assert [h.score for h in normalised] == [1.0, 0.25, 0.5]
    assert [h.score for h in hits] == [8.0, 2.0, 4.0]  # inputs untouched
    # FTS5's clamped BM25 in a tiny knowledge base: still a [0, 1] scale with the best at 1.
    small = [hit("a", 2e-6), hit("b", 1e-6)]
    assert [h.score for h in normalize_keyword_scores(small)] == [1.0, 0.5]
    exactly_one = [hit("a", 1.0), hit("b", 0.5)]
    assert [h.score for h in normalize_keyword_scores(exactly_one)] == [1.0, 0.5]
    assert normalize_keyword_scores([]) == []


def test_fuse_single_list_dedups_keeping_max_score():
    vector = [hit("a", 0.5), hit("b", 0.9), hit("a", 0.7), hit("c", 0.7)]
    fused = fuse(vector, [], CONFIG)
    assert [(h.id, h.score) for h in fused] == [("b", 0.9), ("a", 0.7), ("c", 0.7)]
    keyword_only = fuse([], [hit("x", 0.2), hit("x", 0.6), hit("y", 0.4)], CONFIG)
    assert [(h.id, h.score) for h in keyword_only] == [("x", 0.6), ("y", 0.4)]
    assert fuse([], [], CONFIG) == []


def test_fuse_first_in_both_lists_scores_exactly_one():
    fused = fuse([hit("a", 0.9), hit("b", 0.8)], [hit("a", 0.5), hit("c", 0.4)], CONFIG)
    assert fused[0].id == "a"
    assert fused[0].score == pytest.approx(1.0, abs=1e-12)
    assert fused[0].match_type == MatchType.HYBRID


def test_fuse_weighted_rrf_arithmetic():
    vector = [hit("a", 0.9), hit("b", 0.8), hit("c", 0.7), hit("d", 0.6)]
    keyword = [hit("c", 0.95), hit("e", 0.5), hit("a", 0.3)]
    fused = {h.id: h for h in fuse(vector, keyword, CONFIG)}
    expected = {
        "a": rrf(1, 3),
        "b": rrf(2, None),
        "c": rrf(3, 1),
        "d": rrf(4, None),
        "e": rrf(None, 2),
    }
    assert set(fused) == set(expected)
    for chunk_id, score in expected.items():
        assert fused[chunk_id].score == pytest.approx(score, rel=1e-12)
    # explicit numbers for two of them
    assert fused["b"].score == pytest.approx((0.7 / 62) / (1.0 / 61))
    assert fused["e"].score == pytest.approx((0.3 / 62) / (1.0 / 61))
    assert fused["a"].match_type == MatchType.HYBRID
    assert fused["b"].match_type == MatchType.EMBEDDING
    assert fused["e"].match_type == MatchType.KEYWORD
    assert fused["a"].vector_score == 0.9
    assert fused["a"].keyword_score == 0.3
    assert fused["b"].keyword_score is None
    assert fused["e"].vector_score is None


def test_fuse_output_sorted_by_score_then_id():
    vector = [hit("z", 0.9), hit("y", 0.8)]
    keyword = [hit("y", 0.9), hit("z", 0.8)]
    fused = fuse(vector, keyword, CONFIG)
    # z: 0.7/61 + 0.3/62 ; y: 0.7/62 + 0.3/61 → z first
    assert [h.id for h in fused] == ["z", "y"]
    assert fused[0].score == pytest.approx(rrf(1, 2))
    ties = fuse([hit("b", 0.9), hit("a", 0.9)], [hit("a", 0.9), hit("b", 0.9)], CONFIG)
    # b: rv=1, rk=2 ; a: rv=2, rk=1 → b wins on the heavier vector weight
    assert [h.id for h in ties] == ["b", "a"]
    assert ties[0].score > ties[1].score


def test_fuse_rank_is_best_rank_in_a_list():
    vector = [hit("a", 0.9), hit("b", 0.8), hit("a", 0.95)]
    keyword = [hit("b", 0.7), hit("b", 0.6), hit("a", 0.5)]
    fused = {h.id: h for h in fuse(vector, keyword, CONFIG)}
    assert fused["a"].score == pytest.approx(rrf(1, 3))
    assert fused["b"].score == pytest.approx(rrf(2, 1))
    assert fused["a"].vector_score == 0.95  # best score kept
    assert fused["b"].keyword_score == 0.7
    assert len(fuse(vector, keyword, CONFIG)) == 2


def test_fuse_scores_are_within_unit_interval():
    vector = [hit(f"v{i}", 1 - i / 100) for i in range(50)]
    keyword = [hit(f"v{i * 2}", 5 - i / 10) for i in range(30)]
    for result in fuse(vector, keyword, CONFIG):
        assert 0 < result.score <= 1.0 + 1e-12


class FakeEngine:
    def __init__(self, vector: list[SearchResult], keyword: list[SearchResult]) -> None:
        self.vector = vector
        self.keyword = keyword
        self.calls: list[tuple[str, int]] = []

    def vector_search(self, params, top_k):
        self.calls.append(("vector", top_k))
        return [h.model_copy() for h in self.vector[:top_k]]

    def keyword_search(self, params, top_k):
        self.calls.append(("keyword", top_k))
        return [h.model_copy() for h in self.keyword[:top_k]]

    def index_chunks(self, *args):  # pragma: no cover - not used
        raise NotImplementedError


def params(**kwargs) -> RetrieveParams:
    values = {
        "query": "what is ragline",
        "knowledge_base_ids": ["kb1"],
        "query_embedding": np.zeros(3, dtype=np.float32),
        "match_count": 10,
        "vector_threshold": 0.5,
        "keyword_threshold": 0.3,
    }
    values.update(kwargs)
    return RetrieveParams(**values)


def test_hybrid_search_applies_thresholds_and_fuses():
    engine = FakeEngine(
        vector=[hit("a", 0.9), hit("b", 0.6), hit("c", 0.4)],  # c below the vector threshold
        keyword=[hit("b", 10.0), hit("d", 5.0), hit("e", 2.0)],  # normalised: 1.0, 0.5, 0.2 (e dropped)
    )
    results = hybrid_search(engine, params(), CONFIG)
    by_id = {r.id: r for r in results}
    assert set(by_id) == {"a", "b", "d"}
    assert engine.calls == [("vector", 50), ("keyword", 50)]
    assert by_id["b"].score == pytest.approx(rrf(2, 1))
    assert by_id["a"].score == pytest.approx(rrf(1, None))
    assert by_id["d"].score == pytest.approx(rrf(None, 2))
    assert by_id["d"].keyword_score == pytest.approx(0.5)
    assert by_id["b"].vector_score == pytest.approx(0.6)
    assert [r.id for r in results] == ["b", "a", "d"]


def test_hybrid_search_truncates_to_match_count():
    engine = FakeEngine(
        vector=[hit(f"v{i:03d}", 0.99 - i / 1000) for i in range(300)],
        keyword=[hit(f"v{i:03d}", 30 - i / 100) for i in range(0, 300, 3)],
    )
    results = hybrid_search(engine, params(match_count=7, knowledge_base_ids=["kb1", "kb2"]), CONFIG)
    assert len(results) == 7
    assert engine.calls == [("vector", 100), ("keyword", 100)]
    assert results[0].id == "v000"
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)


def test_hybrid_search_default_match_count():
    engine = FakeEngine(vector=[hit(f"v{i:03d}", 0.9) for i in range(80)], keyword=[])
    results = hybrid_search(engine, params(match_count=0, vector_threshold=0.0), CONFIG)
    assert len(results) == 50
    assert engine.calls == [("vector", 250), ("keyword", 250)]


def test_hybrid_search_vector_only_when_no_embedding():
    engine = FakeEngine(vector=[hit("a", 0.9)], keyword=[hit("k", 3.0), hit("j", 1.5)])
    results = hybrid_search(engine, params(query_embedding=None), CONFIG)
    assert engine.calls == [("keyword", 50)]
    assert [(r.id, r.score, r.match_type) for r in results] == [
        ("k", 1.0, MatchType.KEYWORD),
        ("j", 0.5, MatchType.KEYWORD),
    ]


def test_hybrid_search_keyword_disabled_or_blank_query():
    engine = FakeEngine(vector=[hit("a", 0.9), hit("b", 0.7)], keyword=[hit("k", 3.0)])
    results = hybrid_search(engine, params(keyword_enabled=False), CONFIG)
    assert [(r.id, r.score, r.match_type) for r in results] == [
        ("a", 0.9, MatchType.EMBEDDING),
        ("b", 0.7, MatchType.EMBEDDING),
    ]
    blank = FakeEngine(vector=[hit("a", 0.9)], keyword=[hit("k", 3.0)])
    assert [r.id for r in hybrid_search(blank, params(query="   "), CONFIG)] == ["a"]
    assert blank.calls == [("vector", 50)]


def test_hybrid_search_nothing_above_thresholds():
    engine = FakeEngine(vector=[hit("a", 0.1)], keyword=[])
    assert hybrid_search(engine, params(), CONFIG) == []


def test_the_keyword_threshold_is_relative_to_the_best_keyword_hit():
    """Raw BM25 has no absolute scale (FTS5's is ~1e-6 in a one-document knowledge base): the best keyword
    hit always counts, weaker ones from 0.3 of it on."""
    engine = FakeEngine(vector=[], keyword=[hit("k", 1e-6), hit("weak", 2e-7)])
    assert [r.id for r in hybrid_search(engine, params(), CONFIG)] == ["k"]


def test_score_fusion_weights_max_normalised_scores():
    config = RetrievalConfig(fusion="score", score_vector_weight=0.5, score_keyword_weight=0.5)
    vector = [hit("a", 0.8), hit("b", 0.4)]
    keyword = [hit("b", 10.0), hit("c", 5.0)]
    fused = {h.id: h for h in fuse(vector, keyword, config)}
    assert fused["a"].score == 0.5 * (0.8 / 0.8)
    assert fused["b"].score == 0.5 * (0.4 / 0.8) + 0.5 * (10.0 / 10.0)
    assert fused["c"].score == 0.5 * (5.0 / 10.0)
    assert fused["b"].match_type == "hybrid"
    assert fused["a"].match_type == "embedding"
    assert fused["c"].match_type == "keyword"
    assert fused["b"].vector_score == 0.4
    assert fused["b"].keyword_score == 10.0
    assert [h.id for h in fuse(vector, keyword, config)] == ["b", "a", "c"]


def test_score_fusion_top_of_both_lists_scores_one_and_duplicates_take_the_best():
    config = RetrievalConfig(fusion="score", score_vector_weight=0.7, score_keyword_weight=0.3)
    fused = fuse([hit("a", 0.9), hit("a", 0.5)], [hit("a", 3.0), hit("z", 1.0)], config)
    assert fused[0].id == "a"
    assert fused[0].score == 1.0


def test_default_fusion_is_score():
    assert RetrievalConfig().fusion == "score"


def test_the_keyword_search_runs_while_the_query_vector_is_computed():
    keyword_started = threading.Event()

    class WatchedEngine(FakeEngine):
        def keyword_search(self, params, top_k):
            keyword_started.set()
            return super().keyword_search(params, top_k)

    engine = WatchedEngine(vector=[hit("a", 0.9)], keyword=[hit("b", 10.0)])

    def embedding():
        # Only returns once the keyword search has begun: run one after the other, this would time out.
        assert keyword_started.wait(timeout=30)
        return np.ones(3, dtype=np.float32)

    results = hybrid_search(engine, params(query_embedding=None), CONFIG, query_embedding=embedding)
    assert {r.id for r in results} == {"a", "b"}


def test_score_fusion_measures_cosines_from_the_knowledge_bases_background():
    """A model whose cosines all sit near 0.8 (multilingual e5) gives every hit ~1 when divided by the best;
    measured from the query's mean cosine with the knowledge base, its list keeps how far apart hits are."""
    config = RetrievalConfig(fusion="score")
    assert config.score_normalization == "background"
    vector = [hit("a", 0.90), hit("b", 0.86), hit("c", 0.84), hit("low", 0.80)]
    keyword = [hit("c", 10.0), hit("b", 9.5)]
    fused = {h.id: h.score for h in fuse(vector, keyword, config, vector_background=0.82)}
    assert fused["a"] == pytest.approx(0.5 * 1.0)
    assert fused["b"] == pytest.approx(0.5 * (0.04 / 0.08) + 0.5 * 0.95)
    assert fused["c"] == pytest.approx(0.5 * (0.02 / 0.08) + 0.5 * 1.0)
    assert fused["low"] == 0.0  # below the background: no vote
    # Without a background (an engine that cannot tell), cosines are divided by the best, as "max" does.
    plain = {h.id: h.score for h in fuse(vector, keyword, config)}
    maxed = {h.id: h.score for h in fuse(vector, keyword, RetrievalConfig(fusion="score", score_normalization="max"))}
    assert plain == maxed
    assert plain["c"] == pytest.approx(0.5 * (0.84 / 0.90) + 0.5 * 1.0)


class BackgroundEngine(FakeEngine):
    def __init__(self, vector, keyword, background):
        super().__init__(vector, keyword)
        self.background = background

    def vector_background(self, params):
        self.calls.append(("background", 0))
        return self.background


def test_hybrid_search_asks_the_engine_for_the_background_only_when_score_fusion_uses_it():
    vector, keyword = [hit("a", 0.90), hit("b", 0.86)], [hit("b", 10.0), hit("c", 9.0)]
    engine = BackgroundEngine(vector, keyword, 0.82)
    results = {r.id: r.score for r in hybrid_search(engine, params(), RetrievalConfig())}
    assert ("background", 0) in engine.calls
    assert results["b"] == pytest.approx(0.5 * (0.04 / 0.08) + 0.5 * 1.0)
    for config in (RetrievalConfig(score_normalization="max"), RetrievalConfig(fusion="rrf")):
        engine = BackgroundEngine(vector, keyword, 0.82)
        hybrid_search(engine, params(), config)
        assert ("background", 0) not in engine.calls
    # An engine without the measure (OpenSearch) fuses as "max".
    plain = {r.id: r.score for r in hybrid_search(FakeEngine(vector, keyword), params(), RetrievalConfig())}
    assert plain["b"] == pytest.approx(0.5 * (0.86 / 0.90) + 0.5 * 1.0)
