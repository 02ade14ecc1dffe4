"""Reading the model's replies to the enrichment prompts, and enrichment staying off without a model that
writes text of its own."""

from __future__ import annotations

import asyncio

import pytest

from ragline.config import EnrichmentConfig, load_config
from ragline.ingest.enrichment import DocumentEnricher, Enricher, reply_lines, term_keywords
from ragline.models.extractive import ExtractiveChatModel
from ragline.models.registry import ModelRegistry


@pytest.mark.parametrize(
    ("reply", "limit", "expected"),
    [
        ("1. What is A?\n2) What is B?\n3、What is C?", 5, ["What is A?", "What is B?", "What is C?"]),
        ("- one\n* two\n• three\n\n  \n- one", 5, ["one", "two", "three"]),
        ('Q1: first?\nQ2: second?\n"third?"', 2, ["first?", "second?"]),
        ('["alpha", "beta"]', 5, ["alpha", "beta"]),
        ("<think>let me see</think>\nOpenSearch\nopensearch", 5, ["OpenSearch"]),
        ("", 3, []),
    ],
)
def test_reply_lines_reads_one_item_per_line(reply, limit, expected):
    assert reply_lines(reply, limit) == expected


def test_term_keywords_keep_the_longest_words_that_are_not_stop_words():
    assert term_keywords("What is the capital of France and why?") == ["capital", "France"]
    assert term_keywords("the of and") == []
    assert len(term_keywords("alpha beta gamma delta epsilon zeta eta")) == 5


def test_without_a_generative_model_nothing_is_enriched_and_keywords_are_the_questions_words():
    _, templates = load_config()
    models = ModelRegistry()
    models.add_chat_model(ExtractiveChatModel.model_id, lambda: ExtractiveChatModel(), default=True)
    enricher = Enricher(models, templates)
    service = DocumentEnricher(None, None, models, enricher, EnrichmentConfig())  # type: ignore[arg-type]
    assert enricher.generative_model() is None
    assert not service.active
    keywords, source = asyncio.run(enricher.keywords("Where is the Jacquard loom kept?"))
    assert (keywords, source) == (["Jacquard", "loom", "kept"], "terms")
