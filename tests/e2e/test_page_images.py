"""Images in the chat page, in headless Chromium: attached by the file picker, by paste and by drop (with the
browser's own DataTransfer), refused in the page when the server would refuse them, sent with the question and
shown in the conversation through GET /api/v1/images (the key as a header, the bytes as a blob: URL); an image
passage found by its OCR text shows its picture in the references and in the source viewer."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest

from tests.e2e.conftest import CHROMIUM, check_accessibility, no_horizontal_scroll, screenshot, shot
from tests.e2e.test_chat_page import ask, assert_no_page_errors, last_turn, open_chat, session_of, stored_assistant
from tests.e2e.test_page_features import in_viewport, open_app
from tests.support.images import latin_font, render_text
from tests.support.polling import wait_until
from tests.support.scripted_model import Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)


def coloured_png(colour: str, width: int = 64, height: int = 48) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "PNG")
    return out.getvalue()


# Builds a File in the page from base64 and hands it over as a paste on the question box or a drop on the
# composer: the same events (and DataTransfer) a real paste or drop makes.
SYNTHETIC = """([kind, name, type, b64]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type }));
  const event = kind === 'paste'
    ? new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true })
    : new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true });
  const target = kind === 'paste' ? document.getElementById('question') : document.getElementById('composer');
  if (kind === 'drop') target.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }));
  return target.dispatchEvent(event) === false;  // true: the page took the files (default prevented)
}"""


def hand_over(page: Any, kind: str, raw: bytes, name: str = "picture.png", media_type: str = "image/png") -> bool:
    return bool(page.evaluate(SYNTHETIC, [kind, name, media_type, base64.b64encode(raw).decode()]))


def rendered(page: Any, selector: str) -> list[dict[str, Any]]:
    """Each matching <img>: its natural width (0 until decoded), its state and its src's scheme."""
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        selector,
        "(imgs) => imgs.map((img) => ({width: img.naturalWidth, state: img.dataset.state || '',"
        " scheme: (img.getAttribute('src') || '').split(':')[0], handle: img.dataset.handle || ''}))",
    )


def test_images_chosen_pasted_and_dropped_reach_the_server_and_show_in_the_conversation(
    ragline, scripted, page, axe_source
):
    picked, pasted, dropped = coloured_png("red"), coloured_png("green", 40, 40), coloured_png("blue", 80, 36)
    scripted.queue(Script.answer("Two coloured rectangles."))
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    open_chat(page, ragline.url, ragline.key)

    page.set_input_files("#attach-input", files=[{"name": "red.png", "mimeType": "image/png", "buffer": picked}])
    page.wait_for_selector("#attachments li.attachment")
    assert hand_over(page, "paste", pasted, "green.png")
    assert hand_over(page, "drop", dropped, "blue.png")
    wait_until(lambda: page.locator("#attachments li.attachment").count() == 3)
    assert all(img["width"] > 0 for img in rendered(page, "#attachments img"))
    check_accessibility(page, axe_source, "three images attached")
    screenshot(page, "14a-composer-with-attached-images")
    page.click("#attachments li.attachment:nth-child(2) .attachment-remove")  # the pasted one goes
    assert page.locator("#attachments li.attachment").count() == 2

    ask(page, "What colours are these?")
    session = session_of(page)
    stored_assistant(ragline, session)
    wait_until(lambda: (last_turn(page) or {}).get("state") == "complete")
    assert page.locator("#attachments li").count() == 0
    assert page.locator("#attachments").is_hidden()

    # The server has the two images, in order, byte for byte.
    [question] = [m for m in ragline.messages(session) if m["role"] == "user"]
    handles = [image["url"] for image in question["images"]]
    assert len(handles) == 2
    served = [ragline.client.get("/api/v1/images", params={"url": url}).content for url in handles]
    assert served == [picked, dropped]

    # The question shows them: the files at once, then the stored images by their handles, as blob: URLs.
    def stored_thumbnails() -> list[dict[str, Any]] | None:
        imgs = rendered(page, ".turn:not([hidden]) .msg.user .user-images img")
        return imgs if [i["handle"] for i in imgs] == handles and all(i["width"] > 0 for i in imgs) else None

    shown = wait_until(stored_thumbnails)
    assert {img["scheme"] for img in shown} == {"blob"}
    assert [img["width"] for img in shown] == [64, 80]

    # Regenerate asks again with the same stored images (by their handles, nothing uploaded again).
    scripted.queue(Script.answer("Red and blue."))
    page.click(".turn .action-regenerate")
    wait_until(lambda: page.locator(".turn-group").first.get_attribute("data-alternatives") == "2")
    wait_until(lambda: len([m for m in ragline.messages(session) if m["role"] == "user"]) == 2)
    again = [m for m in ragline.messages(session) if m["role"] == "user"][-1]
    assert [image["url"] for image in again["images"]] == handles
    wait_until(lambda: ragline.messages(session)[-1]["is_completed"])
    wait_until(lambda: (last_turn(page) or {}).get("state") == "complete")

    # After a reload they come from the stored messages.
    page.reload()
    page.wait_for_selector(".turn:not([hidden]) .msg.user")
    shown = wait_until(stored_thumbnails)
    assert [img["state"] for img in shown] == ["loaded", "loaded"]
    assert page.locator(".turn .msg.user .user-images img").count() == 4  # both answers' questions
    check_accessibility(page, axe_source, "a question with images")
    screenshot(page, "14b-question-with-images")
    # The images were read with the key as a header, never in a URL.
    image_requests = [url for url in requested if "/api/v1/images?" in url]
    assert len(image_requests) >= 2
    assert not [url for url in requested if ragline.key in url]
    assert_no_page_errors(page)


def test_the_page_refuses_what_the_server_would_and_shows_the_servers_refusal_too(ragline, scripted, page):
    open_chat(page, ragline.url, ragline.key)
    error = page.locator("#composer-error")

    # Not an image, whatever its name and type say.
    assert hand_over(page, "drop", b"%PDF-1.7 not a picture", "scan.png")
    page.wait_for_selector("#composer-error:not([hidden])")
    assert "scan.png is not a PNG, JPEG, WebP or GIF image" in error.inner_text()
    assert page.locator("#attachments li").count() == 0

    # Over 5 MB, though it starts like a PNG.
    big = coloured_png("red")[:16] + b"\0" * (5 * 1024 * 1024)
    page.set_input_files("#attach-input", files=[{"name": "huge.png", "mimeType": "image/png", "buffer": big}])
    wait_until(lambda: "huge.png is 5.0 MB; an image may be at most 5 MB" in error.inner_text())
    assert page.locator("#attachments li").count() == 0

    # A fifth image.
    five = [{"name": f"p{i}.png", "mimeType": "image/png", "buffer": coloured_png("red")} for i in range(5)]
    page.set_input_files("#attach-input", files=five)
    wait_until(lambda: "at most 4 images; p4.png was not added" in error.inner_text())
    assert page.locator("#attachments li").count() == 4
    for _ in range(4):
        page.click("#attachments li.attachment .attachment-remove")
    assert page.locator("#attachments").is_hidden()
    assert error.is_hidden()

    # A PNG the page cannot tell is broken (its first bytes are right): the server's 422 is shown as it said it.
    broken = coloured_png("red")[:40]
    page.set_input_files("#attach-input", files=[{"name": "cut.png", "mimeType": "image/png", "buffer": broken}])
    page.wait_for_selector("#attachments li.attachment")
    ask(page, "What is this?")
    page.wait_for_selector("#composer-error:not([hidden])")
    assert "images[0].data" in error.inner_text()
    assert page.locator("#attachments li").count() == 1  # kept, to be removed or replaced

    # A question may be its image alone.
    page.click("#attachments li.attachment .attachment-remove")
    page.set_input_files(
        "#attach-input", files=[{"name": "ok.png", "mimeType": "image/png", "buffer": coloured_png("blue")}]
    )
    page.wait_for_selector("#attachments li.attachment")
    page.fill("#question", "")
    page.click("#ask")
    session = session_of(page)
    wait_until(
        lambda: (
            [(m["content"], len(m["images"])) for m in ragline.messages(session) if m["role"] == "user"] == [("", 1)]
        )
    )
    assert_no_page_errors(page)


def test_an_image_reference_shows_its_picture_in_the_references_and_the_viewer(ragline, scripted, page, axe_source):
    font = latin_font()
    assert font is not None, "no Latin font on this machine (make test installs DejaVu)"
    picture = render_text(["Invoice 48213", "Paid on 3 March"], font=font, size=40)
    kb = ragline.create_kb("scans")
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents?wait=true", files={"file": ("invoice.png", picture, "image/png")}
    )
    assert added.status_code == 201, added.text
    scripted.queue(Script.answer("It was paid on 3 March."))

    open_chat(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    ask(page, "When was invoice 48213 paid?")
    wait_until(lambda: (last_turn(page) or {}).get("state") == "complete")
    page.click(".turn .references .ref-toggle")
    thumbs = wait_until(lambda: [i for i in rendered(page, ".turn .references .ref-images img") if i["width"] > 0])
    assert thumbs[0]["handle"].startswith("resource://images/")
    assert thumbs[0]["scheme"] == "blob"
    references = ragline.messages(session_of(page))[-1]["knowledge_references"]
    assert thumbs[0]["handle"] in {r["chunk_metadata"].get("image_url") for r in references}
    check_accessibility(page, axe_source, "an image reference")
    screenshot(page, "14c-image-reference")

    # The viewer shows the picture above the text OCR read in it.
    page.locator(".turn .references button.ref", has=page.locator(".ref-images")).first.click()
    page.wait_for_selector('#source-dialog[open][data-state="loaded"]')
    shown = wait_until(lambda: [i for i in rendered(page, "#source-images img") if i["width"] > 0])
    assert shown[0]["handle"] == thumbs[0]["handle"]
    assert "48213" in page.locator("#source-text").inner_text()
    screenshot(page, "14d-viewer-shows-the-image")
    page.click("#source-close")

    # The knowledge base's search page and its passages list show the picture too.
    page.goto(f"{ragline.url}/#/kb/{kb}/search")
    page.fill("#kb-search-query", "invoice 48213")
    page.click("#kb-search button[type=submit]")
    wait_until(lambda: [i for i in rendered(page, "#kb-search-results .hit .ref-images img") if i["width"] > 0])
    page.goto(f"{ragline.url}/#/kb/{kb}")
    page.click(".documents-table .doc-title button")
    wait_until(lambda: [i for i in rendered(page, ".chunk-list .ref-images img") if i["width"] > 0])
    assert_no_page_errors(page)


def test_attached_images_fit_the_screen_and_pass_axe(ragline, screen, axe_source):
    page = screen
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector("#question")
    four = [{"name": f"p{i}.png", "mimeType": "image/png", "buffer": coloured_png("red")} for i in range(4)]
    page.set_input_files("#attach-input", files=four)
    wait_until(lambda: page.locator("#attachments li.attachment").count() == 4)
    no_horizontal_scroll(page)
    check_accessibility(page, axe_source, f"four images attached ({page.screen_name})")
    # The composer stays in view with its attachments.
    assert in_viewport(page, "#composer")
    assert in_viewport(page, "#attach")
    shot(page, "14e", "attachments")
    assert_no_page_errors(page)


def test_the_page_reads_image_kinds_by_their_bytes_and_only_follows_image_handles(ragline, page):
    open_chat(page, ragline.url, ragline.key)
    result = page.evaluate(
        """async () => {
          const { sniffImage, imageHandles } = await import('/static/images.js');
          const bytes = (text) => Uint8Array.from(text, (c) => c.charCodeAt(0));
          return {
            kinds: [
              sniffImage(bytes('\\x89PNG\\r\\n\\x1a\\n....')),
              sniffImage(bytes('\\xff\\xd8\\xff\\xe0')),
              sniffImage(bytes('GIF89a......')),
              sniffImage(bytes('RIFF\\x00\\x00\\x00\\x00WEBPVP8 ')),
              sniffImage(bytes('RIFF\\x00\\x00\\x00\\x00WAVEfmt ')),
              sniffImage(bytes('%PDF-1.7')),
            ],
            merged: imageHandles({ chunk_type: 'image_ocr', image_info: JSON.stringify([
              { url: 'resource://images/doc/1' }, { url: 'resource://images/doc/2' }, { url: 'resource://images/doc/1' },
              { url: 'https://tracker.example/pixel.gif' }, { url: 'javascript:alert(1)' },
            ]) }),
            fromMetadata: imageHandles({ chunk_type: 'image_ocr', chunk_metadata: { image_url: 'resource://images/d/3' } }),
            chunk: imageHandles({ metadata: { image_info: '[{"url": "resource://images/c/1"}]' } }),
            broken: imageHandles({ image_info: '[not json' }),
            text: imageHandles({ chunk_type: 'text', content: 'plain' }),
          };
        }"""
    )
    assert result["kinds"] == ["image/png", "image/jpeg", "image/gif", "image/webp", "", ""]
    # Only the API's own handles are fetched (with the key): never a URL a document's metadata could name.
    assert result["merged"] == ["resource://images/doc/1", "resource://images/doc/2"]
    assert result["fromMetadata"] == ["resource://images/d/3"]
    assert result["chunk"] == ["resource://images/c/1"]
    assert result["broken"] == []
    assert result["text"] == []
    assert_no_page_errors(page)
