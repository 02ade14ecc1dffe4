from ragline.modelcontext.registry import HANDLE_PATTERN, SourceRegistry
from ragline.types import MatchType, SearchResult


def chunk(id: str, title: str = "Doc", kb: str = "kb-1", knowledge_id: str = "doc-1", **kwargs) -> SearchResult:
    return SearchResult(
        id=id, content=f"text {id}", knowledge_title=title, knowledge_base_id=kb, knowledge_id=knowledge_id, **kwargs
    )


def test_chunks_get_aliases_in_order_and_same_id_same_alias():
    registry = SourceRegistry()
    assert registry.register_chunk(chunk("uuid-a")) == "c1"
    assert registry.register_chunk(chunk("uuid-b")) == "c2"
    assert registry.register_chunk(chunk("uuid-a")) == "c1"
    assert registry.register_chunk(chunk("uuid-c")) == "c3"
    source = registry.chunk("c2")
    assert source is not None
    assert source.chunk_id == "uuid-b"
    assert registry.chunk("C2") == source


def test_web_aliases_dedup_by_url_without_fragment():
    registry = SourceRegistry()
    assert registry.register_web("https://example.com/page?x=1#intro", "Page") == "w1"
    assert registry.register_web("https://example.com/page?x=1", "Page again") == "w1"
    assert registry.register_web("https://example.com/page?x=1#other", "Page") == "w1"
    assert registry.register_web("https://example.com/page?x=2", "Other") == "w2"
    source = registry.web("w1")
    assert source is not None
    assert source.url == "https://example.com/page?x=1"
    assert source.title == "Page"  # first registration wins


def test_documents_and_knowledge_bases_aliases():
    registry = SourceRegistry()
    assert registry.register_document("doc-a") == "d1"
    assert registry.register_document("doc-b") == "d2"
    assert registry.register_document("doc-a") == "d1"
    assert registry.register_knowledge_base("kb-x") == "b1"
    assert registry.register_knowledge_base("kb-x") == "b1"
    assert registry.register_knowledge_base("kb-y") == "b2"


def test_handle_shaped_ids_only_return_existing_handles():
    registry = SourceRegistry()
    assert registry.register_chunk(chunk("c1")) == ""
    assert registry.register_web("w1") == ""
    assert registry.chunk("c1") is None
    registry.register_chunk(chunk("real-id"))
    registry.register_web("https://example.com")
    registry.register_document("doc")
    registry.register_knowledge_base("kb")
    assert registry.register_chunk(chunk("c1")) == "c1"
    assert registry.register_chunk(chunk("C1")) == "c1"
    assert registry.register_chunk(chunk("w1")) == "w1"
    assert registry.register_web("W1") == "w1"
    assert registry.register_chunk(chunk("d1")) == "d1"
    assert registry.register_chunk(chunk("b1")) == "b1"
    assert registry.register_chunk(chunk("c2")) == ""
    # nothing new was registered by the handle-shaped ids
    assert registry.register_chunk(chunk("another-real-id")) == "c2"


def test_handle_pattern():
    for handle in ("c1", "W12", "d9", "b100"):
        assert HANDLE_PATTERN.match(handle)
    for not_handle in ("c0", "c01", "x1", "c", "c1a", "cc1", ""):
        assert not HANDLE_PATTERN.match(not_handle)


def test_expand_handle_chunk_and_web_with_escaping():
    registry = SourceRegistry()
    registry.register_chunk(chunk("id-1", title='A "quoted" <doc> & more', kb="kb&1"))
    registry.register_chunk(chunk("id-2", title="No KB", kb=""))
    registry.register_web("https://example.com/a?b=1&c=2", 'T"itle')
    assert registry.expand_handle("c1") == (
        '<kb doc="A &quot;quoted&quot; &lt;doc&gt; &amp; more" chunk_id="id-1" kb_id="kb&amp;1" />'
    )
    assert registry.expand_handle("C2") == '<kb doc="No KB" chunk_id="id-2" />'
    assert registry.expand_handle("w1") == '<web url="https://example.com/a?b=1&amp;c=2" title="T&quot;itle" />'


def test_expand_handle_unknown_or_not_citable():
    registry = SourceRegistry()
    registry.register_chunk(chunk("id-1"))
    registry.register_document("doc-1")
    registry.register_knowledge_base("kb-1")
    assert registry.expand_handle("c2") == ""
    assert registry.expand_handle("d1") == ""
    assert registry.expand_handle("b1") == ""
    assert registry.expand_handle("w1") == ""
    assert registry.expand_handle("id-1") == ""


def test_render_results_groups_by_document_and_registers_aliases():
    registry = SourceRegistry()
    results = [
        chunk("x1", title="First", knowledge_id="doc-a", kb="kb-1", chunk_index=0),
        chunk("x2", title="Second", knowledge_id="doc-b", kb="kb-2", chunk_index=4),
        chunk("x3", title="First", knowledge_id="doc-a", kb="kb-1", chunk_index=2),
        SearchResult(
            id="web-1",
            content="web text",
            url="https://example.com/w",
            knowledge_title="Web",
            match_type=MatchType.WEB_SEARCH,
        ),
    ]
    view = registry.render_results(results)
    assert view.startswith('<retrieval type="knowledge" mode="semantic">')
    assert '<document id="d1" kb="b1" title="First">' in view
    assert '<document id="d2" kb="b2" title="Second">' in view
    assert '<chunk id="c1" index="1" view="full"><content>text x1</content></chunk>' in view
    assert '<chunk id="c2" index="3" view="full"><content>text x3</content></chunk>' in view
    assert '<chunk id="c3" index="5" view="full"><content>text x2</content></chunk>' in view
    assert '<page id="w1" title="Web"><content>web text</content></page>' in view
    assert view.index('id="c2"') < view.index('id="d2"')  # grouped by document, rank order of documents
    for internal in ("x1", "x2", "x3", "doc-a", "kb-1", "https://example.com/w"):
        assert f'"{internal}"' not in view
    assert registry.chunk("c2").chunk_id == "x3"
    assert registry.web("w1").url == "https://example.com/w"
