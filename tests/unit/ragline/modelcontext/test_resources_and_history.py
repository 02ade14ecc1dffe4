import random

from ragline.modelcontext import SourceRegistry, StreamDecoder, expand_text, fold_citations
from ragline.types import SearchResult


def registry_with_sources() -> SourceRegistry:
    registry = SourceRegistry()
    registry.render_results(
        [
            SearchResult(
                id="chunk-1",
                content="See ![diagram](resource://kb/abc/diagram.png) and s3://bucket/report.pdf for details.",
                knowledge_id="doc-1",
                knowledge_base_id="kb-1",
                knowledge_title="Report",
            )
        ]
    )
    return registry


def test_storage_urls_reach_the_model_as_aliases_and_come_back():
    registry = registry_with_sources()
    view = registry.render_results([])
    assert view == ""
    sources = SourceRegistry()
    rendered = sources.render_results(
        [SearchResult(id="c", content="![d](resource://kb/abc/diagram.png) s3://bucket/report.pdf", knowledge_id="d")]
    )
    assert "resource://" not in rendered
    assert "s3://" not in rendered
    assert "res://0001" in rendered
    assert "res://0002" in rendered
    assert expand_text("Look at res://0002 and res://0001", sources) == (
        "Look at s3://bucket/report.pdf and resource://kb/abc/diagram.png"
    )
    assert expand_text("an invented res://0042 vanishes", sources) == "an invented  vanishes"


def test_the_same_url_gets_the_same_alias():
    registry = SourceRegistry()
    assert registry.resources.encode("s3://b/x s3://b/x s3://b/y") == "res://0001 res://0001 res://0002"


def test_stream_decoding_of_aliases_and_citations_matches_whole_text_at_every_split():
    registry = SourceRegistry()
    registry.resources.encode("resource://kb/one.png s3://b/two.pdf")
    registry.register_chunk(SearchResult(id="chunk-9", content="", knowledge_title="Doc", knowledge_base_id="kb"))
    texts = [
        'Image res://0001 cites <ref id="c1"/> then res://0002.',
        "res://0001res://0002 res://9999 res:/ re res://",
        "tail alias res://000",
    ]
    rng = random.Random(5)
    for text in texts:
        whole = expand_text(text, registry)
        for cut in range(len(text) + 1):
            decoder = StreamDecoder(registry)
            assert decoder.feed(text[:cut]) + decoder.feed(text[cut:]) + decoder.flush() == whole, (text, cut)
        for _ in range(50):
            decoder = StreamDecoder(registry)
            pieces, position = [], 0
            while position < len(text):
                step = rng.randint(1, 4)
                pieces.append(text[position : position + step])
                position += step
            assert "".join(decoder.feed(p) for p in pieces) + decoder.flush() == whole


def test_history_citations_fold_back_into_this_answers_aliases():
    registry = SourceRegistry()
    registry.register_chunk(SearchResult(id="current", content="", knowledge_title="Now"))
    earlier = (
        'Water boils at 100 °C <kb doc="Physics &amp; more" chunk_id="old-chunk" kb_id="kb-1" />'
        ' and see <web url="https://example.org/a" title="Example" />.'
    )
    folded = fold_citations(earlier, registry)
    assert folded == 'Water boils at 100 °C <ref id="c2"/> and see <ref id="w1"/>.'
    # Expanding what the model writes with those aliases gives the original citations back.
    assert expand_text(folded, registry) == (
        'Water boils at 100 °C <kb doc="Physics &amp; more" chunk_id="old-chunk" kb_id="kb-1" />'
        ' and see <web url="https://example.org/a" title="Example" />.'
    )


def test_history_citations_vanish_when_citations_are_off():
    registry = SourceRegistry(citations_enabled=False)
    text = 'A fact <kb doc="D" chunk_id="x" /> and <web url="https://e.org" title="E" />.'
    assert fold_citations(text, registry) == "A fact  and ."
