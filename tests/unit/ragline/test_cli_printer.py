"""The terminal answer printer: citation tags become numbered references, with their attributes decoded."""

import io

from rich.console import Console

from ragline.cli import AnswerPrinter


def printer() -> tuple[AnswerPrinter, io.StringIO]:
    out = io.StringIO()
    return AnswerPrinter(Console(file=out, width=200, color_system=None)), out


def test_citation_tags_become_numbered_references_with_decoded_labels():
    answer, out = printer()
    text = (
        'Brew at 90 °C <kb doc="Coffee &amp; tea" chunk_id="c&lt;1" kb_id="kb-1" />, '
        'or see <web url="https://example.org/a?x=1&amp;y=2" title="Q &quot;A&quot;" />; '
        'again <kb doc="Coffee &amp; tea" chunk_id="c&lt;1" />.'
    )
    assert answer.render_text(text) == "Brew at 90 °C [1], or see [2]; again [1]."
    assert {key: (c.number, c.label) for key, c in answer.citations.items()} == {
        "doc:Coffee & tea": (1, "Coffee & tea"),
        "https://example.org/a?x=1&y=2": (2, 'Q "A" <https://example.org/a?x=1&y=2>'),
    }
    answer.finish()
    assert "[1] Coffee & tea" in out.getvalue()


def test_references_are_one_entry_per_document_and_the_counts_agree():
    """Two passages of one document cited: one [1] entry listing both, "1 of 2 retrieved documents cited"."""
    answer, out = printer()
    references = [
        {"id": "a1", "knowledge_id": "doc-a", "knowledge_title": "Streaming", "header": "Resume", "chunk_metadata": {}},
        {
            "id": "a2",
            "knowledge_id": "doc-a",
            "knowledge_title": "Streaming",
            "header": "Keep-alive",
            "chunk_metadata": {"page": 2},
            "sub_chunk_id": ["a3"],
        },
        {"id": "b1", "knowledge_id": "doc-b", "knowledge_title": "Getting started", "chunk_metadata": {}},
    ]
    answer.handle({"response_type": "references", "knowledge_references": references})
    answer.handle(
        {
            "response_type": "answer",
            "content": 'Send Last-Event-ID.<kb doc="Streaming" chunk_id="a1" />',
            "data": {"model_id": "local:extractive"},
        }
    )
    answer.handle(
        {"response_type": "answer", "content": ' Pings every 15 s.<kb doc="Streaming" chunk_id="a3" />', "data": {}}
    )
    answer.finish()
    printed = out.getvalue()
    assert "Send Last-Event-ID.[1] Pings every 15 s.[1]" in printed
    assert "quoted from the knowledge base" in printed
    assert "References (1 of 2 retrieved documents cited)" in printed
    assert printed.count("[1] Streaming") == 1
    assert "Resume" in printed
    assert "p. 2 · Keep-alive" in printed
    assert "[2]" not in printed


def test_tags_a_model_spells_loosely_are_still_cited():
    answer, _ = printer()
    assert answer.render_text('x <kb  doc="D"  chunk_id="c2"/> y') == "x [1] y"


def test_search_progress_and_reference_counts_say_one_in_the_singular():
    answer, out = printer()
    answer.handle(
        {
            "response_type": "tool_result",
            "data": {"tool_name": "knowledge_search", "count": 1, "doc_count": 1, "candidate_count": 1},
        }
    )
    answer.handle({"response_type": "references", "knowledge_references": [{"id": "a1", "knowledge_id": "doc-a"}]})
    answer.handle({"response_type": "answer", "content": 'Yes.<kb doc="Streaming" chunk_id="a1" />', "data": {}})
    answer.finish()
    printed = out.getvalue()
    assert "✓ 1 passage from 1 document (1 candidate)" in printed
    assert "References (1 of 1 retrieved document cited)" in printed
