import pytest

from ragline.reranking.base import RankResult
from ragline.reranking.config import RerankConfig
from ragline.reranking.scoring import (
    RerankOutcome,
    apply_threshold,
    composite_score,
    pre_boost_score,
    rank_key,
    score_result,
)
from ragline.types import ChunkType, MatchType, SearchResult

CONFIG = RerankConfig()


def scores(*values: float) -> list[RankResult]:
    return [RankResult(i, v) for i, v in enumerate(values)]


# threshold, model scores, explicit scope → outcome, kept indices, effective threshold
THRESHOLD_CASES = [
    ("some pass", 0.3, (0.9, 0.31, 0.3, 0.1), False, RerankOutcome.OK, [0, 1, 2], 0.3),
    ("at threshold passes", 0.5, (0.5,), False, RerankOutcome.OK, [0], 0.5),
    ("degraded to 0.7t", 0.6, (0.43, 0.41), False, RerankOutcome.THRESHOLD_DEGRADED, [0], pytest.approx(0.42)),
    ("degraded to the floor", 0.35, (0.3, 0.29), False, RerankOutcome.THRESHOLD_DEGRADED, [0], 0.3),
    ("no degrade at the floor", 0.3, (0.2, 0.25), False, RerankOutcome.FALLBACK_TOP1, [1], 0.3),
    ("no degrade below the floor", 0.2, (0.16,), False, RerankOutcome.FALLBACK_TOP1, [0], 0.2),
    ("fallback keeps the best, unsorted input", 0.9, (0.2, 0.25, 0.1), False, RerankOutcome.FALLBACK_TOP1, [1], 0.63),
    ("fallback needs 0.15", 0.5, (0.149, 0.1), False, RerankOutcome.ALL_BELOW_THRESHOLD, [], 0.35),
    ("fallback at exactly 0.15", 0.5, (0.15,), False, RerankOutcome.FALLBACK_TOP1, [0], 0.35),
    ("explicit scope keeps top-1", 0.5, (0.01, 0.02), True, RerankOutcome.FALLBACK_TOP1, [1], 0.35),
    ("explicit scope with negative logits", 0.5, (-3.0, -1.5), True, RerankOutcome.FALLBACK_TOP1, [1], 0.35),
    ("no scores", 0.3, (), False, RerankOutcome.ALL_BELOW_THRESHOLD, [], 0.3),
    ("no scores explicit scope", 0.3, (), True, RerankOutcome.ALL_BELOW_THRESHOLD, [], 0.3),
]


@pytest.mark.parametrize(
    ("threshold", "model_scores", "explicit", "outcome", "kept", "effective"),
    [case[1:] for case in THRESHOLD_CASES],
    ids=[case[0] for case in THRESHOLD_CASES],
)
def test_apply_threshold(threshold, model_scores, explicit, outcome, kept, effective):
    decision = apply_threshold(scores(*model_scores), threshold, explicit, CONFIG)
    assert decision.outcome == outcome
    assert [s.index for s in decision.passing] == kept
    assert decision.effective_threshold == effective


def test_outcomes_that_keep_retrieval_results():
    keeps = {o for o in RerankOutcome if o.keeps_retrieval_results}
    assert keeps == {
        RerankOutcome.NO_CANDIDATES,
        RerankOutcome.NO_MODEL,
        RerankOutcome.MODEL_UNAVAILABLE,
        RerankOutcome.MODEL_ERROR,
    }


@pytest.mark.parametrize(
    ("fields", "model", "expected"),
    [
        ({"score": 0.5}, 0.8, 0.6 * 0.8 + 0.3 * 0.5 + 0.1),
        ({"score": 0.5, "knowledge_source": "web_search"}, 0.8, 0.6 * 0.8 + 0.3 * 0.5 + 0.1 * 0.95),
        ({"score": 0.5, "match_type": MatchType.WEB_SEARCH}, 0.8, 0.6 * 0.8 + 0.3 * 0.5 + 0.1 * 0.95),
        ({"score": 0.0, "match_type": MatchType.GRAPH}, 0.8, 0.6 * 0.8 + 0.3 * 0.8 + 0.1),
        ({"score": 3.0}, 1.0, 1.0),
        ({"score": 0.0}, -5.0, 0.0),
    ],
    ids=["document", "web source", "web match", "graph uses model as base", "clamped high", "clamped low"],
)
def test_composite_score(fields, model, expected):
    assert composite_score(SearchResult(id="x", content="c", **fields), model, CONFIG) == pytest.approx(expected)


def test_score_result_records_metadata_and_leaves_input_alone():
    original = SearchResult(id="x", content="c", score=0.5, metadata={"k": "v"})
    scored, pre_boost = score_result(original, 0.8, None, CONFIG)
    assert scored.metadata == {"k": "v", "base_score": "0.5000", "model_score": "0.8000", "composite_score": "0.7300"}
    assert scored.score == pytest.approx(0.73) == pre_boost
    assert original.score == 0.5
    assert original.metadata == {"k": "v"}


def test_graph_hit_base_score_is_the_model_score():
    graph = SearchResult(id="g", content="c", score=0.0, match_type=MatchType.GRAPH)
    scored, _ = score_result(graph, 0.7, None, CONFIG)
    assert scored.metadata["base_score"] == "0.7000"


def faq(score: float = 0.5) -> SearchResult:
    return SearchResult(id="f", content="Q: a\nA: b", score=score, chunk_type=ChunkType.FAQ)


def test_faq_boost_marks_and_caps():
    scored, pre_boost = score_result(faq(), 0.8, 1.2, CONFIG)
    assert scored.metadata["faq_boosted"] == "true"
    assert scored.metadata["faq_original_score"] == "0.7300"
    assert scored.score == pytest.approx(0.73 * 1.2)
    assert pre_boost == pytest.approx(0.73)
    capped, _ = score_result(faq(1.0), 1.0, 1.5, CONFIG)
    assert capped.score == 1.0
    assert pre_boost_score(capped) == 1.0


@pytest.mark.parametrize("boost", [None, 1.0, 0.8])
def test_no_faq_boost_when_off_or_not_above_one(boost):
    scored, _ = score_result(faq(), 0.8, boost, CONFIG)
    assert "faq_boosted" not in scored.metadata
    assert scored.score == pytest.approx(0.73)


def test_faq_boost_only_touches_faq_entries():
    scored, _ = score_result(SearchResult(id="t", content="c", score=0.5), 0.8, 1.5, CONFIG)
    assert "faq_boosted" not in scored.metadata


def test_capped_faq_ties_broken_by_pre_boost_score():
    weaker, _ = score_result(faq(0.6), 0.9, 2.0, CONFIG)
    stronger, _ = score_result(faq(0.9), 0.95, 2.0, CONFIG)
    assert weaker.score == stronger.score == 1.0
    ranked = sorted([(weaker, pre_boost_score(weaker)), (stronger, pre_boost_score(stronger))], key=rank_key)
    assert [r.metadata["base_score"] for r, _ in ranked] == ["0.9000", "0.6000"]


def test_pre_boost_score_of_an_unranked_result_is_its_score():
    assert pre_boost_score(SearchResult(id="x", content="c", score=0.42)) == 0.42
    assert pre_boost_score(SearchResult(id="x", content="c", score=0.42, metadata={"composite_score": "?"})) == 0.42
