"""Issue 29: the bugs a new user met on the page, each driven as that user met it.

A question that is only an image; the knowledge-base header's document count; a refused upload; the drop zone's
list of types; the phone drawer and the keyboard (skip link, focus into drawers and dialogs and back); the badges
of a "does not say" answer; the extractive answer to the start hint (`ragline serve` suggests "How do I resume a
stream?"), asked and regenerated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragline.ingest.service import UPLOAD_SUFFIXES
from tests.e2e.conftest import CHROMIUM, VIEWPORTS, WAIT_MS, PageErrors
from tests.e2e.test_page_features import DRAWER_IN_PLACE, open_app, session_of, wait_answered
from tests.e2e.test_page_images import coloured_png
from tests.support.documents import DRINKS
from tests.support.polling import wait_until
from tests.support.scripted_model import Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "kb"
KB_PAGE = Path(__file__).resolve().parents[2] / "layers" / "core" / "ragline" / "server" / "web" / "kb.js"


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    context = browser.new_context(**VIEWPORTS["phone"])
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.errors = PageErrors()  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(f"pageerror: {exc}"))
    page.screen_name = "phone"  # type: ignore[attr-defined]
    yield page
    context.close()


def focused(page: Any) -> str:
    """The focused element as `tag#id.class` (and the id of its drawer or dialog, if any)."""
    return str(
        page.evaluate(
            """() => { const el = document.activeElement; if (!el) return '';
              const holder = el.closest('.drawer, dialog');
              return `${el.tagName.toLowerCase()}#${el.id}${holder ? ' in ' + holder.id : ''}`; }"""
        )
    )


# A question that is only an image ---------------------------------------------------------------------------
def test_a_question_that_is_only_an_image_shows_its_bubble_and_thumbnail_live_and_after_a_reload(
    ragline, scripted, page
):
    scripted.queue(Script.answer("A red rectangle.", delay=0.3))
    open_app(page, ragline.url, ragline.key)
    page.set_input_files(
        "#attach-input", files=[{"name": "red.png", "mimeType": "image/png", "buffer": coloured_png("red")}]
    )
    page.wait_for_selector("#attachments li.attachment")
    page.click("#ask")
    session_of(page)
    # Live: the question's bubble shows the picture while the answer comes.
    page.wait_for_selector(".turn .msg.user:not([hidden]) .user-images img")
    wait_answered(page, 1)
    page.reload()
    bubble = page.locator(".turn .msg.user")
    page.wait_for_selector('.turn .msg.user .user-images img[data-state="loaded"]')
    assert bubble.is_visible()
    assert bubble.locator(".user-images img").count() == 1
    assert not page.errors, page.errors


# The knowledge base's header, uploads, the drop zone's types ------------------------------------------------
def test_the_header_counts_the_documents_the_table_lists_after_uploads(ragline, page):
    kb = ragline.create_kb("handbook")
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}")
    page.wait_for_selector("#dropzone")
    assert page.locator("#kb-document-count").inner_text() == "0 documents"
    page.set_input_files(
        "#kb-files",
        files=[
            {"name": f"n{i}.md", "mimeType": "text/markdown", "buffer": f"# N{i}\n\nText {i}.\n".encode()}
            for i in range(3)
        ],
    )
    page.wait_for_function("() => document.querySelectorAll('#documents tr[data-document-id]').length === 3")
    page.wait_for_function("() => document.getElementById('kb-document-count').textContent === '3 documents'")
    page.locator('#documents tr[data-document-id] [data-action="delete"]').first.click()
    page.click("#confirm-ok")
    page.wait_for_function("() => document.getElementById('kb-document-count').textContent === '2 documents'")


UPLOAD_STATUSES = """() => { window.statuses = [];
  new MutationObserver(() => {
    for (const el of document.querySelectorAll('.upload-row .upload-status')) {
      if (window.statuses[window.statuses.length - 1] !== el.textContent) window.statuses.push(el.textContent);
    }
  }).observe(document.getElementById('kb-detail'), { subtree: true, childList: true, characterData: true }); }"""


@pytest.mark.parametrize(
    ("name", "raw", "refused_by"),
    [("notes.xyz", b"some text", "page"), ("broken.pdf", b"%PDF-1.4 this is not a PDF", "server")],
)
def test_a_refused_upload_never_reads_indexing_and_says_why(ragline, page, name, raw, refused_by):
    kb = ragline.create_kb("handbook")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.method + " " + request.url))
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}")
    page.wait_for_selector("#dropzone")
    page.evaluate(UPLOAD_STATUSES)
    page.set_input_files("#kb-files", files=[{"name": name, "mimeType": "application/octet-stream", "buffer": raw}])
    page.wait_for_selector('.upload-row[data-state="error"]')
    statuses = page.evaluate("window.statuses")
    assert not [s for s in statuses if "index" in s], statuses
    message = page.locator(".upload-row .upload-status").inner_text()
    sent = [r for r in requests if r.startswith("POST") and "/documents" in r]
    if refused_by == "page":
        # Refused before sending, in the server's own words (every type it takes listed).
        assert not sent, sent
        assert ".xyz" in message
        assert ".csv" in message
        assert ".xlsx" in message
    else:
        assert sent
        assert "PDF" in message or "pdf" in message, message


def test_the_drop_zone_offers_exactly_the_types_the_server_takes(ragline, page):
    kb = ragline.create_kb("handbook")
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}")
    accept = page.get_attribute("#kb-files", "accept") or ""
    assert sorted(accept.split(",")) == sorted(UPLOAD_SUFFIXES)
    # The server's refusal names the same list (it omitted tables and images).
    reply = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", files={"file": ("notes.xyz", b"text", "application/octet-stream")}
    )
    assert reply.status_code == 415, reply.text
    listed = re.findall(r"\.\w+", reply.json()["error"]["message"].split("supported:", 1)[1])
    assert sorted(listed) == sorted(UPLOAD_SUFFIXES)


# Keyboard: the skip link, the drawer, dialogs ----------------------------------------------------------------
def test_the_first_tab_offers_a_skip_link_to_the_question(ragline, page):
    kb = ragline.create_kb("drinks", DRINKS)
    open_app(page, ragline.url, ragline.key, f"/s/{ragline.session([kb])}")
    page.reload()  # the key is kept: the session opens with the focus at the top of the page
    page.wait_for_selector("#session-list li")
    page.keyboard.press("Tab")
    assert focused(page) == "a#skip-link"
    assert page.locator("#skip-link").is_visible()
    page.keyboard.press("Enter")
    assert focused(page) == "textarea#question"


def test_the_phone_drawer_takes_the_focus_and_gives_it_back(ragline, phone):
    page = phone
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector("#session-list li", state="attached")
    page.focus("#menu-button")
    page.keyboard.press("Enter")
    page.wait_for_function(DRAWER_IN_PLACE)
    assert focused(page).endswith("in chat-sidebar"), focused(page)
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.body.classList.contains('drawer-open')")
    assert focused(page) == "button#menu-button"


def test_dialogs_take_the_focus_and_give_it_back_to_what_opened_them(ragline, page):
    kb = ragline.create_kb("drinks", DRINKS)
    open_app(page, ragline.url, ragline.key, f"/s/{ragline.session([kb])}")
    page.wait_for_selector("#options-button")
    for opener, dialog in (("#options-button", "options-dialog"), ("#settings-button", "settings-dialog")):
        page.focus(opener)
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#{dialog}[open]")
        assert focused(page).endswith(f"in {dialog}"), focused(page)
        page.keyboard.press("Escape")
        page.wait_for_function(f"() => !document.getElementById('{dialog}').open")
        assert focused(page) == f"button{opener}", (dialog, focused(page))


# Extractive answers on the page --------------------------------------------------------------------------------
def sample_kb(ragline: Any) -> str:
    kb = ragline.create_kb("sample")
    for path in sorted(SAMPLES.glob("*.md")):
        reply = ragline.client.post(
            f"/api/v1/knowledge-bases/{kb}/documents?wait=true",
            files={"file": (path.name, path.read_bytes(), "text/markdown")},
        )
        assert reply.status_code == 201, reply.text
    return kb


def choose_extractive(page: Any) -> None:
    page.wait_for_selector('#model-picker option[value="local:extractive"]', state="attached")
    page.select_option("#model-picker", "local:extractive")


def test_the_start_hint_is_answered_not_echoed_asked_and_regenerated(ragline, page):
    kb = sample_kb(ragline)
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    choose_extractive(page)
    page.fill("#question", "How do I resume a stream?")
    page.click("#ask")
    wait_answered(page, 1)
    answer = page.locator(".turn:not([hidden]) .answer").inner_text()
    assert "ragline ask" not in answer, answer
    assert "Last-Event-ID" in answer, answer
    page.click(".turn .action-regenerate")
    page.wait_for_function("() => document.querySelector('.turn-group').dataset.alternatives === '2'")
    wait_answered(page, 2)
    again = page.locator(".turn:not([hidden]) .answer").inner_text()
    assert "ragline ask" not in again, again
    assert "Last-Event-ID" in again, again


def test_a_does_not_say_answer_is_marked_as_one_thing(ragline, page):
    kb = sample_kb(ragline)
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    choose_extractive(page)
    page.fill("#question", "Who won the 2018 FIFA World Cup?")
    page.click("#ask")
    wait_answered(page, 1)
    badges = wait_until(lambda: page.locator(".turn .badges .badge").all_inner_texts() or None)
    assert len(badges) == 1, badges


# A question asked while the page still loads -----------------------------------------------------------------
def test_a_question_asked_before_the_knowledge_bases_load_searches_them(ragline, scripted, page):
    """A fast user (or a slow server) asks before the new-session view has listed its knowledge bases: the
    question waits for the list and goes to the knowledge bases the view then shows checked, not to none."""
    kb_id = ragline.create_kb("drinks", DRINKS)
    held: list[Any] = []
    released = False

    def hold(route: Any) -> None:
        # GET /api/v1/knowledge-bases (the new-session view's list) waits until the question has been asked.
        if route.request.method == "GET" and not released:
            held.append(route)
        else:
            route.continue_()

    page.route(re.compile(r".*/api/v1/knowledge-bases$"), hold)
    open_app(page, ragline.url, ragline.key)
    wait_until(lambda: page.evaluate("1") and held)  # (evaluate lets Playwright hand the route to `hold`)
    scripted.queue(Script.answer("Green tea wants water at 80 °C", ' <ref id="c1"/>', "."))
    page.fill("#question", "What temperature for green tea?")
    page.click("#ask")
    released = True
    for route in held:
        route.continue_()
    wait_answered(page, 1)
    session = ragline.client.get(f"/api/v1/sessions/{session_of(page)}").json()["data"]
    assert session["knowledge_base_ids"] == [kb_id]
    assert page.locator(".turn").first.get_attribute("data-state") == "complete"
    assert page.locator(".turn .answer button.cite").count() == 1
    assert not page.errors, page.errors
