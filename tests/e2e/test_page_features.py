"""Issue 13: the page a chat-with-your-documents user expects, at 1400×900 and on a 390×844 phone.

Every test runs once per screen (``screen``: desktop and phone), drives the page as a person would, checks
what it shows against the API, runs axe-core inside the page (no serious or critical violation) and saves
a screenshot named ``<n>-<screen>-<what>.png`` under test-output/screenshots/ once its assertions held.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import CHROMIUM, WAIT_MS, check_accessibility, no_horizontal_scroll, shot
from tests.support.documents import DRINKS
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Piece, Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

QUESTION = "what water temperature should I use for brewing coffee at home?"
PROVISIONAL = "What water temperature should I use for brewing…"


# Helpers ----------------------------------------------------------------------------------------------------------
def phone(page: Any) -> bool:
    return page.screen_name == "phone"  # type: ignore[no-any-return]


def open_app(page: Any, url: str, key: str, where: str = "/") -> None:
    page.goto(f"{url}/#{where.lstrip('#')}" if where != "/" else f"{url}/")
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", key)
    page.click("#key-form button[type=submit]")
    page.wait_for_function("() => !document.getElementById('key-dialog').open")


def open_drawer(page: Any) -> None:
    """On a phone the side panel is a drawer: open it with the menu button (on a desktop it is always there)."""
    if phone(page) and page.get_attribute("#menu-button", "aria-expanded") != "true":
        page.click("#menu-button")
        page.wait_for_function("() => document.body.classList.contains('drawer-open')")
        page.wait_for_function(DRAWER_IN_PLACE)


# The open drawer has slid into place (its left edge at the screen's).
DRAWER_IN_PLACE = "() => [...document.querySelectorAll('.view:not([hidden]) .drawer')].every((d) => d.getBoundingClientRect().left >= 0)"


def session_of(page: Any) -> str:
    match = wait_until(lambda: re.search(r"^#/s/([^/]+)$", page.evaluate("location.hash")))
    return str(match.group(1))


def ask(page: Any, question: str) -> None:
    page.fill("#question", question)
    page.click("#ask")


def last_state(page: Any) -> str:
    return str(
        page.evaluate(
            "() => { const t = [...document.querySelectorAll('.turn')].pop(); return t ? t.dataset.state : ''; }"
        )
    )


def wait_answered(page: Any, turns: int) -> None:
    page.wait_for_function(
        "(n) => document.querySelectorAll('.turn').length === n && "
        "[...document.querySelectorAll('.turn')].every((t) => t.dataset.state !== 'streaming')",
        arg=turns,
        timeout=WAIT_MS,
    )


def in_viewport(page: Any, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return bool(
        box
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= size["width"] + 0.5
        and box["y"] + box["height"] <= size["height"] + 0.5
    )


def api_messages(ragline: Any, session: str) -> list[dict[str, Any]]:
    return ragline.messages(session)


def no_page_errors(page: Any) -> None:
    assert not page.errors, page.errors


# 1. Layout ---------------------------------------------------------------------------------------------------------
def test_layout_fits_the_screen_with_the_composer_pinned_and_the_side_panel_a_drawer(
    ragline, scripted, screen, axe_source
):
    page = screen
    kb = ragline.create_kb("drinks", DRINKS)
    session = ragline.session([kb])
    for i in range(6):  # a conversation longer than the screen
        scripted.queue(Script.answer(*[f"Paragraph {i} sentence {j}. " for j in range(12)]))
        ragline.chat(session, f"Question {i} about coffee water?")
    open_app(page, ragline.url, ragline.key, f"/s/{session}")
    wait_answered(page, 6)
    no_horizontal_scroll(page)
    # The question box stays at the bottom of the screen, whatever the conversation's length.
    assert in_viewport(page, "#composer")
    assert in_viewport(page, "#ask")
    composer = page.locator("#composer").bounding_box()
    assert abs(composer["y"] + composer["height"] - page.viewport_size["height"]) <= 1
    assert page.evaluate(
        "() => document.getElementById('turns').scrollHeight > document.getElementById('turns').clientHeight"
    )
    page.evaluate("() => { document.getElementById('turns').scrollTop = 0; }")
    assert in_viewport(page, "#composer")
    # The header's controls are on the screen.
    for control in ("#settings-button", '[data-nav="kb"]', '[data-nav="chat"]', "#options-button"):
        assert in_viewport(page, control), control
    if phone(page):
        # The side panel is a drawer: off screen and out of the tab order until the menu button opens it.
        assert not page.locator("#chat-sidebar").is_visible()
        assert page.evaluate("() => document.getElementById('chat-sidebar').inert")
        page.click("#menu-button")
        page.wait_for_function("() => document.body.classList.contains('drawer-open')")
        page.wait_for_function(DRAWER_IN_PLACE)
        assert in_viewport(page, "#new-session")
        assert in_viewport(page, "#session-search")
        no_horizontal_scroll(page)
        check_accessibility(page, axe_source, "drawer open")
        shot(page, "1b", "drawer-open")
        page.keyboard.press("Escape")
        page.wait_for_function("() => !document.body.classList.contains('drawer-open')")
    else:
        assert page.locator("#chat-sidebar").is_visible()
        assert page.locator("#menu-button").is_hidden()
    check_accessibility(page, axe_source, "long conversation")
    shot(page, "1a", "long-conversation-composer-pinned")

    # The knowledge-base pages fit the screen too, down to 360 px.
    for where in ("#/kb", f"#/kb/{kb}", f"#/kb/{kb}/search"):
        page.evaluate(f"() => {{ location.hash = '{where}'; }}")
        page.wait_for_selector("#kb-detail h1")
        no_horizontal_scroll(page)
    page.wait_for_selector("#kb-search-query")
    check_accessibility(page, axe_source, "search page")
    if phone(page):
        page.set_viewport_size({"width": 360, "height": 740})
        for where in (f"#/kb/{kb}", f"#/s/{session}"):
            page.evaluate(f"() => {{ location.hash = '{where}'; }}")
            page.wait_for_selector("#documents tr, .turn", state="attached")
            no_horizontal_scroll(page)
        assert in_viewport(page, "#ask")
    no_page_errors(page)


# 2. Sessions -------------------------------------------------------------------------------------------------------
def test_sessions_get_a_title_at_once_and_can_be_renamed_pinned_searched_and_deleted_with_undo(
    ragline, scripted, screen, axe_source, monkeypatch
):
    page = screen
    kb = ragline.create_kb("drinks", DRINKS)
    older = ragline.session([kb])
    ragline.chat(older, "How hot should green tea water be?")
    monkeypatch.setattr(scripted, "title", Script.answer("Coffee water temperature"))
    scripted.queue(Script.answer(*[f"w{i} " for i in range(40)], delay=0.05))
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    ask(page, QUESTION)
    session = session_of(page)
    # The first question titles the session at once (cut at a word, with an ellipsis) …
    page.wait_for_function("(t) => document.getElementById('session-title').textContent === t", arg=PROVISIONAL)
    assert "provisional" in (page.get_attribute("#session-title", "class") or "")
    open_drawer(page)
    page.wait_for_selector(f'#session-list li[data-session-id="{session}"] .session-name.provisional')
    assert page.locator(f'#session-list li[data-session-id="{session}"] .session-name').inner_text() == PROVISIONAL
    # … until the generated title replaces it.
    wait_answered(page, 1)
    page.wait_for_function(
        "(sid) => document.querySelector(`#session-list li[data-session-id='${sid}'] .session-name`).textContent"
        " === 'Coffee water temperature'",
        arg=session,
    )
    assert page.locator("#session-title").inner_text() == "Coffee water temperature"

    # Rename.
    item = f'#session-list li[data-session-id="{session}"]'
    page.click(f"{item} .session-more")
    page.click(f'{item} [data-action="rename"]')
    page.fill(f"{item} .rename-form input", "Brewing temperatures")
    page.click(f"{item} .rename-form button[type=submit]")
    page.wait_for_function("() => document.getElementById('session-title').textContent === 'Brewing temperatures'")
    assert ragline.client.get(f"/api/v1/sessions/{session}").json()["data"]["title"] == "Brewing temperatures"

    # Pin: the older session goes first, marked.
    page.click(f'#session-list li[data-session-id="{older}"] .session-more')
    page.click(f'#session-list li[data-session-id="{older}"] [data-action="pin"]')
    page.wait_for_selector(f'#session-list li.pinned[data-session-id="{older}"]')
    assert page.locator("#session-list li").first.get_attribute("data-session-id") == older
    assert ragline.client.get(f"/api/v1/sessions/{older}").json()["data"]["is_pinned"] is True

    # Search finds a session by what its messages say, and shows where.
    page.fill("#session-search", "green tea")
    page.wait_for_function("() => document.querySelectorAll('#session-list li[data-session-id]').length === 1")
    assert page.locator("#session-list li").first.get_attribute("data-session-id") == older
    assert "green tea" in page.locator("#session-list .session-match").inner_text().lower()
    check_accessibility(page, axe_source, "session search")
    shot(page, "2a", "sessions-search-by-content")
    page.fill("#session-search", "")
    page.wait_for_function("() => document.querySelectorAll('#session-list li[data-session-id]').length === 2")

    # Delete with undo: gone from the list at once, back after Undo, never deleted on the server.
    page.click(f"{item} .session-more")
    page.click(f'{item} [data-action="delete"]')
    page.wait_for_selector(".toast .toast-action")
    assert page.locator(item).count() == 0
    check_accessibility(page, axe_source, "undo toast")
    shot(page, "2b", "session-deleted-undo-toast")
    page.click(".toast .toast-action")
    open_drawer(page)
    page.wait_for_selector(item)
    assert ragline.client.get(f"/api/v1/sessions/{session}").status_code == 200
    # Delete for good (the toast dismissed): the server deletes it.
    page.click(f"{item} .session-more")
    page.click(f'{item} [data-action="delete"]')
    page.click(".toast .toast-close")
    wait_until(lambda: ragline.client.get(f"/api/v1/sessions/{session}").status_code == 404)
    open_drawer(page)
    page.wait_for_function(f"() => !document.querySelector('#session-list li[data-session-id=\"{session}\"]')")
    check_accessibility(page, axe_source, "sessions")
    shot(page, "2c", "sessions-pinned-renamed")
    no_page_errors(page)


def test_fork_and_rewind_from_any_answer(ragline, scripted, screen, axe_source):
    page = screen
    kb = ragline.create_kb("drinks", DRINKS)
    session = ragline.session([kb])
    for question in ("How hot should coffee water be?", "What grind for espresso?", "And for tea?"):
        ragline.chat(session, question)
    original = [m["id"] for m in api_messages(ragline, session)]
    open_app(page, ragline.url, ragline.key, f"/s/{session}")
    wait_answered(page, 3)
    # Branch from the second answer: a new session with the first two turns.
    page.locator(".turn").nth(1).locator('[data-action="fork"]').click()
    page.wait_for_function("(sid) => location.hash.startsWith('#/s/') && !location.hash.endsWith(sid)", arg=session)
    fork = session_of(page)
    wait_answered(page, 2)
    copied = api_messages(ragline, fork)
    assert [m["content"] for m in copied if m["role"] == "user"] == [
        "How hot should coffee water be?",
        "What grind for espresso?",
    ]
    assert [m["id"] for m in api_messages(ragline, session)] == original  # the original is unchanged
    page.wait_for_selector(".toast")
    check_accessibility(page, axe_source, "fork")
    shot(page, "3a", "branched-session")
    # Editing an earlier question continues in a branch: the turns before it, then the edited question.
    page.evaluate(f"() => {{ location.hash = '#/s/{session}'; }}")
    wait_answered(page, 3)
    page.locator(".turn").nth(1).locator(".edit-question").click()
    page.locator(".turn").nth(1).locator(".edit-area").fill("What grind for a French press?")
    page.locator(".turn").nth(1).locator(".edit-form button[type=submit]").click()
    page.wait_for_function("(ids) => !ids.some((id) => location.hash.endsWith(id))", arg=[session, fork])
    branch = session_of(page)
    wait_answered(page, 2)
    asked = [m["content"] for m in api_messages(ragline, branch) if m["role"] == "user"]
    assert asked == ["How hot should coffee water be?", "What grind for a French press?"]
    assert [m["id"] for m in api_messages(ragline, session)] == original  # the original is unchanged

    # Rewind the original to its first answer: the later turns are deleted after a confirmation.
    page.evaluate(f"() => {{ location.hash = '#/s/{session}'; }}")
    wait_answered(page, 3)
    page.locator(".turn").nth(0).locator('[data-action="rewind"]').click()
    page.wait_for_selector("#confirm-dialog[open]")
    check_accessibility(page, axe_source, "rewind confirmation")
    shot(page, "3b", "rewind-confirmation")
    page.click("#confirm-ok")
    wait_answered(page, 1)
    assert [m["id"] for m in api_messages(ragline, session)] == original[:2]

    no_page_errors(page)


# 3. Answer actions -------------------------------------------------------------------------------------------------
def test_answer_actions_copy_regenerate_edit_and_feedback(ragline, scripted, screen, axe_source):
    page = screen
    kb = ragline.create_kb("drinks", DRINKS)
    scripted.queue(
        Script([Piece(content="Use **90 to 96 °C**"), Piece(content=' <ref id="c1"/>'), Piece(content=".")]),
        Script.answer("A second answer: 93 °C."),
        Script.answer("Green tea wants 70 to 80 °C."),
    )
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    ask(page, "How hot should coffee water be?")
    session = session_of(page)
    wait_answered(page, 1)
    turn = page.locator(".turn").last

    # References: collapsed to a line naming the cited document; opened, one card per document, cited first.
    refs = turn.locator(".references")
    assert refs.get_attribute("data-open") == "false"
    assert refs.locator(".reference-list").is_hidden()
    assert "Coffee brewing" in refs.locator(".ref-summary").inner_text()
    refs.locator(".ref-toggle").click()
    assert refs.locator(".reference-list").is_visible()
    cards = refs.locator("li.ref-card")
    titles = [cards.nth(i).locator(".ref-title").inner_text() for i in range(cards.count())]
    assert len(titles) == len(set(titles))  # grouped by document
    assert cards.first.get_attribute("class") == "ref-card cited"
    assert cards.first.locator(".ref-n").inner_text() == "1"

    # Copy as Markdown (citations as [n], the sources listed) and as plain text.
    turn.locator('[data-action="copy"]').click()
    markdown = page.evaluate("() => navigator.clipboard.readText()")
    assert markdown == "Use **90 to 96 °C** [1].\n\n[1] Coffee brewing\n"
    turn.locator('[data-action="copy-plain"]').click()
    page.wait_for_function("() => document.querySelector('.turn:not([hidden])').dataset.copied === 'plain'")
    plain = wait_until(lambda: (t := page.evaluate("() => navigator.clipboard.readText()")) != markdown and t)
    assert plain == "Use 90 to 96 °C [1].\n\n[1] Coffee brewing\n"

    # Feedback: thumbs down with a comment, stored on the answer.
    turn.locator('[data-action="down"]').click()
    page.wait_for_selector(".turn .feedback-form:not([hidden]) textarea")
    page.fill(".turn .feedback-comment", "It should say why.")
    page.click(".turn .feedback-form button[type=submit]")
    answer_id = wait_until(
        lambda: next((m for m in api_messages(ragline, session) if m["feedback_comment"] == "It should say why."), None)
    )["id"]
    stored = next(m for m in api_messages(ragline, session) if m["id"] == answer_id)
    assert stored["feedback"] == "down"
    assert turn.locator('[data-action="down"]').get_attribute("aria-pressed") == "true"
    check_accessibility(page, axe_source, "answer with references open and feedback")
    shot(page, "4a", "answer-references-feedback")

    # Regenerate: a new turn with the same question; the first answer stays, one click away.
    page.locator('.turn:not([hidden]) [data-action="regenerate"]').click()
    page.wait_for_function("() => document.querySelector('.turn-group').dataset.alternatives === '2'")
    wait_answered(page, 2)
    group = page.locator(".turn-group").first
    assert group.locator(".alt-count").inner_text() == "2 / 2"
    assert "A second answer" in group.locator(".turn:not([hidden]) .answer").inner_text()
    group.locator('button[aria-label="Previous answer"]').click()
    assert "90 to 96" in group.locator(".turn:not([hidden]) .answer").inner_text()
    assert group.locator(".alt-count").inner_text() == "1 / 2"
    stored = api_messages(ragline, session)
    assert [m["alternative_of"] for m in stored] == ["", "", answer_id, answer_id]
    assert stored[2]["content"] == stored[0]["content"]
    check_accessibility(page, axe_source, "alternatives")
    shot(page, "4b", "regenerated-alternatives")

    # Edit and resend the question: one more alternative, with the edited question.
    group.locator('button[aria-label="Next answer"]').click()
    page.locator(".turn:not([hidden]) .edit-question").click()
    page.fill(".turn:not([hidden]) .edit-area", "How hot should green tea water be?")
    page.click(".turn:not([hidden]) .edit-form button[type=submit]")
    page.wait_for_function("() => document.querySelector('.turn-group').dataset.alternatives === '3'")
    wait_answered(page, 3)
    assert group.locator(".turn:not([hidden]) .user-text").inner_text() == "How hot should green tea water be?"
    stored = api_messages(ragline, session)
    assert stored[-2]["content"] == "How hot should green tea water be?"
    assert stored[-1]["alternative_of"] == answer_id
    # After a reload the alternatives are grouped the same way.
    page.reload()
    page.wait_for_function(
        "() => document.querySelector('.turn-group') && document.querySelector('.turn-group').dataset.alternatives === '3'"
    )
    assert page.locator(".turn-group").count() == 1
    no_page_errors(page)


def test_a_stop_before_the_first_words_leaves_no_empty_bullet(ragline, scripted, screen, axe_source):
    page = screen
    ragline.create_kb("drinks", DRINKS)
    scripted.queue(Script([Piece(content="- ", delay=0.1), *[Piece(content="", delay=0.2) for _ in range(60)]]))
    open_app(page, ragline.url, ragline.key)
    ask(page, "How hot should coffee water be?")
    page.wait_for_selector("#stop:not([hidden])")
    wait_until(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 2)
    page.click("#stop")
    page.wait_for_selector('.turn[data-state="stopped"]')
    assert page.locator(".turn .answer").is_hidden()
    assert "•" not in page.locator(".turn .msg.assistant").inner_text()
    assert page.locator(".turn .notice.stopped").is_visible()
    check_accessibility(page, axe_source, "stopped")
    shot(page, "4c", "stopped-before-first-words")
    no_page_errors(page)


# 4. Documents --------------------------------------------------------------------------------------------------------
DROP = """async ([files]) => {
  const transfer = new DataTransfer();
  for (const [name, text] of files) transfer.items.add(new File([text], name, { type: 'text/markdown' }));
  const zone = document.getElementById('dropzone');
  zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
}"""


def test_documents_drop_several_files_show_their_status_and_are_reindexed_or_deleted(ragline, screen, axe_source):
    page = screen
    kb = ragline.create_kb("handbook")
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}")
    page.wait_for_selector("#dropzone")
    files = [
        (
            f"notes-{i}.md",
            f"# Notes {i}\n\n## Boilers\n\nThe boiler runs at 1.{i} bar.\n\n## Grinders\n\nBurr grinders {i}.\n",
        )
        for i in range(4)
    ]
    page.evaluate(
        """() => { window.uploading = 0; window.most = 0;
          new MutationObserver(() => {
            const n = document.querySelectorAll('.upload-row[data-state="uploading"], .upload-row[data-state="reading"]').length;
            window.most = Math.max(window.most, n);
          }).observe(document.getElementById('kb-detail'), { subtree: true, attributes: true, childList: true }); }"""
    )
    page.evaluate(DROP, [files])
    page.wait_for_function(
        "() => document.querySelectorAll('.upload-row[data-state=\"done\"]').length === 4", timeout=WAIT_MS
    )
    assert page.evaluate("window.most") >= 2  # uploaded side by side, not one after another
    docs = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"]
    assert sorted(d["filename"] for d in docs) == [name for name, _ in files]
    page.wait_for_function(
        "() => document.querySelectorAll('#documents tr[data-document-id]').length === 4 && "
        "[...document.querySelectorAll('#documents td.doc-status')].every((c) => c.dataset.status === 'indexed')",
        timeout=2 * WAIT_MS,
    )
    # Each row: status, size, pages, chunks as the API reports them.
    first = docs[0]
    row = page.locator(f'#documents tr[data-document-id="{first["id"]}"]')
    assert row.locator("td.doc-chunks").inner_text() == str(first["chunk_count"])
    assert row.locator("td.doc-size").inner_text().endswith(" B")
    assert row.locator("td.doc-pages").inner_text() == "—"
    # A failed document says why.
    tenant = ragline.container.tenants.for_key(ragline.key)
    from ragline.store.models import DocumentStatus

    ragline.container.knowledge.set_document_status(
        tenant.id, docs[1]["id"], DocumentStatus.FAILED, reason="the embedding endpoint refused the batch"
    )
    page.reload()
    failed = page.locator(f'#documents tr[data-document-id="{docs[1]["id"]}"] td.doc-status')
    failed.wait_for()
    assert failed.get_attribute("data-status") == "failed"
    assert "the embedding endpoint refused the batch" in failed.inner_text()
    no_horizontal_scroll(page)
    check_accessibility(page, axe_source, "documents")
    shot(page, "5a", "documents-status-size-pages-chunks")

    # Re-index the failed one: parsed again, indexed again.
    page.locator(f'#documents tr[data-document-id="{docs[1]["id"]}"] [data-action="reindex"]').click()
    page.wait_for_function(
        "(id) => document.querySelector(`#documents tr[data-document-id='${id}'] td.doc-status`).dataset.status === 'indexed'",
        arg=docs[1]["id"],
        timeout=2 * WAIT_MS,
    )
    assert ragline.client.get(f"/api/v1/knowledge/{docs[1]['id']}").json()["data"]["status"] == "indexed"
    # The chunk list numbers passages once each and counts what it shows.
    page.locator(f'#documents tr[data-document-id="{first["id"]}"] button.link').click()
    page.wait_for_selector("#chunks .chunk")
    labels = [t.split(" · ")[0] for t in page.locator("#chunks .chunk-meta").all_inner_texts()]
    passages = [label for label in labels if label.startswith("Passage")]
    assert passages == [f"Passage {i + 1}" for i in range(len(passages))]
    shown = page.locator("#chunks .chunk").count()
    count_text = page.locator("#chunks .chunk-count").inner_text()
    numbers = [int(n) for n in re.findall(r"\d+", count_text)]
    assert sum(numbers) == shown, (count_text, shown)
    # Delete one, after a confirmation.
    page.locator(f'#documents tr[data-document-id="{docs[3]["id"]}"] [data-action="delete"]').click()
    page.wait_for_selector("#confirm-dialog[open]")
    page.click("#confirm-ok")
    page.wait_for_function("() => document.querySelectorAll('#documents tr[data-document-id]').length === 3")
    assert ragline.client.get(f"/api/v1/knowledge/{docs[3]['id']}").status_code == 404
    no_page_errors(page)


def test_knowledge_base_rename_describe_delete_and_search_page(ragline, screen, axe_source):
    page = screen
    kb = ragline.create_kb("drinks", DRINKS)
    doomed = ragline.create_kb("doomed")
    open_app(page, ragline.url, ragline.key, f"/kb/{kb}")
    page.wait_for_selector("#kb-rename")
    page.click("#kb-rename")
    page.fill("#kb-edit-name", "beverages")
    page.fill("#kb-edit-description", "Coffee and tea, brewed right")
    page.click("#kb-edit button[type=submit]")
    page.wait_for_function("() => document.querySelector('#kb-detail h1').textContent === 'beverages'")
    stored = ragline.client.get(f"/api/v1/knowledge-bases/{kb}").json()["data"]
    assert (stored["name"], stored["description"]) == ("beverages", "Coffee and tea, brewed right")
    assert page.locator(".kb-description").inner_text() == "Coffee and tea, brewed right"

    # The search page: ranked passages with their scores, as the knowledge-search API ranks them.
    page.click("#kb-search-tab")
    page.fill("#kb-search-query", "water temperature for coffee")
    page.click("#kb-search button[type=submit]")
    page.wait_for_selector('#kb-search-results[data-state="done"] .hit')
    expected = ragline.client.post(
        "/api/v1/knowledge-search",
        json={"query": "water temperature for coffee", "knowledge_base_ids": [kb], "top_k": 10},
    ).json()["data"]
    hits = page.locator(".hit")
    assert hits.count() == len(expected)
    assert [hits.nth(i).get_attribute("data-chunk-id") for i in range(hits.count())] == [e["id"] for e in expected]
    assert hits.first.locator('.score[data-score="score"]').inner_text() == f"score {expected[0]['score']:.3f}"
    assert hits.first.locator(".hit-title").inner_text() == expected[0]["knowledge_title"]
    no_horizontal_scroll(page)
    check_accessibility(page, axe_source, "search results")
    shot(page, "6a", "knowledge-base-search-scores")
    hits.first.locator(".hit-title").click()
    page.wait_for_selector(f'#source-dialog[open][data-chunk-id="{expected[0]["id"]}"][data-state="loaded"]')
    page.click("#source-close")

    # Delete a knowledge base, after a confirmation.
    page.evaluate(f"() => {{ location.hash = '#/kb/{doomed}'; }}")
    page.wait_for_function("() => document.querySelector('#kb-detail h1').textContent === 'doomed'")
    page.click("#kb-delete")
    page.wait_for_selector("#confirm-dialog[open]")
    check_accessibility(page, axe_source, "delete knowledge base")
    shot(page, "6b", "delete-knowledge-base-confirmation")
    page.click("#confirm-ok")
    page.wait_for_function("() => location.hash === '#/kb'")
    assert ragline.client.get(f"/api/v1/knowledge-bases/{doomed}").status_code == 404
    no_page_errors(page)


# 5. Options, the answering model, suggestions ------------------------------------------------------------------------
def test_session_options_are_sent_and_remembered_the_model_shows_and_suggestions_start_a_session(
    ragline, scripted, screen, axe_source
):
    page = screen
    kb = ragline.create_kb("drinks", DRINKS)
    other = ragline.create_kb("empty")
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda request: bodies.append(request.post_data_json) if request.url.endswith("/questions") else None,
    )
    open_app(page, ragline.url, ragline.key)
    # The answering model, in the header.
    model = next(
        m for m in ragline.client.get("/api/v1/models").json()["data"] if m["type"] == "KnowledgeQA" and m["is_default"]
    )
    page.wait_for_selector("#model-badge:not([hidden])")
    assert page.locator("#model-badge").inner_text() == model["name"]
    # The server describes the model in English; the page names its kind in the page's language.
    assert model["kind"] == "endpoint"
    title = page.get_attribute("#model-badge", "title") or ""
    assert f"{model['name']} — An OpenAI-compatible endpoint" in title, title
    # Suggested first questions from the titles and headings.
    page.uncheck(f'#kb-choice input[value="{other}"]')
    page.wait_for_selector("#suggestions:not([hidden]) .suggestion")
    suggestions = page.locator(".suggestion").all_inner_texts()
    assert suggestions == [
        s["question"] for s in ragline.client.get(f"/api/v1/knowledge-bases/{kb}/suggested-questions").json()["data"]
    ]
    check_accessibility(page, axe_source, "new session with suggestions")
    shot(page, "7a", "new-session-suggestions-model")
    page.locator(".suggestion").first.click()
    session = session_of(page)
    wait_answered(page, 1)
    assert bodies[-1]["query"] == suggestions[0]

    # Options for this session: sent with each question, remembered after a reload.
    page.click("#options-button")
    page.wait_for_selector("#options-dialog[open]")
    page.select_option("#opt-enable_rewrite", "false")
    page.select_option("#opt-citation_enabled", "false")
    page.fill("#opt-embedding_top_k", "5")
    page.fill("#opt-temperature", "0.2")
    page.uncheck(f'#options-kb-list input[value="{kb}"]')
    page.check(f'#options-kb-list input[value="{other}"]')
    check_accessibility(page, axe_source, "options dialog")
    shot(page, "7b", "session-options")
    page.click("#options-form button[type=submit]")
    assert page.locator("#options-button").inner_text() == "Options · 5"
    page.reload()
    wait_answered(page, 1)
    assert page.locator("#options-button").inner_text() == "Options · 5"
    ask(page, "What about tea?")
    wait_answered(page, 2)
    sent = bodies[-1]
    assert sent == {
        "query": "What about tea?",
        "enable_rewrite": False,
        "citation_enabled": False,
        "embedding_top_k": 5,
        "temperature": 0.2,
        "knowledge_base_ids": [other],
    }
    # Another session has its own (none).
    page.click("#new-session") if not phone(page) else (open_drawer(page), page.click("#new-session"))
    page.wait_for_function("() => location.hash === '#/' || location.hash === ''")
    # The hash changes before the new session's options are drawn: wait for the button, not the address.
    page.wait_for_function("() => document.querySelector('#options-button').innerText.trim() === 'Options'")
    assert page.locator("#options-button").inner_text() == "Options"
    assert session
    no_page_errors(page)


# 6. Errors that say what to do, the favicon ------------------------------------------------------------------------------
def test_unreachable_api_points_to_settings_and_a_wrong_key_reopens_the_key_dialog(ragline, screen, axe_source):
    page = screen
    anonymous = httpx.Client(base_url=ragline.url, timeout=CLIENT_TIMEOUT)
    icon = anonymous.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.content.startswith(b"<svg")
    index = anonymous.get("/").text
    assert '<link rel="icon" href="/static/favicon.svg"' in index
    anonymous.close()
    favicons: list[int] = []
    page.on("response", lambda r: favicons.append(r.status) if "favicon" in r.url else None)

    # A wrong key: the key dialog again, with a plain message, and nothing raw behind it.
    page.goto(f"{ragline.url}/")
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", "rl-not-the-key")
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#key-dialog[open] #key-message:not([hidden])")
    message = page.locator("#key-message").inner_text()
    assert message.startswith("That API key was not accepted.")
    assert page.locator("#composer-error").is_hidden()
    assert page.locator("#session-title").inner_text() in ("New session", "Loading…")
    check_accessibility(page, axe_source, "wrong key")
    shot(page, "8a", "wrong-key-dialog")
    page.fill("#key-input", ragline.key)
    page.click("#key-form button[type=submit]")
    page.wait_for_function("() => !document.getElementById('key-dialog').open")
    page.wait_for_selector("#kb-choice", state="attached")

    # An unreachable API: a banner saying so, with a way to Settings.
    closed = _closed_port_url()
    page.evaluate(f"() => localStorage.setItem('ragline.apiBase', '{closed}')")
    page.reload()
    page.wait_for_selector("#global-error:not([hidden])")
    banner = page.locator("#global-error").inner_text()
    assert f"Cannot reach the API at {closed}" in banner
    assert "Settings" in banner
    assert page.locator("#session-title").inner_text() == "Cannot reach the API"
    assert page.locator("#composer-error").is_hidden()
    assert in_viewport(page, "#global-error-settings")
    check_accessibility(page, axe_source, "unreachable API")
    shot(page, "8b", "unreachable-api-banner")
    page.click("#global-error-settings")
    page.wait_for_selector("#settings-dialog[open]")
    assert page.input_value("#api-base") == closed
    page.fill("#api-base", "")
    page.click("#settings-form button[type=submit]")
    page.wait_for_selector("#global-error", state="hidden")
    assert 404 not in favicons
    no_page_errors(page)


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


WEB = Path("layers/core/ragline/server/web")
