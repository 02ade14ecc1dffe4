import asyncio

import pytest

from ragline.models.base import ModelCallError
from ragline.reranking.base import RankResult
from ragline.reranking.config import RerankConfig
from ragline.reranking.rerank import RerankOptions, diversify, rerank_results
from ragline.reranking.scoring import RerankOutcome
from ragline.types import ChunkType, MatchType, SearchResult

CONFIG = RerankConfig()


class ScriptedModel:
    """Scores passages by a table keyed on a word the passage contains; records what it was sent."""

    def __init__(self, scores: dict[str, float], max_passage_chars: int = 0, error: Exception | None = None) -> None:
        self.model_id = "scripted"
        self.max_passage_chars = max_passage_chars
        self._scores = scores
        self._error = error
        self.calls: list[tuple[str, list[str]]] = []

    async def rerank(self, query, passages):
        self.calls.append((query, list(passages)))
        if self._error is not None:
            raise self._error
        ranked = []
        for index, passage in enumerate(passages):
            for word, score in self._scores.items():
                if word in passage:
                    ranked.append(RankResult(index, score))
                    break
        return sorted(ranked, key=lambda r: -r.score)


def hit(id: str, content: str, score: float = 0.5, **fields) -> SearchResult:
    return SearchResult(id=id, content=content, score=score, knowledge_id=f"doc-{id}", **fields)


def run(model, results, threshold=0.3, top_k=10, **options):
    return asyncio.run(
        rerank_results(model, "query", results, RerankOptions(threshold=threshold, top_k=top_k, **options), CONFIG)
    )


def test_scores_thresholds_and_composites():
    model = ScriptedModel({"alpha": 0.9, "beta": 0.5, "gamma": 0.1})
    results = [hit("a", "alpha text", 0.4), hit("b", "beta words", 0.8), hit("c", "gamma stuff", 0.9)]
    outcome = run(model, results)
    assert outcome.diagnostics.outcome == RerankOutcome.OK
    assert [r.id for r in outcome.results] == ["a", "b"]
    first = outcome.results[0]
    assert first.score == pytest.approx(0.6 * 0.9 + 0.3 * 0.4 + 0.1)
    assert first.metadata == {"base_score": "0.4000", "model_score": "0.9000", "composite_score": "0.7600"}
    # The inputs are untouched: later stages may fall back to them.
    assert results[0].score == 0.4
    assert results[0].metadata == {}
    assert outcome.diagnostics.candidate_count == 3
    assert outcome.diagnostics.model_result_count == 3
    assert outcome.diagnostics.top_score == 0.9
    assert outcome.diagnostics.result_count == 2


def test_model_sees_title_header_and_clean_text():
    model = ScriptedModel({"x": 0.9})
    run(model, [hit("a", "# Heading\n**x** [link](http://u)", knowledge_title="Doc", header="Sec")])
    assert model.calls == [("query", ["Doc\n\nSec\n\nHeading\nx link"])]


def test_passages_cut_to_the_models_limit():
    model = ScriptedModel({"a": 0.9}, max_passage_chars=5)
    run(model, [hit("a", "a" * 50)])
    assert model.calls[0][1] == ["aaaaa"]


def test_empty_passages_are_not_sent():
    model = ScriptedModel({"text": 0.9})
    outcome = run(model, [hit("img", "![x](y.png)"), hit("t", "some text")])
    assert model.calls[0][1] == ["some text"]
    assert [r.id for r in outcome.results] == ["t"]


def test_no_candidates_when_every_passage_is_empty():
    model = ScriptedModel({})
    outcome = run(model, [hit("img", "![x](y.png)")])
    assert outcome.diagnostics.outcome == RerankOutcome.NO_CANDIDATES
    assert outcome.results == []
    assert model.calls == []


def test_candidates_capped_at_max_of_200_and_top_k():
    model = ScriptedModel({"w": 0.9})
    results = [hit(f"r{i}", f"w {i}", score=i / 1000) for i in range(250)]
    run(model, results, top_k=5)
    assert len(model.calls[0][1]) == 200
    model = ScriptedModel({"w": 0.9})
    run(model, results, top_k=220)
    assert len(model.calls[0][1]) == 220


def test_graph_hits_always_reach_the_model_and_use_the_model_as_base():
    model = ScriptedModel({"w": 0.9, "entity": 0.8})
    results = [hit(f"r{i}", f"w {i}", score=0.5) for i in range(201)]
    results.append(hit("g", "entity relation", score=0.0, match_type=MatchType.GRAPH))
    outcome = run(model, results, top_k=5)
    assert len(model.calls[0][1]) == 201
    graph = next(r for r in outcome.results if r.id == "g")
    assert graph.metadata["base_score"] == "0.8000"


@pytest.mark.parametrize(
    "error",
    [ModelCallError("HTTP 500"), RuntimeError("bug in adapter"), TimeoutError()],
    ids=["model call error", "unexpected error", "timeout"],
)
def test_model_failures_are_an_outcome(error):
    outcome = run(ScriptedModel({}, error=error), [hit("a", "text")])
    assert outcome.diagnostics.outcome == RerankOutcome.MODEL_ERROR
    assert outcome.diagnostics.error
    assert outcome.results == []


def test_slow_model_times_out():
    class Slow(ScriptedModel):
        async def rerank(self, query, passages):
            await asyncio.sleep(5)
            return []

    outcome = asyncio.run(
        rerank_results(
            Slow({}), "q", [hit("a", "text")], RerankOptions(threshold=0.3, top_k=5), RerankConfig(timeout_s=0.05)
        )
    )
    assert outcome.diagnostics.outcome == RerankOutcome.MODEL_ERROR
    assert "TimeoutError" in outcome.diagnostics.error


def test_invalid_indices_and_duplicates_are_ignored():
    class Sloppy(ScriptedModel):
        async def rerank(self, query, passages):
            return [RankResult(5, 0.99), RankResult(-1, 0.99), RankResult(0, 0.7), RankResult(0, 0.2)]

    outcome = run(Sloppy({}), [hit("a", "text")])
    assert outcome.diagnostics.model_result_count == 1
    assert outcome.results[0].metadata["model_score"] == "0.7000"


def test_threshold_degrade_and_fallbacks():
    model = ScriptedModel({"a": 0.45, "b": 0.2})
    degraded = run(model, [hit("a", "a"), hit("b", "b")], threshold=0.6)
    assert degraded.diagnostics.outcome == RerankOutcome.THRESHOLD_DEGRADED
    assert degraded.diagnostics.effective_threshold == pytest.approx(0.42)
    assert [r.id for r in degraded.results] == ["a"]

    top1 = run(ScriptedModel({"a": 0.2, "b": 0.16}), [hit("a", "a"), hit("b", "b")], threshold=0.3)
    assert top1.diagnostics.outcome == RerankOutcome.FALLBACK_TOP1
    assert [r.id for r in top1.results] == ["a"]

    nothing = run(ScriptedModel({"a": 0.1}), [hit("a", "a")], threshold=0.3)
    assert nothing.diagnostics.outcome == RerankOutcome.ALL_BELOW_THRESHOLD
    assert nothing.results == []

    scoped = run(ScriptedModel({"a": 0.1}), [hit("a", "a")], threshold=0.3, explicit_scope=True)
    assert scoped.diagnostics.outcome == RerankOutcome.FALLBACK_TOP1


def test_faq_boost_ranks_faq_first_with_metadata():
    model = ScriptedModel({"doc": 0.8, "faq": 0.7})
    results = [hit("d", "doc text", 0.5), hit("f", "faq text", 0.5, chunk_type=ChunkType.FAQ)]
    outcome = run(model, results, faq_boost=1.5)
    assert [r.id for r in outcome.results] == ["f", "d"]
    faq = outcome.results[0]
    assert faq.metadata["faq_boosted"] == "true"
    assert faq.metadata["faq_original_score"] == "0.6700"
    assert faq.score == pytest.approx(min(0.67 * 1.5, 1.0))


def test_mmr_selects_top_k_without_duplicates():
    model = ScriptedModel({"refund": 0.9, "shipping": 0.6})
    results = [
        hit("a", "refund policy seven days", 0.9),
        hit("b", "refund policy seven days again", 0.9),
        hit("c", "shipping costs and carriers", 0.5),
    ]
    outcome = run(model, results, top_k=2)
    assert [r.id for r in outcome.results] == ["a", "c"]


def test_top_k_below_one_still_returns_one():
    outcome = run(ScriptedModel({"x": 0.9}), [hit("a", "x"), hit("b", "x y")], top_k=0)
    assert len(outcome.results) == 1


def test_diversify_without_model_keeps_retrieval_scores_and_graph_hits():
    results = [
        hit("a", "refund policy seven days", 0.9),
        hit("b", "refund policy seven days again", 0.88),
        hit("g", "entity", 0.0, match_type=MatchType.GRAPH),
        hit("c", "shipping costs and carriers", 0.7),
    ]
    chosen = diversify(results, 2, CONFIG)
    # b: 0.7·0.88 − 0.3·(4/5 overlap with a) = 0.376 < c: 0.7·0.7 = 0.49
    assert [r.id for r in chosen] == ["a", "c", "g"]
    assert [r.score for r in chosen] == [0.9, 0.7, 0.0]
    assert chosen[0] is results[0]


# The reference's image rules for a text model --------------------------------------------------------
def image(id: str, text: str, vector: float) -> SearchResult:
    return hit(id, text, vector, chunk_type=ChunkType.IMAGE_OCR, vector_score=vector)


def test_short_text_images_a_text_model_rejects_are_kept_on_their_vector_score_at_most_two():
    model = ScriptedModel({"alpha": 0.9, "Fig": 0.01, "long": 0.01})
    long_ocr = "long " + "words of a scanned page " * 10  # ≥ 200 characters: judged as text
    results = [
        hit("a", "alpha text", 0.4),
        image("i1", "Fig 3 pressure", 0.6),
        image("i2", "Fig 4 flow", 0.3),
        image("i3", "Fig 5 heat", 0.5),
        image("low", "Fig 6 noise", 0.2),  # under max(vector threshold, 0.25)
        image("page", long_ocr, 0.9),
    ]
    outcome = run(model, results, threshold=0.5, vector_threshold=0.1)
    assert [r.id for r in outcome.results] == ["a", "i1", "i3"]
    assert [r.metadata.get("kept_by") for r in outcome.results] == [None, "image_vector", "image_vector"]
    assert (outcome.diagnostics.images_scored, outcome.diagnostics.images_kept) == (5, 2)
    # The search's vector threshold raises the floor.
    assert [r.id for r in run(model, results, threshold=0.5, vector_threshold=0.55).results] == ["a", "i1"]


def test_when_no_text_passes_the_kept_images_are_the_result():
    model = ScriptedModel({"alpha": 0.1, "Fig": 0.01})
    outcome = run(model, [hit("a", "alpha text", 0.4), image("i1", "Fig 3", 0.6)], threshold=0.5)
    assert outcome.diagnostics.outcome == RerankOutcome.OK
    assert [(r.id, r.metadata["kept_by"]) for r in outcome.results] == [("i1", "image_vector")]
