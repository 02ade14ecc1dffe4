"""The reference's FAQ iteration: when FAQ answers come first and negative questions ruled entries out of a
full list, the search goes deeper until enough answers are left, the list runs dry or the pool cap is hit."""

from __future__ import annotations

from ragline.pipeline.chunk_search import FAQ_SEARCH_ROUNDS, search_past_negative_faq
from ragline.retrieval.base import RetrieveParams
from ragline.retrieval.config import RetrievalConfig
from ragline.types import ChunkType, SearchResult

ASKED = "How do I reset my router?"


def _entry(i: int, negative: bool) -> SearchResult:
    return SearchResult(
        id=f"faq-{i}",
        content=f"Q: entry {i}",
        score=1.0 - i / 10_000,
        chunk_type=ChunkType.FAQ,
        chunk_metadata={"negative_questions": [ASKED] if negative else []},
    )


class Index:
    """Ranked FAQ entries: the first ``negatives`` list the asked question as a negative one."""

    def __init__(self, size: int, negatives: int) -> None:
        self.entries = [_entry(i, i < negatives) for i in range(size)]
        self.depths: list[int] = []

    def search(self, params: RetrieveParams) -> list[SearchResult]:
        self.depths.append(params.match_count)
        return self.entries[: params.match_count]


def _params(match_count: int = 10) -> RetrieveParams:
    return RetrieveParams(query=ASKED, knowledge_base_ids=["kb"], match_count=match_count)


def test_entries_ruled_out_are_replaced_by_deeper_ones():
    index = Index(size=200, negatives=15)
    found = search_past_negative_faq(index.search, _params(10), RetrievalConfig(), [ASKED], deepen=True)
    assert [r.id for r in found] == [f"faq-{i}" for i in range(15, 25)]
    assert index.depths == [10, 30]  # the first deeper round asks for three times the count wanted


def test_without_faq_priority_the_list_stays_short():
    index = Index(size=200, negatives=25)
    assert search_past_negative_faq(index.search, _params(10), RetrievalConfig(), [ASKED], deepen=False) == []
    assert index.depths == [10]


def test_depth_doubles_and_stops_when_the_list_runs_dry():
    index = Index(size=70, negatives=65)
    found = search_past_negative_faq(index.search, _params(10), RetrievalConfig(), [ASKED], deepen=True)
    assert [r.id for r in found] == [f"faq-{i}" for i in range(65, 70)]
    assert index.depths == [10, 30, 60, 120]  # 120 came back with 70: nothing deeper to find


def test_rounds_and_depth_are_bounded():
    index = Index(size=10_000, negatives=10_000)
    config = RetrievalConfig(max_pool_size=500)
    assert search_past_negative_faq(index.search, _params(10), config, [ASKED], deepen=True) == []
    assert index.depths == [10, 30, 60, 120, 240, 480][: FAQ_SEARCH_ROUNDS + 1]
    capped = Index(size=10_000, negatives=10_000)
    search_past_negative_faq(capped.search, _params(10), RetrievalConfig(max_pool_size=100), [ASKED], deepen=True)
    assert capped.depths == [10, 30, 60, 100]


def test_a_search_with_enough_answers_runs_once():
    index = Index(size=200, negatives=0)
    found = search_past_negative_faq(index.search, _params(10), RetrievalConfig(), [ASKED], deepen=True)
    assert len(found) == 10
    assert index.depths == [10]
