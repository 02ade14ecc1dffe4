from ragline.pipeline.chunk_search import PluginSearch, TargetGroup
from ragline.pipeline.query_expansion import expansion_variants, keywords
from ragline.retrieval.config import RetrievalConfig
from ragline.types import ChatManage, PipelineRequest, SearchResult, SearchTarget, SearchTargetType


def test_variants_keywords_quotes_segments_and_question_word():
    variants = expansion_variants('How do I resume a "server-sent events" stream, after a disconnect?')
    assert variants[0] == "resume server sent events stream disconnect"
    assert "server-sent events" in variants
    assert "after a disconnect" in variants
    assert len(variants) <= 5
    assert len({v.lower() for v in variants}) == len(variants)


def test_leading_question_word_removed_and_query_itself_never_a_variant():
    assert "boiling point of water" in expansion_variants("What is the boiling point of water")
    assert expansion_variants("tea") == []
    for variant in expansion_variants("Why is the sky blue?"):
        assert variant.lower() != "why is the sky blue?"


def test_han_runs_are_cut_by_jieba_and_latin_runs_stay_whole():
    found = keywords("如何配置OpenSearch索引")
    assert "OpenSearch" in found
    assert "索引" in found
    assert "如何" not in found


def test_variants_are_at_least_three_bytes():
    for variant in expansion_variants("a, b, cd; What?"):
        assert len(variant.encode()) >= 3


class RecordingEngine:
    def __init__(self, hits):
        self.calls = []
        self._hits = hits

    def vector_search(self, params, top_k):
        raise AssertionError("expansion searches by keyword only")

    def keyword_search(self, params, top_k):
        self.calls.append(params)
        return [h.model_copy() for h in self._hits.get(params.query, [])]

    def index_chunks(self, *args, **kwargs):
        raise AssertionError


def _cm(**overrides):
    request = PipelineRequest(
        query="What is the boiling point of water at altitude?",
        request_id="r",
        session_id="s",
        tenant_id="t",
        keyword_threshold=0.5,
        embedding_top_k=10,
        rerank_top_k=5,
        **overrides,
    )
    return ChatManage.start(request)


def test_expansion_fills_a_short_first_recall_below_its_scores():
    variant = "boiling point water altitude"
    engine = RecordingEngine(
        {variant: [SearchResult(id="new", content="x", score=9.0), SearchResult(id="known", content="y", score=8.0)]}
    )
    search = PluginSearch(knowledge_store=None, engine=engine, models=None, config=RetrievalConfig())  # type: ignore[arg-type]
    first = [SearchResult(id="known", content="y", score=0.8), SearchResult(id="other", content="z", score=0.4)]
    group = TargetGroup(
        embedding_model="m",
        whole_bases=["kb"],
        constrained=[SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id="kb2", knowledge_ids=("d1",))],
    )
    merged = search._expand(_cm(), group, first)
    assert [r.id for r in merged] == ["known", "other", "new"]
    assert merged[0].score == 0.8  # a hit the full query found keeps its score
    assert merged[2].score <= 0.4  # expansion hits never outrank the first recall
    assert merged[2].metadata["query_expansion"] == "true"
    whole = [c for c in engine.calls if c.knowledge_base_ids == ["kb"]]
    scoped = [c for c in engine.calls if c.knowledge_base_ids == ["kb2"]]
    assert whole
    assert scoped
    assert all(c.keyword_threshold == 0.5 * 0.8 for c in whole)
    assert all(c.keyword_threshold == 0.0 and c.knowledge_ids == ["d1"] for c in scoped)
    assert all(c.match_count == 20 and not c.vector_enabled for c in engine.calls)
