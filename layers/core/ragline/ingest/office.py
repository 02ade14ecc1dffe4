"""Word (.docx), PowerPoint (.pptx) and EPUB files as Markdown: headings, lists and tables kept.

All three are ZIP archives of XML, read here with the standard library (``zipfile`` and ElementTree, which
resolves no external entity): python-docx and python-pptx would add lxml and Pillow (~20 MB) to the
Lambda layer to read the same few elements. python-docx and python-pptx still write the test documents.

- DOCX: the body in order; a paragraph whose style is a heading (``Heading 1`` … or an outline level, in any
  language's style names) becomes a Markdown heading, ``Title`` the document title, a numbered or bulleted
  paragraph a list item (indented by its level), a table a Markdown table; soft hyphens vanish.
- PPTX: slides in presentation order, each a section headed by its title (one page per slide, so chunks
  say which slide they come from); text boxes as paragraphs or list items by indent level, tables as
  Markdown tables, speaker notes after the slide's text.
- EPUB: the spine's XHTML documents in reading order, each through the HTML extractor's Markdown.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass, field
from xml.etree import ElementTree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
DC = "{http://purl.org/dc/elements/1.1/}"
OPF = "{http://www.idpf.org/2007/opf}"
CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
MAX_PART_BYTES = 64 * 1024 * 1024  # a part larger than this unpacked is refused (a ZIP bomb, not a document)
_HEADING_STYLE = re.compile(r"^(heading|überschrift|titre|título|titolo|kop|rubrik|заголовок|标题)\s*(\d)$", re.I)


class OfficeFileError(ValueError):
    """The archive is not a readable document of its kind."""


@dataclass
class OfficeText:
    """An Office or EPUB file's text as Markdown, its title and, for slides, where each starts."""

    text: str  # Markdown
    title: str = ""
    page_starts: list[int] = field(default_factory=list)  # PPTX: where each slide starts


def _archive(raw: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise OfficeFileError(f"not a ZIP-based document: {exc}") from None


def _xml(archive: zipfile.ZipFile, name: str) -> ElementTree.Element | None:
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    if info.file_size > MAX_PART_BYTES:
        raise OfficeFileError(f"{name} unpacks to {info.file_size} bytes")
    try:
        return ElementTree.fromstring(archive.read(info))
    except ElementTree.ParseError as exc:
        raise OfficeFileError(f"{name} is not well-formed XML: {exc}") from None


def _clean(text: str) -> str:
    return " ".join(text.replace("\u00ad", "").replace("\u00a0", " ").split())


def _core_title(archive: zipfile.ZipFile) -> str:
    core = _xml(archive, "docProps/core.xml")
    element = core.find(f"{DC}title") if core is not None else None
    return _clean(element.text or "") if element is not None else ""


def _table(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    padded = [[cell.replace("|", "\\|") for cell in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in padded[1:])
    return "\n".join(lines)


# DOCX ---------------------------------------------------------------------------------------------------
def _docx_styles(archive: zipfile.ZipFile) -> dict[str, tuple[str, int | None]]:
    """Style id → (name, outline level 0-based or None), levels inherited through ``basedOn``."""
    root = _xml(archive, "word/styles.xml")
    styles: dict[str, tuple[str, int | None, str]] = {}
    if root is None:
        return {}
    for style in root.iter(f"{W}style"):
        style_id = style.get(f"{W}styleId", "")
        name_el = style.find(f"{W}name")
        name = name_el.get(f"{W}val", "") if name_el is not None else style_id
        level_el = style.find(f"{W}pPr/{W}outlineLvl")
        level = int(level_el.get(f"{W}val", "9")) if level_el is not None else None
        based_el = style.find(f"{W}basedOn")
        styles[style_id] = (name, level, based_el.get(f"{W}val", "") if based_el is not None else "")
    resolved: dict[str, tuple[str, int | None]] = {}
    for style_id, (name, level, parent) in styles.items():
        seen = {style_id}
        while level is None and parent and parent not in seen and parent in styles:
            seen.add(parent)
            level, parent = styles[parent][1], styles[parent][2]
        resolved[style_id] = (name, level if level is not None and level < 9 else None)
    return resolved


def _docx_paragraph_text(paragraph: ElementTree.Element) -> str:
    parts: list[str] = []
    for element in paragraph.iter():
        if element.tag == f"{W}t":
            parts.append(element.text or "")
        elif element.tag == f"{W}tab" or element.tag in (f"{W}br", f"{W}cr"):
            parts.append(" ")
        elif element.tag == f"{W}noBreakHyphen":
            parts.append("-")
    return _clean("".join(parts))


def extract_docx(raw: bytes) -> OfficeText:
    """A Word document's paragraphs and tables as Markdown, headings from its styles."""
    archive = _archive(raw)
    document = _xml(archive, "word/document.xml")
    if document is None:
        raise OfficeFileError("no word/document.xml: not a Word document")
    styles = _docx_styles(archive)
    body = document.find(f"{W}body")
    blocks: list[str] = []
    title = _core_title(archive)
    first_heading = ""
    for element in list(body) if body is not None else []:
        if element.tag == f"{W}tbl":
            rows = [
                [" ".join(_docx_paragraph_text(p) for p in cell.iter(f"{W}p")).strip() for cell in row.iter(f"{W}tc")]
                for row in element.iter(f"{W}tr")
            ]
            table = _table([r for r in rows if any(r)])
            if table:
                blocks.append(table)
            continue
        paragraphs = [element] if element.tag == f"{W}p" else list(element.iter(f"{W}p"))  # w:sdt and the like
        for paragraph in paragraphs:
            text = _docx_paragraph_text(paragraph)
            if not text:
                continue
            style_el = paragraph.find(f"{W}pPr/{W}pStyle")
            style_id = style_el.get(f"{W}val", "") if style_el is not None else ""
            name, level = styles.get(style_id, (style_id, None))
            own_level = paragraph.find(f"{W}pPr/{W}outlineLvl")
            if own_level is not None and own_level.get(f"{W}val", "9").isdigit():
                level = int(own_level.get(f"{W}val", "9"))
                level = level if level < 9 else None
            match = _HEADING_STYLE.match(name.strip())
            if match:
                level = int(match.group(2)) - 1
            if name.lower() in ("title", "titel", "titre", "标题"):
                title = title or text
                blocks.append(f"# {text}")
                first_heading = first_heading or text
                continue
            if level is not None:
                first_heading = first_heading or text
                blocks.append(f"{'#' * min(level + 1, 6)} {text}")
                continue
            numbering = paragraph.find(f"{W}pPr/{W}numPr")
            if numbering is not None or "list" in name.lower():
                indent_el = numbering.find(f"{W}ilvl") if numbering is not None else None
                indent = int(indent_el.get(f"{W}val", "0")) if indent_el is not None else 0
                blocks.append(f"{'  ' * indent}- {text}")
                continue
            blocks.append(text)
    text = _join_blocks(blocks)
    if not text.strip():
        raise OfficeFileError("the Word document has no text")
    return OfficeText(text, title or first_heading)


def _join_blocks(blocks: list[str]) -> str:
    """Blocks separated by blank lines; consecutive list items stay one list."""
    out: list[str] = []
    for block in blocks:
        if out and block.lstrip().startswith("- ") and out[-1].lstrip().startswith("- "):
            out[-1] = f"{out[-1]}\n{block}"
        else:
            out.append(block)
    return "\n\n".join(out)


# PPTX ---------------------------------------------------------------------------------------------------
def _rels(archive: zipfile.ZipFile, part: str) -> dict[str, str]:
    folder, name = posixpath.split(part)
    root = _xml(archive, posixpath.join(folder, "_rels", f"{name}.rels"))
    if root is None:
        return {}
    return {
        rel.get("Id", ""): posixpath.normpath(posixpath.join(folder, rel.get("Target", "")))
        for rel in root.iter(f"{REL}Relationship")
    }


def _pptx_paragraphs(body: ElementTree.Element) -> list[tuple[int, str]]:
    out = []
    for paragraph in body.iter(f"{A}p"):
        text = _clean("".join(t.text or "" for t in paragraph.iter(f"{A}t")))
        if text:
            props = paragraph.find(f"{A}pPr")
            level = int(props.get("lvl", "0")) if props is not None else 0
            out.append((level, text))
    return out


def extract_pptx(raw: bytes) -> OfficeText:
    """A PowerPoint deck's slides as Markdown sections, one per slide, with where each starts."""
    archive = _archive(raw)
    presentation = _xml(archive, "ppt/presentation.xml")
    if presentation is None:
        raise OfficeFileError("no ppt/presentation.xml: not a PowerPoint file")
    rels = _rels(archive, "ppt/presentation.xml")
    slide_parts = [
        rels[sld.get(f"{R}id", "")] for sld in presentation.iter(f"{P}sldId") if sld.get(f"{R}id", "") in rels
    ]
    sections: list[str] = []
    deck_title = _core_title(archive)
    for number, part in enumerate(slide_parts, start=1):
        slide = _xml(archive, part)
        if slide is None:
            continue
        title = ""
        lines: list[str] = []
        for shape in slide.iter():
            if shape.tag == f"{P}sp":
                placeholder = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
                body = shape.find(f"{P}txBody")
                if body is None:
                    continue
                paragraphs = _pptx_paragraphs(body)
                kind = placeholder.get("type", "body") if placeholder is not None else ""
                if kind in ("title", "ctrTitle") and not title:
                    title = " ".join(text for _, text in paragraphs)
                    continue
                bulleted = placeholder is not None and kind in ("body", "obj", "")
                for level, text in paragraphs:
                    lines.append(f"{'  ' * level}- {text}" if bulleted or level > 0 else text)
            elif shape.tag == f"{A}tbl":
                rows = [
                    [" ".join(t for _, t in _pptx_paragraphs(cell)) for cell in row.iter(f"{A}tc")]
                    for row in shape.iter(f"{A}tr")
                ]
                table = _table([r for r in rows if any(r)])
                if table:
                    lines.append(table)
        notes_part = next((t for t in _rels(archive, part).values() if "notesSlide" in t), "")
        notes = _xml(archive, notes_part) if notes_part else None
        if notes is not None:
            note_lines = [
                text
                for shape in notes.iter(f"{P}sp")
                if (ph := shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")) is not None and ph.get("type") == "body"
                for body in [shape.find(f"{P}txBody")]
                if body is not None
                for _, text in _pptx_paragraphs(body)
            ]
            if note_lines:
                lines.append("Notes: " + " ".join(note_lines))
        heading = f"# {title}" if title else f"# Slide {number}"
        deck_title = deck_title or title
        sections.append(_join_blocks([heading, *lines]))
    starts: list[int] = []
    offset = 0
    for section in sections:
        starts.append(offset)
        offset += len(section) + 2
    text = "\n\n".join(sections)
    if not sections:
        raise OfficeFileError("the presentation has no slides")
    return OfficeText(text, deck_title, starts)


# EPUB ---------------------------------------------------------------------------------------------------
def epub_documents(raw: bytes) -> tuple[str, list[bytes]]:
    """The book's title and its spine's XHTML documents in reading order."""
    archive = _archive(raw)
    container = _xml(archive, "META-INF/container.xml")
    rootfile = container.find(f".//{CONTAINER}rootfile") if container is not None else None
    if rootfile is None:
        raise OfficeFileError("no META-INF/container.xml rootfile: not an EPUB")
    opf_path = rootfile.get("full-path", "")
    package = _xml(archive, opf_path)
    if package is None:
        raise OfficeFileError(f"the EPUB's package document {opf_path!r} is missing")
    folder = posixpath.dirname(opf_path)
    manifest = {
        item.get("id", ""): posixpath.normpath(posixpath.join(folder, item.get("href", "")))
        for item in package.iter(f"{OPF}item")
    }
    title_el = package.find(f".//{DC}title")
    documents = []
    for itemref in package.iter(f"{OPF}itemref"):
        path = manifest.get(itemref.get("idref", ""))
        if path is None:
            continue
        try:
            info = archive.getinfo(path)
        except KeyError:
            continue
        if info.file_size <= MAX_PART_BYTES:
            documents.append(archive.read(info))
    return (_clean(title_el.text or "") if title_el is not None else ""), documents
