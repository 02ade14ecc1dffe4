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
    assert answer.citations == {
        "c<1": (1, "Coffee & tea"),
        "https://example.org/a?x=1&y=2": (2, 'Q "A" <https://example.org/a?x=1&y=2>'),
    }
    answer.finish()
    assert "[1] Coffee & tea" in out.getvalue()


def test_tags_a_model_spells_loosely_are_still_cited():
    answer, _ = printer()
    assert answer.render_text('x <kb  doc="D"  chunk_id="c2"/> y') == "x [1] y"
