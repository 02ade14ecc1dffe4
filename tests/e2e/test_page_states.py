"""Issue 29: axe-core in every state of the page, on both screens, in light and in dark.

Each run drives the page through its states — a new session with suggestions, an answer with a wide code block
and its references open, the source viewer open, the phone drawer open, the documents after an upload, the search
results, the options and settings dialogs, the export menu, a chunk being edited, the tags and FAQ pages — runs axe-core in each (no serious or critical violation; counts by
impact in test-output/axe-counts.jsonl) and saves a screenshot named ``page-29-<screen>-<scheme>-<state>.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import (
    CHROMIUM,
    VIEWPORTS,
    WAIT_MS,
    PageErrors,
    check_accessibility,
    no_horizontal_scroll,
    screenshot,
)
from tests.e2e.test_page_features import DRAWER_IN_PLACE, open_app, wait_answered
from tests.support.scripted_model import Piece, Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

# A document long enough for a cited passage with passages before and after it (the viewer shows them).
GUIDE = {
    "Espresso guide": "\n\n".join(
        [
            "# Espresso guide",
            "## Dose\n\nAn espresso uses 18 grams of finely ground coffee for a double shot. " * 3,
            "## Water\n\nBrew espresso with water at 93 degrees Celsius and nine bars of pressure. " * 3,
            "## Time\n\nA shot runs for 25 to 30 seconds and yields about 36 grams of espresso. " * 3,
        ]
    )
}
WIDE_CODE = "espresso --dose 18g --yield 36g --temperature 93C --pressure 9bar " * 4
ANSWER = [
    "Brew espresso at **93 °C**",
    ' <ref id="c1"/>',
    f".\n\n```sh\n{WIDE_CODE.strip()}\n```\n\nThen taste it.",
]


@pytest.fixture(
    params=[(screen, scheme) for screen in VIEWPORTS for scheme in ("light", "dark")], ids=lambda p: "-".join(p)
)
def themed(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    """A page at one of the two screens, in the light or the dark colour scheme of the system."""
    name, scheme = request.param
    context = browser.new_context(**VIEWPORTS[name], color_scheme=scheme)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.errors = errors  # type: ignore[attr-defined]
    page.screen_name = name  # type: ignore[attr-defined]
    page.scheme = scheme  # type: ignore[attr-defined]
    yield page
    context.close()


def state(page: Any, axe_source: str, name: str) -> None:
    """axe in this state (no serious or critical violation), then its screenshot."""
    check_accessibility(page, axe_source, name)
    screenshot(page, f"page-29-{page.screen_name}-{page.scheme}-{name}")


def test_every_state_passes_axe_on_both_screens_light_and_dark(ragline, scripted, themed, axe_source):
    page = themed
    phone = page.screen_name == "phone"
    kb = ragline.create_kb("espresso", GUIDE)

    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector("#suggestions .suggestion")
    state(page, axe_source, "new-session")

    scripted.queue(Script([Piece(content=piece) for piece in ANSWER]))
    page.fill("#question", "At what temperature should espresso be brewed?")
    page.click("#ask")
    wait_answered(page, 1)
    page.wait_for_selector(".turn .answer pre code[data-highlighted]")  # coloured: axe checks its contrast
    page.click(".turn .references .ref-toggle")
    page.wait_for_selector(".turn .reference-list:not([hidden])")
    no_horizontal_scroll(page)
    state(page, axe_source, "answer-references-open")

    page.click(".turn .answer button.cite")
    page.wait_for_selector('#source-dialog[open][data-state="loaded"]')
    page.wait_for_function("() => document.getElementById('source-dialog').dataset.neighbours === '2'")
    state(page, axe_source, "viewer-open")
    page.click("#source-close")

    if phone:
        page.click("#menu-button")
        page.wait_for_function(DRAWER_IN_PLACE)
        state(page, axe_source, "drawer-open")
        page.keyboard.press("Escape")
        page.wait_for_function("() => !document.body.classList.contains('drawer-open')")

    page.click("#export-button")
    page.wait_for_selector("#export-options:not([hidden])")
    state(page, axe_source, "export-menu")
    page.keyboard.press("Escape")

    page.click("#options-button")
    page.wait_for_selector("#options-dialog[open]")
    state(page, axe_source, "options-dialog")
    page.click("#options-cancel")
    page.click("#settings-button")
    page.wait_for_selector("#settings-dialog[open]")
    state(page, axe_source, "settings-dialog")
    page.click("#settings-cancel")

    page.evaluate(f"() => {{ location.hash = '#/kb/{kb}'; }}")
    page.wait_for_selector("#dropzone")
    page.set_input_files(
        "#kb-files", files=[{"name": "grinder.md", "mimeType": "text/markdown", "buffer": b"# Grinder\n\nBurrs.\n"}]
    )
    page.wait_for_selector('.upload-row[data-state="done"]')
    page.wait_for_function("() => document.querySelectorAll('#documents tr[data-document-id]').length === 2")
    state(page, axe_source, "documents-uploaded")

    page.locator("#documents button.link").first.click()
    page.locator('#chunks button[data-action="edit-chunk"]').first.click()
    state(page, axe_source, "chunk-edit")

    ragline.client.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "dose", "color": "#1e7a3c"})
    page.evaluate(f"() => {{ location.hash = '#/kb/{kb}/tags'; }}")
    page.wait_for_selector("#tag-list .tag-item")
    state(page, axe_source, "kb-tags")
    ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/faq/entry",
        json={"standard_question": "How hot?", "answers": ["93 °C."], "similar_questions": ["Water temperature?"]},
    )
    page.evaluate(f"() => {{ location.hash = '#/kb/{kb}/faq'; }}")
    page.wait_for_selector("#faq-list .faq-item")
    state(page, axe_source, "kb-faq")

    page.evaluate(f"() => {{ location.hash = '#/kb/{kb}/search'; }}")
    page.fill("#kb-search-query", "espresso water temperature")
    page.click("#kb-search button[type=submit]")
    page.wait_for_selector('#kb-search-results[data-state="done"] .hit')
    state(page, axe_source, "search-results")
    assert not page.errors, page.errors
