"""The page's modules in the browser: the Markdown renderer (safe, citation chips) and the SSE parser."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import CHROMIUM

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

RENDER = """async (cases) => {
  const md = await import('/static/markdown.js');
  const chip = (c) => {
    const b = document.createElement('button');
    b.className = 'cite';
    b.dataset.kind = c.kind;
    b.dataset.ref = c.kind === 'kb' ? `${c.chunkId}|${c.kbId}` : c.url;
    b.textContent = c.kind === 'kb' ? c.doc : c.title;
    return b;
  };
  const out = {};
  for (const [name, text] of Object.entries(cases)) {
    const div = document.createElement('div');
    div.append(md.renderMarkdown(text, { renderCitation: chip }));
    out[name] = div.innerHTML;
  }
  out.partial = md.stripPartialTag('Use water <kb doc="Cof');
  out.partialWeb = md.stripPartialTag('See <web url="https://exa');
  out.lessThan = md.stripPartialTag('a < b');
  return out;
}"""

CASES: dict[str, tuple[str, str]] = {
    "script": ("<script>window.pwned = 1</script>", "<p>&lt;script&gt;window.pwned = 1&lt;/script&gt;</p>"),
    "img": ('<img src=x onerror="window.pwned=1">', '<p>&lt;img src=x onerror="window.pwned=1"&gt;</p>'),
    "js_link": ("[click](javascript:window.pwned=1)", "<p>click</p>"),
    "data_link": ("[x](data:text/html,<b>x</b>)", "<p>[x](data:text/html,&lt;b&gt;x&lt;/b&gt;)</p>"),
    "link": (
        '[docs](https://example.com/a?b=1&c=2 "Docs")',
        '<p><a href="https://example.com/a?b=1&amp;c=2" title="Docs" target="_blank" '
        'rel="noopener noreferrer nofollow">docs</a></p>',
    ),
    "autolink": (
        "see https://example.com/x.",
        '<p>see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer nofollow">'
        "https://example.com/x</a>.</p>",
    ),
    "inline": (
        "**bold**, *em*, _em_, ~~gone~~, `a<b>` and snake_case_name",
        "<p><strong>bold</strong>, <em>em</em>, <em>em</em>, <del>gone</del>, <code>a&lt;b&gt;</code> and "
        "snake_case_name</p>",
    ),
    "heading_paragraph": ("## Water\nline one\nline two", "<h2>Water</h2><p>line one<br>line two</p>"),
    "lists": (
        "- a\n- b\n  - c\n\n3. x\n4. y",
        '<ul><li>a</li><li>b<ul><li>c</li></ul></li></ul><ol start="3"><li>x</li><li>y</li></ol>',
    ),
    "fence": (
        '```python\nprint("<b>")\n<kb doc="D" chunk_id="c" />\n```',
        '<div class="code-block"><div class="code-head"><span class="code-lang">python</span>'
        '<button type="button" class="ghost small code-copy">Copy code</button></div>'
        '<pre tabindex="0"><code class="language-python">print("&lt;b&gt;")\n&lt;kb doc="D" chunk_id="c" /&gt;</code></pre></div>',
    ),
    "quote_rule": ("> quoted **text**\n\n---", "<blockquote><p>quoted <strong>text</strong></p></blockquote><hr>"),
    "table": (
        "| name | °C |\n|:--|--:|\n| green | 80 |",
        '<div class="table-wrap"><table><thead><tr><th class="align-left">name</th><th class="align-right">°C</th>'
        '</tr></thead><tbody><tr><td class="align-left">green</td><td class="align-right">80</td></tr></tbody>'
        "</table></div>",
    ),
    "citations": (
        'Hot <kb doc="Coffee &amp; &quot;tea&quot;" chunk_id="c-1" kb_id="k-1" /> water'
        '<web url="https://example.com/?a=1&amp;b=2" title="Example" />.',
        '<p>Hot <button class="cite" data-kind="kb" data-ref="c-1|k-1">Coffee &amp; "tea"</button> water'
        '<button class="cite" data-kind="web" data-ref="https://example.com/?a=1&amp;b=2">Example</button>.</p>',
    ),
    "other_tags": (
        '<ref id="c1"/> <b onclick="x">b</b>',
        '<p>&lt;ref id="c1"/&gt; &lt;b onclick="x"&gt;b&lt;/b&gt;</p>',
    ),
}


def test_markdown_renders_safely_with_citation_chips(ragline: Any, page: Any) -> None:
    page.goto(f"{ragline.url}/healthz")
    rendered = page.evaluate(RENDER, {name: text for name, (text, _) in CASES.items()})
    for name, (_, expected) in CASES.items():
        assert rendered[name] == expected, name
    assert rendered["partial"] == "Use water "
    assert rendered["partialWeb"] == "See "
    assert rendered["lessThan"] == "a < b"
    assert page.evaluate("window.pwned") is None


PARSE = """async (chunks) => {
  const { SSEParser } = await import('/static/sse.js');
  const parser = new SSEParser();
  return chunks.flatMap((chunk) => parser.push(chunk));
}"""


def test_the_sse_parser_follows_the_event_stream_format(ragline: Any, page: Any) -> None:
    page.goto(f"{ragline.url}/healthz")
    events = page.evaluate(
        PARSE,
        [
            'id: 1\nevent: message\ndata: {"a":',
            "1}\n\n: ping\n\nid: 2\r",  # a CRLF split across two chunks
            "\ndata: x\r\ndata: y\r\n\r\n",
            "data:no space\n\n",  # keeps the last id
            "id\ndata: z\n\n",  # an empty id resets it
        ],
    )
    assert events == [
        {"id": "1", "event": "message", "data": '{"a":1}'},
        {"id": "2", "event": "message", "data": "x\ny"},
        {"id": "2", "event": "message", "data": "no space"},
        {"id": "", "event": "message", "data": "z"},
    ]


FOLLOW_ENDED = """async ({ key, url, last }) => {
  localStorage.setItem('ragline.apiKey', key);
  const { followStream } = await import('/static/sse.js');
  const frames = [];
  const started = performance.now();
  const result = await followStream(url, { lastEventId: last, onFrame: (f) => frames.push(f.response_type) });
  return { result, frames, ms: performance.now() - started };
}"""


def test_following_a_stream_from_its_last_event_ends_at_once(ragline: Any, page: Any) -> None:
    """The server answers 204 to a reader already at the terminal event; the page stops there."""
    session = ragline.session([ragline.create_kb("kb", {"Doc": "# Doc\n\nPears ripen off the tree."})])
    ids = ragline.ask(session, "pears?")
    frames = ragline.events(session, ids["assistant_message_id"])
    page.goto(f"{ragline.url}/healthz")
    url = f"{ragline.url}/api/v1/sessions/{session}/messages/{ids['assistant_message_id']}/events"
    out = page.evaluate(FOLLOW_ENDED, {"key": ragline.key, "url": url, "last": frames[-1].id})
    assert out["result"] == {"ended": "ended", "lastEventId": str(frames[-1].id)}
    assert out["frames"] == []
