"""Images as knowledge: image uploads, and the pictures inside PDF, Word and PowerPoint files.

Each image becomes one ``image_ocr`` chunk whose content is the text OCR read in it (and a caption, where a
captioner is configured), with the page or slide it is on and ``image_info`` as the reference design has it
(``url``, ``ocr_text``, ``caption``). The image itself is kept beside the document's original under a stable
``resource://images/<document>/<n>`` handle, which the model sees as a ``res://NNNN`` alias.

An image upload is checked by its bytes, never its name: PNG, JPEG, WebP or GIF, at most 5 MB, at least
32×32 pixels, at most 40 megapixels, readable; anything else is refused (:class:`BadImage`, a 4xx naming
the field). An image inside a document that fails the same checks is skipped and counted by reason (a
document is not refused for its logo); so are repeats of one picture and images past the per-document limit.
A PDF page without a text layer (a scan) is rendered whole and read as one image.

An image without text is kept (its picture may matter to a person or a vision model) but is not searchable.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ragline.files.reading import UnsupportedFile, UnsupportedFileType
from ragline.models.ocr import ImageCaptioner, OcrEngine
from ragline.store.ids import new_id
from ragline.store.models import Chunk
from ragline.store.originals import OriginalStore
from ragline.types import ChunkType

logger = logging.getLogger(__name__)

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MIN_SIDE = 32
MAX_PIXELS = 40_000_000
MAX_IMAGES_PER_DOCUMENT = 100
# Scanned PDF pages are rendered at 144 dpi (PDF points × 2), the longer side capped for the recogniser.
SCAN_SCALE = 2.0
SCAN_MAX_SIDE = 2400
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
RESOURCE_PREFIX = "resource://images/"
_RESOURCE = re.compile(r"resource://images/([A-Za-z0-9_-]+)/(\d+)")

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff(raw: bytes) -> str | None:
    """The media type by the file's first bytes (PNG, JPEG, WebP, GIF), None for anything else."""
    for magic, media_type in _MAGIC:
        if raw.startswith(magic):
            return media_type
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


class BadImage(UnsupportedFile):
    """An image that cannot be taken: ``reason`` is a short code, the message names ``field``."""

    def __init__(self, reason: str, message: str, field: str = "file") -> None:
        """A refusal for ``reason`` (a short code), its message prefixed with the field it names."""
        super().__init__(f"{field}: {message}")
        self.reason = reason
        self.field = field


class ImagesNotRead(UnsupportedFileType):
    """Images are not read by this deployment (OCR not installed, or ``ingestion.ocr`` off)."""


class _Cancel(Protocol):
    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class ImageFacts:
    """What the checks learnt of an image: its media type and its size in pixels."""

    media_type: str
    width: int
    height: int


def inspect(raw: bytes, field: str = "file", *, any_format: bool = False) -> ImageFacts:
    """Checks an image (see the module) and returns its type and size; :class:`BadImage` when it fails.

    ``any_format``: another format Pillow reads (BMP, TIFF in a document) passes, as ``image/png``.
    """
    if len(raw) > MAX_IMAGE_BYTES:
        raise BadImage("too_large", f"the image is {len(raw)} bytes; the limit is {MAX_IMAGE_BYTES}", field)
    media_type = sniff(raw)
    if media_type is None and not any_format:
        raise BadImage("not_an_image", "not a PNG, JPEG, WebP or GIF image (by its content)", field)
    from PIL import Image

    try:
        with Image.open(io.BytesIO(raw)) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise BadImage("too_many_pixels", f"the image has {width}×{height} pixels; at most {MAX_PIXELS}", field)
            image.load()
    except BadImage:
        raise
    except Exception:
        raise BadImage("broken", "the image could not be decoded (damaged or truncated)", field) from None
    if min(width, height) < MIN_SIDE:
        raise BadImage("too_small", f"the image is {width}×{height} pixels; at least {MIN_SIDE}×{MIN_SIDE}", field)
    return ImageFacts(media_type or "image/png", width, height)


def _as_png(raw: bytes) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    with Image.open(io.BytesIO(raw)) as image:
        image.save(out, "PNG")
    return out.getvalue()


@dataclass
class FoundImage:
    """An image found in a document, before it is checked: its bytes, page (1-based; None in Word files)."""

    data: bytes
    page: int | None = None
    scanned_page: bool = False
    # Set when the image was left out before its bytes were read (a reason of ReadImages.skipped).
    skip: str = ""


@dataclass
class DocumentImage:
    """An image as it becomes a chunk."""

    data: bytes
    media_type: str
    width: int
    height: int
    page: int | None = None
    text: str = ""
    caption: str = ""
    confidence: float = 0.0
    scanned_page: bool = False

    @property
    def content(self) -> str:
        """What the chunk holds and search reads: the caption (if any), then the OCR text."""
        return "\n".join(part for part in (self.caption, self.text) if part.strip())

    @property
    def digest(self) -> str:
        """The SHA-256 of the image's bytes (hex)."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class ReadImages:
    """The images of a document that became chunks, and how many were left out, by reason."""

    images: list[DocumentImage] = field(default_factory=list)
    # Images left out, by reason: too_small, too_large, broken, not_an_image, too_many_pixels, duplicate,
    # too_many, unreadable_document.
    skipped: Counter[str] = field(default_factory=Counter)


# Finding images -------------------------------------------------------------------------------------------


def pdf_images(raw: bytes) -> list[FoundImage]:
    """Each page's image objects; a page with images and no text layer rendered whole instead (a scan)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    found: list[FoundImage] = []
    document = pdfium.PdfDocument(raw)
    try:
        for index in range(len(document)):
            page = document[index]
            objects = list(page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3))
            if not objects:
                page.close()
                continue
            textpage = page.get_textpage()
            has_text = bool(textpage.get_text_range().strip())
            textpage.close()
            if not has_text:
                width, height = page.get_size()
                scale = min(SCAN_SCALE, SCAN_MAX_SIDE / max(width, height, 1.0))
                out = io.BytesIO()
                page.render(scale=scale).to_pil().save(out, "PNG")
                found.append(FoundImage(out.getvalue(), index + 1, scanned_page=True))
            else:
                for item in objects:
                    width, height = item.get_px_size()
                    if width * height > MAX_PIXELS:  # not decoded at all: its bitmap alone could exhaust memory
                        found.append(FoundImage(b"", index + 1, skip="too_many_pixels"))
                        continue
                    try:
                        out = io.BytesIO()
                        item.get_bitmap(render=True).to_pil().save(out, "PNG")
                    except Exception:  # an image filter PDFium cannot decode
                        found.append(FoundImage(b"", index + 1, skip="broken"))
                        continue
                    found.append(FoundImage(out.getvalue(), index + 1))
            page.close()
    finally:
        document.close()
    return found


def pdf_page_count(raw: bytes) -> int:
    """How many pages a PDF has (0 when PDFium cannot open it)."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(raw)
    except Exception:
        return 0
    try:
        return len(document)
    finally:
        document.close()


def _blip_targets(archive: object, part: str) -> list[str]:
    """The pictures a Word or PowerPoint part shows (``a:blip r:embed``), in document order."""
    from ragline.ingest import office

    root = office._xml(archive, part)  # type: ignore[arg-type]
    if root is None:
        return []
    rels = office._rels(archive, part)  # type: ignore[arg-type]
    targets = []
    for blip in root.iter(f"{office.A}blip"):
        target = rels.get(blip.get(f"{office.R}embed", ""), "")
        if target:
            targets.append(target)
    return targets


def office_images(file_type: str, raw: bytes) -> list[FoundImage]:
    """Pictures of a DOCX (in document order, no pages) or a PPTX (slide by slide, the slide as the page)."""
    from ragline.ingest import office

    archive = office._archive(raw)
    names = set(archive.namelist())

    def read(target: str, page: int | None) -> FoundImage:
        if archive.getinfo(target).file_size > MAX_IMAGE_BYTES:  # not unpacked: it would be refused anyway
            return FoundImage(b"", page, skip="too_large")
        return FoundImage(archive.read(target), page)

    found: list[FoundImage] = []
    if file_type == "docx":
        found = [read(t, None) for t in _blip_targets(archive, "word/document.xml") if t in names]
    elif file_type == "pptx":
        presentation = office._xml(archive, "ppt/presentation.xml")
        if presentation is None:
            return []
        rels = office._rels(archive, "ppt/presentation.xml")
        slides = [rels[s.get(f"{office.R}id", "")] for s in presentation.iter(f"{office.P}sldId")]
        for number, part in enumerate((s for s in slides if s), start=1):
            found.extend(read(t, number) for t in _blip_targets(archive, part) if t in names)
    return found


def find_images(file_type: str, raw: bytes) -> list[FoundImage]:
    """The pictures of a PDF, DOCX or PPTX file, unchecked; none for other types."""
    if file_type == "pdf":
        return pdf_images(raw)
    if file_type in ("docx", "pptx"):
        return office_images(file_type, raw)
    return []


# Reading them ---------------------------------------------------------------------------------------------


class ImageReader:
    """OCR (and a caption, with a captioner) of image uploads and of the images in documents."""

    def __init__(self, ocr: OcrEngine, captioner: ImageCaptioner | None = None) -> None:
        """A reader over an OCR engine, and a captioner where a vision model is configured."""
        self._ocr = ocr
        self._captioner = captioner

    def _read(self, data: bytes, facts: ImageFacts, page: int | None, scanned: bool = False) -> DocumentImage:
        result = self._ocr.ocr(data)
        caption = self._captioner.caption(data, media_type=facts.media_type) if self._captioner else ""
        return DocumentImage(
            data=data,
            media_type=facts.media_type,
            width=facts.width,
            height=facts.height,
            page=page,
            text=result.text,
            caption=caption.strip(),
            confidence=result.confidence,
            scanned_page=scanned,
        )

    def read_upload(self, raw: bytes, field: str = "file") -> DocumentImage:
        """An image uploaded as a document: checked (:class:`BadImage` naming ``field``), then read."""
        return self._read(raw, inspect(raw, field), page=None)

    def read_document(self, file_type: str, raw: bytes, cancel: _Cancel | None = None) -> ReadImages:
        """The images in a PDF, DOCX or PPTX file, each checked, repeats and those past the limit skipped.

        Stops between two images once ``cancel`` is set (the caller then stores nothing).
        """
        read = ReadImages()
        try:
            found = find_images(file_type, raw)
        except Exception:  # the text extraction reports an unreadable file; its images are simply none
            read.skipped["unreadable_document"] += 1
            return read
        seen: set[str] = set()
        for item in found:
            if cancel is not None and cancel.is_set():
                break
            if item.skip:
                read.skipped[item.skip] += 1
                continue
            digest = hashlib.sha256(item.data).hexdigest()
            if digest in seen:
                read.skipped["duplicate"] += 1
                continue
            seen.add(digest)
            if len(read.images) >= MAX_IMAGES_PER_DOCUMENT:
                read.skipped["too_many"] += 1
                continue
            try:
                facts = inspect(item.data, any_format=True)
            except BadImage as bad:
                read.skipped[bad.reason] += 1
                continue
            data = item.data if sniff(item.data) else _as_png(item.data)
            read.images.append(self._read(data, facts, item.page, item.scanned_page))
        if read.skipped:
            logger.info("document images skipped", extra={"skipped": dict(read.skipped), "kept": len(read.images)})
        return read


# Chunks and storage ---------------------------------------------------------------------------------------


def image_url(document_id: str, number: int) -> str:
    """The stable handle of a document's ``number``-th image (from 1)."""
    return f"{RESOURCE_PREFIX}{document_id}/{number}"


def _storage_id(document_id: str, number: int) -> str:
    return f"{document_id}-image-{number}"


def image_chunks(
    document_id: str, tenant_id: str, knowledge_base_id: str, images: Sequence[DocumentImage], first_index: int
) -> list[Chunk]:
    """One ``image_ocr`` chunk per image, indexed after the text chunks; searchable when it has text."""
    chunks = []
    for number, image in enumerate(images, start=1):
        url = image_url(document_id, number)
        info = {
            "url": url,
            "original_url": url,
            "caption": image.caption,
            "ocr_text": image.text,
            "media_type": image.media_type,
            "width": image.width,
            "height": image.height,
        }
        metadata: dict[str, object] = {"image_info": json.dumps([info], ensure_ascii=False), "image_url": url}
        if image.page is not None:
            metadata["page"] = image.page
        if image.scanned_page:
            metadata["scanned_page"] = True
        chunks.append(
            Chunk(
                id=new_id(),
                tenant_id=tenant_id,
                knowledge_base_id=knowledge_base_id,
                knowledge_id=document_id,
                chunk_index=first_index + number - 1,
                chunk_type=ChunkType.IMAGE_OCR,
                content=image.content,
                metadata=metadata,
                searchable=bool(image.content.strip()),
            )
        )
    return chunks


def save_images(originals: OriginalStore, tenant_id: str, document_id: str, images: Sequence[DocumentImage]) -> None:
    """Each image beside the document's original, under the number its handle carries."""
    for number, image in enumerate(images, start=1):
        originals.save(tenant_id, _storage_id(document_id, number), image.data)


def image_storage_id(url: str) -> str | None:
    """Where a ``resource://images/<owner>/<n>`` handle's bytes are kept in the original store; None for another."""
    match = _RESOURCE.fullmatch(url)
    if match is None:
        return None
    return _storage_id(match.group(1), int(match.group(2)))


def load_image(originals: OriginalStore, tenant_id: str, url: str) -> bytes | None:
    """The bytes behind a ``resource://images/<document>/<n>`` handle; None for another handle or none kept."""
    storage_id = image_storage_id(url)
    return None if storage_id is None else originals.load(tenant_id, storage_id)


def delete_images(originals: OriginalStore, tenant_id: str, document_id: str) -> int:
    """The document's stored images (numbered from 1 without gaps: a stat ends the walk); how many went."""
    number = 1
    while originals.size(tenant_id, _storage_id(document_id, number)) is not None:
        originals.delete(tenant_id, _storage_id(document_id, number))
        number += 1
    return number - 1


def images_digest(images: Sequence[DocumentImage]) -> str:
    """What identifies a document's images in its content hash (the same scan twice is one document)."""
    return "".join(image.digest for image in images)


def save_image(originals: OriginalStore, tenant_id: str, owner_id: str, number: int, data: bytes) -> str:
    """One image kept under ``owner_id`` (a document, or a question's images); its handle."""
    originals.save(tenant_id, _storage_id(owner_id, number), data)
    return image_url(owner_id, number)
