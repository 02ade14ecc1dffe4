"""Text out of uploaded files, as Markdown wherever the file has structure.

- Markdown and text as they are;
- PDF through PDFium (:mod:`ragline.ingest.pdf`): sentences joined across line breaks and hyphens, columns
  in reading order, ligatures normalised, headings found by font size, pages remembered;
- Word, PowerPoint and EPUB (:mod:`ragline.ingest.office`): headings, lists and tables kept; a slide is a page;
- HTML through trafilatura: the main content without navigation or boilerplate, as Markdown.

``Extracted.file_type`` is the document's type as users see it (``pdf``, ``docx`` …); whether the chunker
reads the text as Markdown follows from it (:func:`reads_as_markdown`). Scanned pages have no text layer,
which is reported rather than ingested as an empty document.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from ragline.files.reading import NoText, UnsupportedFile, UnsupportedFileType, decode_text, require_parser

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}
TEXT_SUFFIXES = {".txt", ".text", ".rst", ".log", ".json", ".yaml", ".yml"}
PDF_SUFFIXES = {".pdf"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
OFFICE_SUFFIXES = {".docx": "docx", ".pptx": "pptx", ".epub": "epub"}
# Office formats read through another: named in the refusal with what to save them as.
NOT_READ_DIRECTLY = frozenset({".doc", ".ppt", ".odt", ".odp", ".rtf"})
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | PDF_SUFFIXES | HTML_SUFFIXES | set(OFFICE_SUFFIXES)
# Types whose extracted text is Markdown (headings guide chunking); "text" is read as plain paragraphs.
MARKDOWN_FILE_TYPES = frozenset({"markdown", "html", "pdf", "docx", "pptx", "epub"})
PAGE_SEPARATOR = "\n\n"


def require_reader(filename: str) -> str:
    """The file's type, once its type is known and its parser installed (UnsupportedFileType otherwise).

    A file can be refused before it is sent (a presigned upload), not only once it is read.
    """
    file_type = file_type_for(filename)
    if file_type == "pdf":
        require_parser("pypdfium2", "PDF")
    elif file_type in ("html", "epub"):
        require_parser("trafilatura", "HTML" if file_type == "html" else "EPUB")
    return file_type


def reads_as_markdown(file_type: str) -> bool:
    """True for file types whose text is read as Markdown (headings become sections)."""
    return file_type in MARKDOWN_FILE_TYPES


@dataclass
class Extracted:
    """A file's text with its type, its title and where each page or slide starts."""

    text: str
    file_type: str  # "markdown", "text", "pdf", "html", "docx", "pptx" or "epub"
    title: str = ""
    # Character offset where each page (PDF) or slide (PPTX) starts, so chunks can say where they come from.
    page_starts: list[int] = field(default_factory=list)

    def page_of(self, offset: int) -> int | None:
        """The 1-based page (or slide) holding character ``offset``; None for a text without pages."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))


def file_type_for(filename: str) -> str:
    """The file type read from the name's extension; :class:`UnsupportedFileType` names what to do instead."""
    suffix = Path(filename).suffix.lower()
    if suffix in (".csv", ".tsv", ".xlsx"):
        raise UnsupportedFileType(f"{suffix} files are tables: ingest them as table documents")
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in PDF_SUFFIXES:
        return "pdf"
    if suffix in OFFICE_SUFFIXES:
        return OFFICE_SUFFIXES[suffix]
    if suffix in TEXT_SUFFIXES or not suffix:
        return "text"
    if suffix in NOT_READ_DIRECTLY:
        raise UnsupportedFileType(f"{suffix} files are not read directly: save the document as .docx, .pptx or PDF")
    raise UnsupportedFileType(f"unsupported file type {suffix!r}; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}")


def extract_pdf(raw: bytes) -> Extracted:
    """A PDF's text layer as Markdown, with its page starts; refused when there is none (a scan)."""
    require_parser("pypdfium2", "PDF")
    from ragline.ingest.pdf import extract_pdf_text

    try:
        pdf = extract_pdf_text(raw)
    except Exception as exc:  # PDFium reports a damaged or encrypted file as PdfiumError
        raise UnsupportedFile(f"the PDF could not be read: {exc}") from None
    if not pdf.text.strip():
        raise NoText("the PDF has no text layer (scanned pages need OCR first)")
    return Extracted(pdf.text, "pdf", pdf.title, pdf.page_starts)


def _html_markdown(html: str) -> tuple[str, str]:
    require_parser("trafilatura", "HTML")
    import trafilatura

    text = trafilatura.extract(
        html, output_format="markdown", include_tables=True, include_links=False, favor_recall=True
    )
    if not text:
        text = trafilatura.html2txt(html) or ""
    metadata = trafilatura.extract_metadata(html)
    title = (metadata.title if metadata is not None and metadata.title else "") or ""
    return text, title.strip()


def extract_html(raw: bytes) -> Extracted:
    """An HTML page's readable text as Markdown, with its title."""
    text, title = _html_markdown(decode_text(raw))
    if not text.strip():
        raise UnsupportedFile("the HTML page has no readable text")
    return Extracted(text, "html", title)


def extract_office(kind: str, raw: bytes) -> Extracted:
    """A DOCX, PPTX or EPUB file's text as Markdown; refused when it has none."""
    from ragline.ingest import office

    try:
        if kind == "docx":
            result = office.extract_docx(raw)
        elif kind == "pptx":
            result = office.extract_pptx(raw)
        else:
            title, documents = office.epub_documents(raw)
            chapters = [_html_markdown(decode_text(document))[0] for document in documents]
            result = office.OfficeText("\n\n".join(c.strip() for c in chapters if c.strip()), title)
    except office.OfficeFileError as exc:
        raise UnsupportedFile(f"the {kind.upper()} file could not be read: {exc}") from None
    if not result.text.strip():
        raise NoText(f"the {kind.upper()} file has no text")
    return Extracted(result.text, kind, result.title, result.page_starts)


def extract(filename: str, raw: bytes) -> Extracted:
    """The text of a file by its type."""
    file_type = file_type_for(filename)
    if file_type == "pdf":
        return extract_pdf(raw)
    if file_type == "html":
        return extract_html(raw)
    if file_type in ("docx", "pptx", "epub"):
        return extract_office(file_type, raw)
    return Extracted(decode_text(raw), file_type)
