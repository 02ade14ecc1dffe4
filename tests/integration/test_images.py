"""Images as knowledge, through the embedded HTTP server: image uploads and the pictures in PDF, Word and
PowerPoint files become image chunks whose OCR text search finds; bad images are refused naming the field.

Every image is rendered here (tests/support/images.py); the OCR engine loads once per process.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragline.ingest.images import MAX_IMAGE_BYTES, load_image
from tests.support.documents import DRINKS, make_pdf
from tests.support.images import (
    blank_image,
    cjk_font,
    docx_with_picture,
    latin_font,
    pdf_with_picture,
    pptx_with_picture,
    render_text,
    scanned_pdf,
)
from tests.support.polling import wait_until

MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}


def _font() -> str:
    font = latin_font()
    assert font is not None, "no Latin font on this machine (DejaVu Sans is expected)"
    return font


def upload(ragline: Any, kb: str, filename: str, raw: bytes, media_type: str = "application/octet-stream") -> Any:
    return ragline.client.post(f"/api/v1/knowledge-bases/{kb}/documents", files={"file": (filename, raw, media_type)})


def indexed(ragline: Any, kb: str, reply: Any) -> dict[str, Any]:
    """The uploaded document once its status says indexed (its vectors computed in the background)."""
    assert reply.status_code in (201, 202), reply.text
    url = f"/api/v1/knowledge-bases/{kb}/documents/{reply.json()['data']['id']}"
    return wait_until(lambda: (d := ragline.client.get(url).json()["data"])["status"] == "indexed" and d, timeout=120)


def search(ragline: Any, kb: str, query: str, retrievers: str = "keyword") -> list[dict[str, Any]]:
    body = {"query": query, "knowledge_base_ids": [kb], "retrievers": retrievers, "enable_query_expansion": False}
    reply = ragline.client.post("/api/v1/knowledge-search", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def image_chunks(ragline: Any, kb: str, document_id: str) -> list[dict[str, Any]]:
    reply = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{document_id}/chunks")
    assert reply.status_code == 200, reply.text
    return [c for c in reply.json()["data"] if c["chunk_type"] == "image_ocr"]


def assert_found(ragline: Any, kb: str, document: dict[str, Any], query: str) -> dict[str, Any]:
    """The first hit for ``query`` is the document's image chunk, and shows the query's words."""
    hits = search(ragline, kb, query)
    assert hits, query
    assert (hits[0]["knowledge_id"], hits[0]["chunk_type"]) == (document["id"], "image_ocr"), hits
    content = hits[0]["content"].lower()
    assert all(word in content for word in query.lower().split()), hits[0]
    return hits[0]


@pytest.mark.parametrize(("suffix", "image_format"), [("png", "PNG"), ("webp", "WEBP"), ("gif", "GIF")])
def test_an_uploaded_image_is_found_by_the_text_it_shows(ragline, suffix, image_format):
    kb = ragline.create_kb(f"signs-{suffix}", DRINKS)
    raw = render_text(["Lighthouse opens at dawn", "Ferry ticket 48213"], font=_font(), image_format=image_format)
    # A misleading name: the bytes say what the file is.
    document = indexed(ragline, kb, upload(ragline, kb, f"sign.{suffix}.txt", raw, MEDIA_TYPES[suffix]))
    assert (document["file_type"], document["chunk_count"], document["embedded_count"]) == ("image", 1, 1)
    assert_found(ragline, kb, document, "lighthouse dawn")
    [chunk] = image_chunks(ragline, kb, document["id"])
    [info] = json.loads(chunk["image_info"])
    assert info["url"] == f"resource://images/{document['id']}/1"
    assert (info["width"], info["height"], info["media_type"]) == (*_size(raw), MEDIA_TYPES[suffix])
    assert "48213" in info["ocr_text"]
    assert load_image(_originals(ragline), _tenant(ragline), info["url"]) == raw
    # Found by meaning too, once its vector is in.
    assert search(ragline, kb, "when does the lighthouse open", "vector")[0]["knowledge_id"] == document["id"]


def _size(raw: bytes) -> tuple[int, int]:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(raw)) as image:
        return image.size


def test_a_chinese_jpeg_is_found_by_its_characters(ragline):
    font = cjk_font()
    if font is None:
        pytest.skip("no CJK font on this machine (make test installs fonts-wqy-microhei)")
    kb = ragline.create_kb("harbour")
    raw = render_text(["港口潮汐表", "七号码头黄昏关闭"], font=font, image_format="JPEG")
    document = indexed(ragline, kb, upload(ragline, kb, "潮汐.jpg", raw, "image/jpeg"))
    hit = assert_found(ragline, kb, document, "码头")
    assert hit["content"] == "港口潮汐表\n七号码头黄昏关闭"


def test_the_pictures_in_word_powerpoint_and_pdf_files_are_searchable_with_their_page(ragline):
    kb = ragline.create_kb("manuals", DRINKS)
    font = _font()
    picture = render_text(["Valve torque 35 newton metres"], font=font)
    word = indexed(
        ragline, kb, upload(ragline, kb, "valves.docx", docx_with_picture("Valve servicing notes.", picture))
    )
    assert_found(ragline, kb, word, "torque newton")
    [chunk] = image_chunks(ragline, kb, word["id"])
    assert "page" not in chunk["metadata"]  # Word files have no pages

    slide_picture = render_text(["Boiler pressure limit 6 bar"], font=font)
    deck = pptx_with_picture(["Overview", "Boilers", "Questions"], slide_picture, on_slide=2)
    slides = indexed(ragline, kb, upload(ragline, kb, "boilers.pptx", deck))
    assert_found(ragline, kb, slides, "boiler pressure")
    [chunk] = image_chunks(ragline, kb, slides["id"])
    assert chunk["metadata"]["page"] == 2

    jpeg = render_text(["Coolant flush every 900 hours"], font=font, image_format="JPEG")
    pdf = pdf_with_picture(make_pdf(["Engine maintenance schedule", "Coolant system"]), jpeg, on_page=2)
    printed = indexed(ragline, kb, upload(ragline, kb, "engine.pdf", pdf))
    assert_found(ragline, kb, printed, "coolant flush hours")
    [chunk] = image_chunks(ragline, kb, printed["id"])
    assert chunk["metadata"]["page"] == 2
    # The text layer is read as before, beside the picture.
    assert search(ragline, kb, "maintenance schedule")[0]["chunk_type"] == "text"


def test_an_image_only_pdf_yields_the_text_of_its_pages(ragline):
    kb = ragline.create_kb("scans", DRINKS)
    font = _font()
    pages = [render_text(["Invoice from Northwind"], font=font), render_text(["Total due 1250 euros"], font=font)]
    document = indexed(ragline, kb, upload(ragline, kb, "scan.pdf", scanned_pdf(pages), "application/pdf"))
    assert (document["file_type"], document["pages"]) == ("pdf", 2)
    chunks = image_chunks(ragline, kb, document["id"])
    assert [(c["metadata"]["page"], c["metadata"].get("scanned_page")) for c in chunks] == [(1, True), (2, True)]
    assert_found(ragline, kb, document, "Northwind invoice")
    hit = assert_found(ragline, kb, document, "total due euros")
    assert hit["id"] == chunks[1]["id"]


def test_tiny_and_repeated_pictures_in_a_document_are_skipped_and_the_rest_kept(ragline):
    kb = ragline.create_kb("icons", DRINKS)
    icon = blank_image(16, 16)
    blank = blank_image(200, 120)
    deck = _deck_with_pictures([("Intro", [icon]), ("Logo", [blank]), ("Again", [blank]), ("Plan", [icon])])
    document = indexed(ragline, kb, upload(ragline, kb, "icons.pptx", deck))
    chunks = image_chunks(ragline, kb, document["id"])
    # The icon is too small, the second logo a repeat; the blank picture is kept, without text, unsearchable.
    assert [(c["metadata"]["page"], c["content"], c["searchable"]) for c in chunks] == [(2, "", False)]


def _deck_with_pictures(slides: list[tuple[str, list[bytes]]]) -> bytes:
    import io

    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for title, pictures in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = title
        for picture in pictures:
            slide.shapes.add_picture(io.BytesIO(picture), Inches(1), Inches(2))
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("filename", "raw", "reason"),
    [
        ("broken.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 200, "could not be decoded"),
        ("fake.png", b"this is not a picture at all", "not a PNG, JPEG, WebP or GIF"),
        ("icon.png", None, "at least 32"),
        ("huge.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * MAX_IMAGE_BYTES, "the limit is"),
    ],
)
def test_bad_images_are_refused_naming_the_field(ragline, filename, raw, reason):
    kb = ragline.create_kb("bad")
    raw = raw if raw is not None else blank_image(16, 16)
    reply = upload(ragline, kb, filename, raw, "image/png")
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["field"] == "file"
    assert reason in error["message"]
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"] == []


def test_a_deleted_image_document_takes_its_stored_image_along(ragline):
    kb = ragline.create_kb("gone")
    raw = render_text(["Temporary notice"], font=_font())
    document = indexed(ragline, kb, upload(ragline, kb, "notice.png", raw))
    [chunk] = image_chunks(ragline, kb, document["id"])
    url = json.loads(chunk["image_info"])[0]["url"]
    assert load_image(_originals(ragline), _tenant(ragline), url) == raw
    reply = ragline.client.delete(f"/api/v1/knowledge/{document['id']}")
    assert reply.status_code in (200, 204), reply.text
    assert search(ragline, kb, "temporary notice") == []
    assert load_image(_originals(ragline), _tenant(ragline), url) is None


def _tenant(ragline: Any) -> str:
    return str(ragline.container.tenants.for_key(ragline.key).id)


def _originals(ragline: Any) -> Any:
    """Where the embedded runtime keeps originals, and the images beside them."""
    from ragline.store.originals import FileOriginalStore

    return FileOriginalStore(ragline.container.settings.data_dir / "originals")
