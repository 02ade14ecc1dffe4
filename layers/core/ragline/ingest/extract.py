"""Text out of uploaded files: Markdown and text as they are, PDF with pypdf, HTML with trafilatura.

Both libraries are maintained and need no network: pypdf reads the PDF's text layer (scanned pages have
none, which is reported rather than ingested as an empty document); trafilatura keeps a page's main
content, drops navigation and boilerplate, and returns Markdown so headings still guide chunking.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
TEXT_SUFFIXES = {".txt", ".text", ".rst", ".log", ".json", ".yaml", ".yml"}
PDF_SUFFIXES = {".pdf"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | PDF_SUFFIXES | HTML_SUFFIXES
PAGE_SEPARATOR = "\n\n"


class UnsupportedFile(ValueError):
    """The file's content cannot be ingested (no text layer, not text, unreadable)."""


class UnsupportedFileType(UnsupportedFile):
    """The file's type is not one ragline reads (here: HTTP 415)."""


def require_parser(module: str, file_kind: str) -> None:
    """A file type whose parser this installation leaves out (an AWS Lambda layer held to its size limit)
    is refused as a type, naming the type and why, instead of failing as an internal error."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise UnsupportedFileType(
            f"{file_kind} files are not accepted by this deployment: their parser ({module}) is not installed "
            "here (the AWS Lambda layers leave it out to stay within Lambda's size limit); upload the text "
            "instead, or use the embedded runtime"
        )


@dataclass
class Extracted:
    text: str
    file_type: str  # "markdown" or "text": how the chunker reads it
    title: str = ""
    # Character offset where each page starts (PDF), so chunks can say which page they come from.
    page_starts: list[int] = field(default_factory=list)

    def page_of(self, offset: int) -> int | None:
        if not self.page_starts:
            return None
        page = 0
        for index, start in enumerate(self.page_starts):
            if start <= offset:
                page = index
        return page + 1


def decode_text(raw: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            text = raw.decode(encoding)
            if "\x00" not in text:
                return text
        except UnicodeDecodeError:
            continue
    raise UnsupportedFile("file is not UTF-8 or UTF-16 text")


def file_type_for(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    if suffix in (".csv", ".tsv", ".xlsx"):
        raise UnsupportedFileType(f"{suffix} files are tables: ingest them as table documents")
    if suffix in MARKDOWN_SUFFIXES or suffix in HTML_SUFFIXES:
        return "markdown"
    if suffix in TEXT_SUFFIXES or suffix in PDF_SUFFIXES or not suffix:
        return "text"
    raise UnsupportedFileType(f"unsupported file type {suffix!r}; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}")


def extract_pdf(raw: bytes) -> Extracted:
    require_parser("pypdf", "PDF")
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(raw))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        title = str(reader.metadata.title or "").strip() if reader.metadata is not None else ""
    except (PdfReadError, ValueError, KeyError) as exc:
        raise UnsupportedFile(f"the PDF could not be read: {exc}") from None
    if not any(pages):
        raise UnsupportedFile("the PDF has no text layer (scanned pages need OCR first)")
    starts: list[int] = []
    parts: list[str] = []
    offset = 0
    for text in pages:
        starts.append(offset)
        parts.append(text)
        offset += len(text) + len(PAGE_SEPARATOR)
    return Extracted(PAGE_SEPARATOR.join(parts), "text", title, starts)


def extract_html(raw: bytes) -> Extracted:
    require_parser("trafilatura", "HTML")
    import trafilatura

    html = decode_text(raw)
    text = trafilatura.extract(
        html, output_format="markdown", include_tables=True, include_links=False, favor_recall=True
    )
    if not text:
        text = trafilatura.html2txt(html) or ""
    metadata = trafilatura.extract_metadata(html)
    title = (metadata.title if metadata is not None and metadata.title else "") or ""
    if not text.strip():
        raise UnsupportedFile("the HTML page has no readable text")
    return Extracted(text, "markdown", title.strip())


def extract(filename: str, raw: bytes) -> Extracted:
    suffix = Path(filename).suffix.lower()
    if suffix in PDF_SUFFIXES:
        return extract_pdf(raw)
    if suffix in HTML_SUFFIXES:
        return extract_html(raw)
    return Extracted(decode_text(raw), file_type_for(filename))
