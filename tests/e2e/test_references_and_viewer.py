"""Reference cards and the source viewer in headless Chromium.

One card per document, numbered as the answer cites it, listing the passages it cites (marked, first) and
the ones it does not; chips of one document share its number; the viewer highlights the cited sentence,
shows the chunks around it and where it sits (section, page).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import CHROMIUM, screenshot
from tests.e2e.test_chat_page import ask, assert_no_page_errors, last_turn, open_chat
from tests.support.polling import wait_until
from tests.support.scripted_model import Piece, Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

PARAGRAPHS = [
    "Brew coffee with water between 90 and 96 degrees Celsius. Boiling water extracts bitter compounds "
    "from the grounds, and water that is too cool leaves the cup sour and thin.",
    "Espresso needs a fine grind and a French press needs a coarse one. A burr grinder gives even particles, "
    "which extract evenly; a blade grinder leaves dust and boulders side by side.",
    "Store beans in an airtight container away from light. Whole beans keep their aroma for about a month "
    "after roasting; ground coffee loses most of it within a day.",
]
COFFEE = "# Coffee handbook\n\n## Brewing\n\n" + "\n\n".join(PARAGRAPHS)
TEA = "# Tea basics\n\nGreen tea is brewed at 70 to 80 degrees Celsius for two to three minutes."


def test_one_card_per_document_chips_numbered_by_document_and_the_viewer_highlights_the_claim(ragline, scripted, page):
    kb = ragline.create_kb("drinks", {"Coffee handbook": COFFEE, "Tea basics": TEA})
    scripted.queue(
        Script(
            [
                Piece(content="Use water between 90 and 96 degrees Celsius."),
                Piece(content='<ref id="c1"/>'),
                Piece(content=" A burr grinder gives even particles."),
                Piece(content='<ref id="c1"/>'),
            ]
        )
    )
    open_chat(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    ask(page, "How should I brew coffee, and which grinder?")
    wait_until(lambda: (last_turn(page) or {}).get("state") == "complete")

    references = ragline.messages(page.url.split("/s/")[-1])[-1]["knowledge_references"]
    documents = {r["knowledge_id"] for r in references}
    chips = page.locator(".turn .answer button.cite")
    assert chips.count() == 2
    numbers = [chips.nth(i).locator(".cite-n").inner_text() for i in range(2)]
    chip_documents = [
        ragline.client.get(f"/api/v1/chunks/by-id/{chips.nth(i).get_attribute('data-chunk-id')}").json()["data"][
            "knowledge_id"
        ]
        for i in range(2)
    ]
    # Numbered by document: the same number exactly when the two chips cite the same document.
    assert numbers[0] == "1"
    assert (numbers[0] == numbers[1]) == (chip_documents[0] == chip_documents[1])
    page.click(".turn .references .ref-toggle")  # collapsed until opened
    cards = page.locator(".turn .references li.ref-card")
    assert cards.count() == len(documents)  # one card per document, not per passage
    cited_cards = page.locator(".turn .references li.ref-card.cited")
    assert cited_cards.count() == len(set(chip_documents))
    assert cited_cards.nth(0).locator(".ref-n").inner_text() == "1"  # cited cards first, in citation order
    cited_chunks = {
        chips.nth(i).get_attribute("data-chunk-id") for i in range(2) if chip_documents[i] == chip_documents[0]
    }
    assert cited_cards.nth(0).locator("button.ref.cited").count() == len(cited_chunks)
    heading = page.locator(".turn .references h2").inner_text()
    total = f"{len(documents)} document{'s' if len(documents) > 1 else ''}"
    assert heading == f"References · {len(set(chip_documents))} of {total} cited"
    screenshot(page, "12a-reference-cards-by-document")

    # The first chip: its chunk with the claim highlighted word for word, and where the chunk sits.
    chips.nth(0).click()
    page.wait_for_selector('#source-dialog[open][data-state="loaded"]')
    mark = page.locator("#source-text mark.claim")
    assert mark.count() == 1
    assert "90 and 96 degrees Celsius" in mark.inner_text()
    assert "Brewing" in page.locator("#source-meta").inner_text()
    page.wait_for_function("() => document.querySelector('#source-dialog').dataset.neighbours !== undefined")
    neighbours = int(page.locator("#source-dialog").get_attribute("data-neighbours") or "0")
    chunk = ragline.client.get(f"/api/v1/chunks/by-id/{chips.nth(0).get_attribute('data-chunk-id')}").json()["data"]
    expected = int(bool(chunk["pre_chunk_id"])) + int(bool(chunk["next_chunk_id"]))
    assert neighbours == expected
    if chunk["next_chunk_id"]:
        assert not page.locator("#source-after").is_hidden()
    screenshot(page, "12b-viewer-highlights-the-cited-sentence")
    page.click("#source-close")

    # A paraphrased claim (a generated answer) highlights the chunk's best-matching sentence.
    highlighted = page.evaluate(
        """async () => {
          const { highlightRange } = await import('/static/viewer.js');
          const content = 'Store beans in an airtight container. Whole beans keep their aroma for a month.';
          const range = highlightRange(content, 'Beans stay aromatic for about a month when whole.');
          return range ? content.slice(range[0], range[1]) : null;
        }"""
    )
    assert highlighted == "Whole beans keep their aroma for a month."
    # An exact part quoted from a sentence ("a month", as an extractive answer to "how long") highlights
    # that sentence.
    part = page.evaluate(
        """async () => {
          const { highlightRange } = await import('/static/viewer.js');
          const content = 'Store beans in an airtight container. Whole beans keep their aroma for a month.';
          const range = highlightRange(content, 'a month');
          return range ? content.slice(range[0], range[1]) : null;
        }"""
    )
    assert part == "Whole beans keep their aroma for a month."
    assert_no_page_errors(page)
