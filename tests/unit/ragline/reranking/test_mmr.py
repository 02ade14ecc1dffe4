import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.reranking.mmr import jaccard, select_mmr, select_mmr_tokens
from ragline.reranking.passages import enriched_passage
from ragline.text.segmentation import tokenize_simple
from ragline.types import SearchResult

WORDS = ["refund", "policy", "seven", "days", "shipping", "cost", "order", "return", "label", "store"]
HAN = ["退款", "政策", "七天", "运费"]


def naive_mmr(candidates: list[SearchResult], k: int, lambda_: float) -> list[int]:
    """The textbook O(n²k) MMR: recompute every redundancy against every selected item each round."""
    tokens = [tokenize_simple(enriched_passage(c)) for c in candidates]
    selected: list[int] = []
    while len(selected) < min(k, len(candidates)):
        best, best_value = -1, float("-inf")
        for i, candidate in enumerate(candidates):
            if i in selected:
                continue
            redundancy = max((jaccard(tokens[i], tokens[j]) for j in selected), default=0.0)
            value = lambda_ * candidate.score - (1 - lambda_) * redundancy
            if value > best_value:
                best, best_value = i, value
        selected.append(best)
    return selected


def random_candidates(rng: random.Random) -> list[SearchResult]:
    count = rng.randint(1, 25)
    vocabulary = WORDS + (HAN if rng.random() < 0.3 else [])
    # Few distinct scores, so ties are common and the tie rule is exercised.
    scores = sorted((rng.choice([0.2, 0.5, 0.5, 0.8, 0.9, rng.random()]) for _ in range(count)), reverse=True)
    candidates = []
    for i, score in enumerate(scores):
        words = rng.choices(vocabulary, k=rng.randint(0, 8))
        content = " ".join(words) if rng.random() > 0.05 else "!!"  # a few passages with no token at all
        candidates.append(SearchResult(id=f"c{i}", content=content, score=score))
    return candidates


@settings(max_examples=400)
@given(rng=st.randoms(use_true_random=False))
def test_matches_naive_mmr(rng):
    candidates = random_candidates(rng)
    k = rng.randint(1, len(candidates) + 2)
    lambda_ = rng.choice([0.7, 0.7, 0.5, 0.0, 1.0, round(rng.random(), 3)])
    assert select_mmr(candidates, k, lambda_) == naive_mmr(candidates, k, lambda_)


def test_jaccard():
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, {"a"}) == 1.0


def test_redundant_copy_loses_to_a_distinct_passage():
    candidates = [
        SearchResult(id="a", content="refund policy seven days", score=0.9),
        SearchResult(id="b", content="refund policy seven days", score=0.85),
        SearchResult(id="c", content="shipping cost store", score=0.7),
    ]
    assert select_mmr(candidates, 2) == [0, 2]


def test_ties_go_to_the_earlier_candidate():
    candidates = [SearchResult(id=str(i), content=f"word{i} unique{i}", score=0.5) for i in range(4)]
    assert select_mmr(candidates, 4) == [0, 1, 2, 3]
    assert select_mmr(candidates, 1) == [0]


def test_k_one_uses_relevance_only_and_skips_tokenising():
    calls: list[str] = []

    def passage(result: SearchResult) -> str:
        calls.append(result.id)
        return result.content

    candidates = [SearchResult(id="a", content="x", score=0.2), SearchResult(id="b", content="y", score=0.6)]
    assert select_mmr(candidates, 1, passage=passage) == [1]
    assert calls == []


def test_empty_and_non_positive_k():
    assert select_mmr([], 3) == []
    assert select_mmr([SearchResult(id="a", content="x")], 0) == []
    assert select_mmr_tokens([], [], 3, 0.7) == []


def test_k_larger_than_candidates_selects_all():
    candidates = [SearchResult(id=str(i), content=f"t{i}", score=1 - i / 10) for i in range(3)]
    assert sorted(select_mmr(candidates, 10)) == [0, 1, 2]
