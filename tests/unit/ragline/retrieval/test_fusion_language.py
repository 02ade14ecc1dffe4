"""Fusion that a dense list from a model that cannot read the query's language cannot drag down."""

from __future__ import annotations

import pytest

from ragline.retrieval.config import RetrievalConfig
from ragline.retrieval.hybrid import fuse, list_weights, query_language
from ragline.types import MatchType, SearchResult

MINILM = "local:all-MiniLM-L6-v2-int8"
E5 = "local:multilingual-e5-small-q4"


def hit(id: str, score: float) -> SearchResult:
    return SearchResult(id=id, content=id, score=score)


# The dense list puts noise first with confident-looking scores; the keyword list has the answer.
VECTOR = [hit("noise1", 0.9), hit("noise2", 0.85), hit("answer", 0.3)]
KEYWORD = [hit("answer", 1.0), hit("other", 0.6)]


def test_query_language():
    assert query_language("范廷颂是什么时候被任为主教的？") == "zh"
    assert query_language("When was he made a bishop?") == "en"
    assert query_language("OpenSearch 索引") == "zh"


@pytest.mark.parametrize("fusion", ["score", "rrf"])
def test_a_model_that_cannot_read_the_query_never_outvotes_keyword_search(fusion):
    config = RetrievalConfig(fusion=fusion)
    fused = fuse(VECTOR, KEYWORD, config, query="谁是主教？", embedding_model=MINILM)
    assert [h.id for h in fused[:2]] == ["answer", "other"]
    # Its hits are still there, after the keyword ones: recall is kept.
    assert {h.id for h in fused} == {"answer", "other", "noise1", "noise2"}
    answer = next(h for h in fused if h.id == "answer")
    assert answer.match_type == MatchType.HYBRID
    assert answer.vector_score == 0.3


@pytest.mark.parametrize("fusion", ["score", "rrf"])
def test_a_model_that_reads_the_query_keeps_its_vote(fusion):
    config = RetrievalConfig(fusion=fusion)
    assert list_weights(config, "谁是主教？", E5) == (1.0, 1.0)
    assert list_weights(config, "who is the bishop?", MINILM) == (1.0, 1.0)
    english = fuse(VECTOR, KEYWORD, config, query="who is the bishop?", embedding_model=MINILM)
    chinese_e5 = fuse(VECTOR, KEYWORD, config, query="谁是主教？", embedding_model=E5)
    assert [h.id for h in english] == [h.id for h in chinese_e5]
    assert english[0].id != "other"


def test_weights_are_configuration():
    config = RetrievalConfig(unread_language_vector_weight=0.5)
    assert list_weights(config, "谁是主教？", MINILM) == (0.5, 1.0)
    assert list_weights(RetrievalConfig(adaptive=False), "谁是主教？", MINILM) == (1.0, 1.0)
    assert list_weights(RetrievalConfig(model_languages={}), "谁是主教？", MINILM) == (1.0, 1.0)


def test_an_ensembles_vector_list_counts_one_vote_per_model():
    config = RetrievalConfig()
    ensemble = "local:minilm+bge-small-en"
    assert list_weights(config, "How long is the Yangtze?", ensemble) == (2.0, 1.0)
    assert list_weights(config, "How long is the Yangtze?", MINILM) == (1.0, 1.0)
    # A language it does not read: no vote at all, as for its parts.
    assert list_weights(config, "长江有多长？", ensemble) == (config.unread_language_vector_weight, 1.0)
    # Two votes against one: a hit second in both lists passes one that tops only the keyword list.
    vector = [hit("dense", 1.0), hit("both", 0.8)]
    keyword = [hit("sparse", 1.0), hit("both", 0.8)]
    ranked = [h.id for h in fuse(vector, keyword, config, query="Yangtze", embedding_model=ensemble)]
    assert ranked.index("dense") < ranked.index("sparse")
    ranked = [h.id for h in fuse(vector, keyword, config, query="Yangtze", embedding_model=MINILM)]
    assert ranked[0] == "both"
