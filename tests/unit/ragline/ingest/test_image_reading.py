"""Image checks by content, and which pictures of a document become chunks (a recording OCR engine stands in
for the model here; tests/integration/test_images.py runs the real one)."""

from __future__ import annotations

import json

import pytest

from ragline.ingest.images import (
    MAX_IMAGES_PER_DOCUMENT,
    BadImage,
    ImageReader,
    image_chunks,
    inspect,
    sniff,
)
from ragline.models.ocr import OcrLine, OcrResult
from tests.support.documents import make_pdf
from tests.support.images import blank_image, docx_with_picture, pdf_with_picture, scanned_pdf


class CountingOcr:
    """Answers each image with its pixel size as text: which images were read, and in what order."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def ocr(self, image: bytes) -> OcrResult:
        self.calls += 1
        facts = inspect(image, any_format=True)
        box = ((0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0))
        return OcrResult.of([OcrLine(f"{facts.width}x{facts.height}", box, 0.9)])


@pytest.mark.parametrize(
    ("image_format", "media_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp"), ("GIF", "image/gif")],
)
def test_images_are_known_by_their_bytes(image_format, media_type):
    raw = blank_image(40, 40, image_format)
    assert sniff(raw) == media_type
    assert inspect(raw) == inspect(raw, field="images[0]")
    assert (inspect(raw).media_type, inspect(raw).width) == (media_type, 40)


def test_other_bytes_are_not_images():
    for raw in (b"", b"%PDF-1.4", b"RIFF\x00\x00\x00\x00WAVE", b"\x89PNX", blank_image(40, 40, "BMP")):
        assert sniff(raw) is None
        with pytest.raises(BadImage) as refused:
            inspect(raw, field="images[1]")
        assert refused.value.reason == "not_an_image"
        assert str(refused.value).startswith("images[1]: ")
    # Inside a document, another format Pillow reads passes (stored as PNG).
    assert inspect(blank_image(40, 40, "BMP"), any_format=True).media_type == "image/png"


def test_each_check_has_its_reason():
    cases = {
        "too_small": blank_image(31, 200),
        "broken": blank_image(64, 64)[:60],
        "too_large": b"\x89PNG\r\n\x1a\n" + b"\x00" * (5 * 1024 * 1024),
    }
    for reason, raw in cases.items():
        with pytest.raises(BadImage) as refused:
            inspect(raw)
        assert refused.value.reason == reason
        assert refused.value.field == "file"


def test_a_word_file_keeps_one_chunk_per_distinct_picture_and_counts_the_rest():
    ocr = CountingOcr()
    reader = ImageReader(ocr)
    import io

    import docx

    document = docx.Document()
    for picture in (blank_image(120, 80), blank_image(8, 8), blank_image(120, 80), blank_image(90, 60, "JPEG")):
        document.add_picture(io.BytesIO(picture))
    out = io.BytesIO()
    document.save(out)
    read = reader.read_document("docx", out.getvalue())
    assert [image.text for image in read.images] == ["120x80", "90x60"]
    assert dict(read.skipped) == {"too_small": 1, "duplicate": 1}
    assert ocr.calls == 2


def test_pictures_past_the_limit_are_counted_not_read(monkeypatch):
    monkeypatch.setattr("ragline.ingest.images.MAX_IMAGES_PER_DOCUMENT", 2)
    pictures = [blank_image(40 + i, 40) for i in range(4)]
    read = ImageReader(CountingOcr()).read_document("pdf", scanned_pdf(pictures))
    assert [image.page for image in read.images] == [1, 2]
    assert dict(read.skipped) == {"too_many": 2}
    assert MAX_IMAGES_PER_DOCUMENT == 100


def test_a_pdf_page_with_text_gives_its_pictures_and_a_scanned_page_is_read_whole():
    picture = blank_image(200, 100, "JPEG")
    printed = ImageReader(CountingOcr()).read_document("pdf", pdf_with_picture(make_pdf(["a", "b"]), picture, 2))
    assert [(image.page, image.scanned_page) for image in printed.images] == [(2, False)]
    scanned = ImageReader(CountingOcr()).read_document("pdf", scanned_pdf([blank_image(300, 200)]))
    [page] = scanned.images
    assert (page.page, page.scanned_page) == (1, True)
    assert page.width > 300  # rendered at 144 dpi, the picture at 96


def test_an_unreadable_document_has_no_images_and_says_why():
    read = ImageReader(CountingOcr()).read_document("docx", b"PK\x03\x04 not a zip")
    assert (read.images, dict(read.skipped)) == ([], {"unreadable_document": 1})


def test_image_chunks_carry_the_handle_page_and_image_info_and_only_text_is_searchable():
    reader = ImageReader(CountingOcr())
    read = reader.read_document("docx", docx_with_picture("Notes.", blank_image(64, 48)))
    [image] = read.images
    blank = type(image)(data=b"x", media_type="image/png", width=40, height=40, page=3)
    chunks = image_chunks("doc-1", "tenant-1", "kb-1", [image, blank], first_index=5)
    assert [(c.chunk_index, c.chunk_type, c.searchable, c.content) for c in chunks] == [
        (5, "image_ocr", True, "64x48"),
        (6, "image_ocr", False, ""),
    ]
    [info] = json.loads(str(chunks[0].metadata["image_info"]))
    assert info == {
        "url": "resource://images/doc-1/1",
        "original_url": "resource://images/doc-1/1",
        "caption": "",
        "ocr_text": "64x48",
        "media_type": "image/png",
        "width": 64,
        "height": 48,
    }
    assert "page" not in chunks[0].metadata
    assert chunks[1].metadata["page"] == 3


def test_reading_stops_between_two_images_once_cancelled():
    import threading

    cancel = threading.Event()

    class CancellingOcr(CountingOcr):
        def ocr(self, image: bytes) -> OcrResult:
            cancel.set()  # the client goes away while the first image is read
            return super().ocr(image)

    ocr = CancellingOcr()
    read = ImageReader(ocr).read_document("pdf", scanned_pdf([blank_image(40 + i, 40) for i in range(3)]), cancel)
    assert (ocr.calls, len(read.images)) == (1, 1)


def test_oversized_pictures_are_skipped_before_they_are_decoded_or_unpacked(monkeypatch):
    monkeypatch.setattr("ragline.ingest.images.MAX_PIXELS", 150 * 100)
    pdf = pdf_with_picture(make_pdf(["a"]), blank_image(200, 100, "JPEG"), 1)
    read = ImageReader(CountingOcr()).read_document("pdf", pdf)
    assert (read.images, dict(read.skipped)) == ([], {"too_many_pixels": 1})
    monkeypatch.setattr("ragline.ingest.images.MAX_IMAGE_BYTES", 100)
    read = ImageReader(CountingOcr()).read_document("docx", docx_with_picture("Notes.", blank_image(64, 48)))
    assert (read.images, dict(read.skipped)) == ([], {"too_large": 1})


def test_images_are_read_only_where_ocr_is_on():
    from ragline.config import load_config
    from ragline.container import build_image_reader

    config, _ = load_config()
    assert config.ingestion.ocr
    assert isinstance(build_image_reader(config), ImageReader)
    off = config.model_copy(update={"ingestion": config.ingestion.model_copy(update={"ocr": False})})
    assert build_image_reader(off) is None
