"""Provider hits as search results: URL ids, the web source, and scores from the provider or the rank."""

from __future__ import annotations

import pytest

from ragline.modelcontext.registry import SourceRegistry
from ragline.types import ChunkType, MatchType
from ragline.web import WEB_KNOWLEDGE_SOURCE, WebHit, rank_score, to_search_results
from ragline.web.search import plain_text


def test_fields_of_a_web_result():
    [result] = to_search_results(
        [WebHit("https://example.org/page#section", "A page", "The snippet.", 0.8)], provider_id="tavily"
    )
    assert result.id == "https://example.org/page"  # fragment removed
    assert result.url == "https://example.org/page#section"
    assert result.knowledge_title == "A page"
    assert result.content == "The snippet."
    assert result.knowledge_source == WEB_KNOWLEDGE_SOURCE == "web_search"
    assert result.match_type == MatchType.WEB_SEARCH
    assert result.chunk_type == ChunkType.WEB_SEARCH
    assert result.is_web
    assert result.score == pytest.approx(0.8)
    assert result.knowledge_id == ""  # merge passes results without a document through unchanged
    assert result.metadata == {
        "web_rank": "1",
        "web_snippet": "The snippet.",
        "web_provider": "tavily",
        "web_provider_score": "0.8000",
    }


def test_rank_score_is_one_over_one_plus_rank():
    assert [rank_score(r) for r in range(4)] == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
    results = to_search_results([WebHit(f"https://e.org/{i}", f"t{i}", f"s{i}") for i in range(3)])
    assert [r.score for r in results] == pytest.approx([1.0, 0.5, 1 / 3])
    assert all("web_provider_score" not in r.metadata for r in results)


def test_provider_scores_are_clamped_to_the_unit_interval():
    results = to_search_results([WebHit("https://e.org/a", "a", "a", 1.7), WebHit("https://e.org/b", "b", "b", -0.2)])
    assert [r.score for r in results] == [1.0, 0.0]


def test_one_result_per_page_and_ranks_count_kept_hits():
    results = to_search_results(
        [
            WebHit("https://e.org/a#one", "A", "first"),
            WebHit("https://e.org/a#two", "A again", "second"),
            WebHit("ftp://e.org/file", "ftp", "dropped"),
            WebHit("https://e.org/b", "B", "third"),
        ]
    )
    assert [r.id for r in results] == ["https://e.org/a", "https://e.org/b"]
    assert [r.metadata["web_rank"] for r in results] == ["1", "2"]
    assert results[1].score == pytest.approx(0.5)


def test_missing_title_and_snippet_fall_back():
    [result] = to_search_results([WebHit("https://docs.example.org/x", "", "")])
    assert result.knowledge_title == "docs.example.org"
    assert result.content == ""
    [titled] = to_search_results([WebHit("https://docs.example.org/x", "Title only", "")])
    assert titled.content == "Title only"


def test_web_results_alias_as_w_handles_by_url():
    results = to_search_results([WebHit("https://e.org/a#x", "A", "a"), WebHit("https://e.org/b", "B", "b")])
    registry = SourceRegistry()
    handles = [registry.register_web(r.url or r.id, r.knowledge_title) for r in results]
    assert handles == ["w1", "w2"]
    assert registry.register_web("https://e.org/a#other", "A") == "w1"


def test_plain_text_drops_markup_and_decodes_entities():
    assert plain_text("<strong>Ragline</strong> &amp; <em>RAG</em>\n  pipelines") == "Ragline & RAG pipelines"
    assert plain_text(None) == ""
