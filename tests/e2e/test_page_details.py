"""Issue 29, the details people notice: what the viewer and the search page show, code highlighting, message times,
export, the image lightbox, and FAQ, tags, chunk editing and the embedding model in the knowledge-base pages.

Each test runs in English and in Chinese (``lang``) and saves its states as
``test-output/screenshots/page-29-<locale>-<state>.png``; axe-core runs in each state (test_page_states.py runs
the same states on both screens, light and dark).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import CHROMIUM, WAIT_MS, PageErrors, check_accessibility, screenshot
from tests.e2e.test_page_features import open_app, wait_answered
from tests.e2e.test_page_images import coloured_png
from tests.support.scripted_model import Piece, Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

LOCALES = ["en-US", "zh-CN"]


@pytest.fixture(params=LOCALES)
def lang(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    """A desktop page whose browser speaks en-US or zh-CN (``page.locale``), the clipboard allowed."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, locale=request.param)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.errors = errors  # type: ignore[attr-defined]
    page.locale = request.param  # type: ignore[attr-defined]
    page.screen_name = "desktop"  # type: ignore[attr-defined]
    yield page
    context.close()


def state(page: Any, axe_source: str, name: str) -> None:
    """axe in this state (no serious or critical violation), then its screenshot in the page's language."""
    check_accessibility(page, axe_source, f"details-{name}")
    screenshot(page, f"page-29-{page.locale}-{name}")


# (3) The viewer renders Markdown; search shows the best sentence -------------------------------------------------
GRINDING = {
    "Grinding": (
        "# Grinding\n\n## Burr grinders\n\n"
        "A burr grinder crushes beans between two burrs. "
        "Set it **finer** for espresso and coarser for a `french press`.\n\n"
        "- Flat burrs\n- Conical burrs\n\n"
        'Never trust <img src=x onerror="window.pwned=1"> or [this link](javascript:window.pwned=1).'
    )
}
HIGHLIGHTED = "Set it finer for espresso and coarser for a french press."


def test_the_viewer_renders_the_passage_as_markdown_with_the_cited_sentence_highlighted(
    ragline, scripted, lang, axe_source
):
    page = lang
    ragline.create_kb("grinding", GRINDING)
    open_app(page, ragline.url, ragline.key)
    scripted.queue(
        Script([Piece(content="Grind finer for espresso"), Piece(content=' <ref id="c1"/>'), Piece(content=".")])
    )
    page.fill("#question", "How fine should I grind for espresso?")
    page.click("#ask")
    wait_answered(page, 1)
    page.click(".turn .answer button.cite")
    page.wait_for_selector('#source-dialog[open][data-state="loaded"]')
    viewer = page.locator("#source-text")
    # Markdown, not its marks: emphasis, code, a list (the headings are the chunk's header, in the meta line).
    assert "Burr grinders" in page.locator("#source-meta").inner_text()
    assert viewer.locator("strong").inner_text() == "finer"
    assert viewer.locator("code").inner_text() == "french press"
    assert viewer.locator("li").all_inner_texts() == ["Flat burrs", "Conical burrs"]
    text = viewer.inner_text()
    assert "**" not in text
    assert "`" not in text
    # HTML in a passage is shown as text, never run; a javascript: link is no link.
    assert '<img src=x onerror="window.pwned=1">' in text
    assert viewer.locator("img").count() == 0
    assert viewer.locator("a").count() == 0
    assert page.evaluate("window.pwned") is None
    # The cited sentence is highlighted across its emphasis and code.
    marks = viewer.locator("mark.claim").all_inner_texts()
    assert "".join(marks) == HIGHLIGHTED, marks
    assert page.get_attribute("#source-dialog", "data-highlight") == HIGHLIGHTED
    state(page, axe_source, "viewer-markdown")
    assert not page.errors, page.errors


BEANS = {
    "Keeping coffee": (
        "Coffee keeps best in a cool, dark place. Whole beans stay fresh for about a month. "
        "Grind right before brewing, since ground coffee loses its aroma within minutes. "
        "Water just off the boil extracts the most flavour."
    ),
    "绿茶冲泡": "# 绿茶冲泡\n\n玻璃杯便于观察茶叶舒展。绿茶适合用七十到八十度的水冲泡，时间两到三分钟。沸水会烫伤茶叶。",
}


@pytest.mark.parametrize(
    ("query", "sentence", "terms"),
    [
        (
            "ground coffee aroma",
            "Grind right before brewing, since ground coffee loses its aroma within minutes.",
            ["ground", "coffee", "aroma"],
        ),
        ("绿茶 水温 冲泡", "绿茶适合用七十到八十度的水冲泡，时间两到三分钟。", ["绿茶", "冲泡"]),
    ],
    ids=["english", "chinese"],
)
def test_search_results_show_the_best_matching_sentence_with_the_terms_highlighted(
    ragline, lang, axe_source, query, sentence, terms
):
    page = lang
    kb = ragline.create_kb("beans", BEANS)
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}/search")
    page.wait_for_selector("#kb-search-query")
    page.fill("#kb-search-query", query)
    page.click("#kb-search button[type=submit]")
    page.wait_for_selector('#kb-search-results[data-state="done"] .hit')
    first = page.locator(".hit .hit-text").first
    shown = first.inner_text()
    # The sentence that holds the query's terms, not the passage's first characters; '…' where it goes on.
    assert sentence in shown, shown
    assert shown.startswith("… "), shown
    assert [m.lower() for m in first.locator("mark.term").all_inner_texts()] == terms
    state(page, axe_source, f"search-sentence-{'zh' if terms[0] == '绿茶' else 'en'}")
    assert not page.errors, page.errors


# (4) Code blocks: highlighted by highlight.js served from build/, and without it -----------------------------------
CODE_ANSWER = "Weigh the dose in code:\n\n```python\ndef dose(grams):\n    # a double shot\n    return grams * 2\n```\n"
CODE = "def dose(grams):\n    # a double shot\n    return grams * 2"


def test_code_blocks_are_highlighted_and_still_work_without_the_library(ragline, scripted, lang, axe_source):
    page = lang
    ragline.create_kb("grinding", GRINDING)
    # The library is served by ragline's own server from build/web-vendor (`make web-vendor`), nothing else.
    library = page.request.get(f"{ragline.url}/vendor/highlight.min.js")
    assert library.status == 200
    assert "registerLanguage" in library.text()
    assert page.request.get(f"{ragline.url}/vendor/axe.min.js").status == 404
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    open_app(page, ragline.url, ragline.key)
    scripted.queue(Script.answer(CODE_ANSWER))
    page.fill("#question", "How do I compute the dose?")
    page.click("#ask")
    wait_answered(page, 1)
    code = page.locator('.turn .answer pre code[data-highlighted="python"]')
    code.wait_for()
    assert code.inner_text() == CODE  # the same text, coloured
    assert page.locator(".turn .answer pre code .hljs-keyword").first.inner_text() == "def"
    assert page.locator(".turn .answer pre code .hljs-comment").inner_text() == "# a double shot"
    assert page.locator(".turn .answer .code-lang").inner_text() == "python"
    page.click(".turn .answer .code-copy")
    assert page.evaluate("() => navigator.clipboard.readText()") == CODE
    assert [u for u in requested if not u.startswith(ragline.url)] == []
    state(page, axe_source, "code-highlighted")

    # Without the library (not installed, or it fails to load) the block shows as plain code and still copies.
    other = page.context.new_page()
    other.route("**/vendor/**", lambda route: route.abort())
    errors: list[str] = []
    other.on("pageerror", lambda exc: errors.append(str(exc)))
    other.goto(f"{page.url}")
    other.wait_for_selector(".turn .answer pre code")
    other.wait_for_function("() => !document.querySelector('.turn')?.dataset.state?.startsWith('stream')")
    assert other.locator(".turn .answer pre code").inner_text() == CODE
    assert other.locator(".turn .answer pre code span").count() == 0
    other.click(".turn .answer .code-copy")
    assert other.evaluate("() => navigator.clipboard.readText()") == CODE
    assert not errors, errors
    other.close()
    assert not page.errors, page.errors


# (4) Message times; the conversation exported as Markdown with its sources, and as JSON ---------------------------
LABELS = {
    "en-US": {"question": "## Question · ", "answer": "## Answer · ", "sources": "**Sources**"},
    "zh-CN": {"question": "## 问题 · ", "answer": "## 回答 · ", "sources": "**来源**"},
}


def test_messages_show_their_times_and_the_conversation_exports_as_markdown_and_json(
    ragline, scripted, lang, axe_source
):
    page = lang
    ragline.create_kb("grinding", GRINDING)
    open_app(page, ragline.url, ragline.key)
    assert page.locator("#export-button").is_hidden()  # nothing to export in a new session
    scripted.queue(
        Script([Piece(content="Grind finer for espresso"), Piece(content=' <ref id="c1"/>'), Piece(content=".")])
    )
    page.fill("#question", "How fine should I grind for espresso?")
    page.click("#ask")
    wait_answered(page, 1)
    asked = page.locator(".turn .msg.user time.msg-time")
    answered = page.locator(".turn .msg.assistant time.msg-time")
    assert asked.is_visible()
    assert answered.is_visible()
    assert asked.inner_text()
    assert answered.inner_text()
    # After a reload the times are the stored messages' own.
    page.reload()
    page.wait_for_selector(".turn .msg.assistant time.msg-time")
    session = page.evaluate("location.hash").split("/")[-1]
    messages = ragline.client.get(f"/api/v1/sessions/{session}/messages").json()["data"]
    assert page.get_attribute(".turn .msg.user time.msg-time", "datetime") == messages[0]["created_at"]
    assert page.get_attribute(".turn .msg.assistant time.msg-time", "datetime") == messages[1]["updated_at"]
    title = page.evaluate(
        "() => new Date(document.querySelector('.turn .msg.user time').dateTime).toLocaleString(document.documentElement.lang)"
    )
    assert page.get_attribute(".turn .msg.user time.msg-time", "title") == title

    page.click("#export-button")
    page.wait_for_selector("#export-options:not([hidden])")
    state(page, axe_source, "export-menu")
    with page.expect_download() as markdown_download:
        page.click('#export-options button[data-format="markdown"]')
    markdown = Path(markdown_download.value.path()).read_text(encoding="utf-8")
    stored = ragline.client.get(f"/api/v1/sessions/{session}").json()["data"]
    labels = LABELS[page.locale]
    assert markdown.startswith(f"# {stored['title']}\n"), markdown
    assert labels["question"] in markdown
    assert labels["answer"] in markdown
    assert "How fine should I grind for espresso?" in markdown
    assert "Grind finer for espresso [1]." in markdown
    assert f"{labels['sources']}\n\n1. Grinding\n   > A burr grinder crushes beans between two burrs." in markdown, (
        markdown
    )
    assert markdown_download.value.suggested_filename.endswith(".md")

    page.click("#export-button")
    with page.expect_download() as json_download:
        page.click('#export-options button[data-format="json"]')
    exported = json.loads(Path(json_download.value.path()).read_text(encoding="utf-8"))
    assert exported["session"]["id"] == session
    assert exported["messages"] == messages
    assert json_download.value.suggested_filename.endswith(".json")
    page.set_viewport_size({"width": 1400, "height": 900})
    screenshot(page, f"page-29-{page.locale}-message-times")
    assert not page.errors, page.errors


# (4) The image lightbox ------------------------------------------------------------------------------------------
def test_a_question_image_opens_at_full_size_in_the_lightbox_and_closes_back_to_it(ragline, scripted, lang, axe_source):
    page = lang
    ragline.create_kb("grinding", GRINDING)
    open_app(page, ragline.url, ragline.key)
    picture = coloured_png("orange", 960, 640)
    page.set_input_files("#attach-input", files=[{"name": "grounds.png", "mimeType": "image/png", "buffer": picture}])
    page.wait_for_selector("#attachments .attachment")
    scripted.queue(Script.answer("Those grounds look fine."))
    page.fill("#question", "Is this grind fine enough?")
    page.click("#ask")
    wait_answered(page, 1)
    thumbnail = page.locator('.turn .user-images button.zoom img[data-state="loaded"]')
    thumbnail.wait_for()
    small = thumbnail.bounding_box()
    page.locator(".turn .user-images button.zoom").focus()
    page.keyboard.press("Enter")  # a keyboard opens it as a click does
    page.wait_for_selector("#lightbox[open]")
    page.wait_for_function("() => document.getElementById('lightbox-image').complete")
    shown = page.evaluate(
        """() => { const img = document.getElementById('lightbox-image');
                   return {natural: img.naturalWidth, width: img.getBoundingClientRect().width, alt: img.alt,
                           caption: document.getElementById('lightbox-caption').textContent}; }"""
    )
    assert shown["natural"] == 960
    assert shown["width"] > 3 * small["width"]
    assert shown["caption"] == shown["alt"] == thumbnail.get_attribute("alt")
    state(page, axe_source, "lightbox")
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.getElementById('lightbox').open")
    assert page.evaluate("document.activeElement.matches('.turn .user-images button.zoom')")
    assert not page.errors, page.errors


# (4) The knowledge-base pages: tags, chunk editing, FAQ, the embedding model --------------------------------------
def confirm(page: Any) -> None:
    page.wait_for_selector("#confirm-dialog[open]")
    page.click("#confirm-ok")
    page.wait_for_function("() => !document.getElementById('confirm-dialog').open")


def test_the_knowledge_base_pages_manage_tags_chunks_faq_and_the_embedding_model(ragline, lang, axe_source):
    page = lang
    kb = ragline.create_kb("grinding", GRINDING)
    api = ragline.client
    [document] = api.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"]

    # Tags: created, then given to the document in its row, then renamed.
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}/tags")
    page.wait_for_selector("#tag-create")
    page.fill("#tag-name", "espresso")
    page.click("#tag-create button[type=submit]")
    page.wait_for_selector('#tag-list[data-count="1"] .tag-name')
    [tag] = api.get(f"/api/v1/knowledge-bases/{kb}/tags").json()["data"]["data"]
    assert tag["name"] == "espresso"
    page.click("#kb-view nav.tabs a:first-child")
    page.wait_for_selector(f'select.doc-tag[data-document-id="{document["id"]}"]')
    page.select_option(f'select.doc-tag[data-document-id="{document["id"]}"]', tag["id"])
    page.wait_for_selector(f'select.doc-tag[data-saved="{tag["id"]}"]')
    assert api.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"][0]["tags"] == [tag["id"]]
    page.click("#kb-tags-tab")
    page.wait_for_selector("#tag-list .tag-item")
    assert "1" in page.locator("#tag-list .tag-row .muted").inner_text()  # one document carries it
    page.click('#tag-list button[data-action="rename"]')
    page.fill("#tag-list .tag-edit input", "ristretto")
    page.click("#tag-list .tag-edit button[type=submit]")
    page.wait_for_function("() => document.querySelector('#tag-list .tag-name')?.textContent === 'ristretto'")
    assert api.get(f"/api/v1/knowledge-bases/{kb}/tags").json()["data"]["data"][0]["name"] == "ristretto"
    state(page, axe_source, "kb-tags")

    # A chunk's text edited in place (found by search at once), then left out of search.
    page.click("#kb-view nav.tabs a:first-child")
    page.locator("#documents button.link").first.click()
    page.wait_for_selector("#chunks .chunk .chunk-controls")
    chunk_id = page.locator("#chunks li.chunk:not(.parent)").first.get_attribute("data-chunk-id")
    chunk = page.locator(f'#chunks li.chunk[data-chunk-id="{chunk_id}"]')
    chunk.locator('button[data-action="edit-chunk"]').click()
    edited = "A burr grinder crushes beans evenly; a blade grinder chops them unevenly."
    chunk.locator("textarea.chunk-edit-text").fill(edited)
    state(page, axe_source, "kb-chunk-edit")
    chunk.locator(".chunk-edit button[type=submit]").click()
    page.wait_for_function(
        "([id, text]) => document.querySelector(`li.chunk[data-chunk-id='${id}'] pre.chunk-text`).textContent === text",
        arg=[chunk_id, edited],
    )
    assert api.get(f"/api/v1/chunks/by-id/{chunk_id}").json()["data"]["content"] == edited
    hits = api.post("/api/v1/knowledge-search", json={"query": "blade grinder", "knowledge_base_ids": [kb]}).json()
    assert chunk_id in [hit["id"] for hit in hits["data"]]
    chunk.locator(".chunk-controls input[type=checkbox]").uncheck()
    page.wait_for_selector(f'li.chunk[data-chunk-id="{chunk_id}"][data-enabled="false"]')
    assert api.get(f"/api/v1/chunks/by-id/{chunk_id}").json()["data"]["is_enabled"] is False

    # FAQ: an entry added, edited, disabled and deleted.
    page.click("#kb-faq-tab")
    page.wait_for_selector("#faq-list")
    page.click(".faq-add summary")
    page.fill("#faq-new-question", "How long does an espresso shot take?")
    page.fill("#faq-new-answer", "About 25 to 30 seconds.")
    page.fill("#faq-new-similar", "How long should I pull a shot?\nShot time?")
    page.click("#faq-new button[type=submit]")
    page.wait_for_selector('#faq-list[data-count="1"] .faq-item')
    [entry] = api.get(f"/api/v1/knowledge-bases/{kb}/faq/entries").json()["data"]["data"]
    assert entry["standard_question"] == "How long does an espresso shot take?"
    assert entry["similar_questions"] == ["How long should I pull a shot?", "Shot time?"]
    state(page, axe_source, "kb-faq")
    page.click('#faq-list button[data-action="edit"]')
    page.fill(f"#faq-edit-{entry['id']}-answer", "25 to 30 seconds, for about 36 grams.")
    page.click(f"#faq-edit-{entry['id']} button[type=submit]")
    page.wait_for_function("() => document.querySelector('.faq-answer')?.textContent.startsWith('25 to 30')")
    page.uncheck(f"#faq-enabled-{entry['id']}")
    page.wait_for_selector('.faq-item[data-enabled="false"]')
    stored = api.get(f"/api/v1/knowledge-bases/{kb}/faq/entries/{entry['id']}").json()["data"]
    assert stored["answers"] == ["25 to 30 seconds, for about 36 grams."]
    assert stored["is_enabled"] is False
    page.click('#faq-list button[data-action="delete"]')
    confirm(page)
    page.wait_for_selector('#faq-list[data-count="0"]')
    assert api.get(f"/api/v1/knowledge-bases/{kb}/faq/entries").json()["data"]["total"] == 0

    # The embedding model: the deployment's, switched (the documents are embedded again with it).
    embedders = [m["id"] for m in api.get("/api/v1/models").json()["data"] if m["type"] == "Embedding"]
    before = api.get(f"/api/v1/knowledge-bases/{kb}").json()["data"]["embedding_model_id"]
    options = page.eval_on_selector_all("#kb-embedding-model option", "(os) => os.map((o) => o.value)")
    assert sorted(options) == sorted(embedders)
    assert len(embedders) >= 2, embedders
    other = next(m for m in embedders if m != before)
    page.select_option("#kb-embedding-model", other)
    confirm(page)
    page.wait_for_function(
        "(model) => [...document.querySelectorAll('.toast')].some((t) => t.textContent.includes(model))", arg=other
    )
    assert api.get(f"/api/v1/knowledge-bases/{kb}").json()["data"]["embedding_model_id"] == other
    assert not page.errors, page.errors
