"""PDF text as a reader reads it: sentences whole, columns in order, headings as headings, pages counted.

The text layer comes from PDFium (``pypdfium2``: a prebuilt wheel, no system library; chosen by measurement
over pypdf and pdfminer.six, see the README). PDFium gives each character with its box, font size and weight;
from those this module rebuilds what the PDF only draws:

- **lines and columns**: characters are grouped into line segments (a wide gap on one baseline splits a
  line); on a page with a clear gutter the left column is read before the right one, band by band between
  full-width lines (titles), whatever order the producer wrote them in;
- **paragraphs**: consecutive lines join with a space; a larger vertical gap, a change of font size, a
  bullet, or a short line ending a sentence starts a new paragraph; a paragraph cut by a page or column break
  continues when the next line does not start one;
- **hyphenation**: a word broken at the end of a line by a hyphen is joined (``electro-`` + ``magnetic``);
  soft hyphens and PDFium's hyphen markers vanish;
- **Unicode**: ligatures (ﬁ, ﬂ, ﬀ, ﬃ …) and presentation forms become the letters they stand for (NFKC on
  those blocks only: full-width CJK punctuation is kept);
- **structure**: paragraphs in a font clearly larger than the body text become Markdown headings (levels by
  size), bold short lines become the lowest level, bullets become ``-`` items; running headers, footers and
  page numbers repeated across pages are dropped;
- **title**: the metadata title unless it is empty or a producer's placeholder (``about:blank``, a file
  name), else the first heading.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

SOFT_HYPHENS = "\u00ad\ufffe\x02"
LINE_END_HYPHENS = "-\u2010\u2011" + SOFT_HYPHENS
BULLETS = "•◦▪▫‣∙·●○■□➢➤►▶\uf0b7\uf0a7\uf076\uf0d8"
_TERMINAL = tuple(".!?:;。！？；：")
_JUNK_TITLE = re.compile(
    r"^(about:blank|untitled|document\d*|microsoft word - .*|.*\.(html?|pdf|docx?|odt|rtf|txt|md|pptx?))$",
    re.IGNORECASE,
)
_PAGE_NUMBER = re.compile(r"^(page\s*)?[-–—]?\s*\d{1,4}\s*[-–—]?(\s*(/|of)\s*\d{1,4})?$", re.IGNORECASE)


def normalize_presentation_forms(text: str) -> str:
    """Ligatures and presentation forms (U+FB00–FDFF, U+FE70–FEFF) to the characters they stand for."""
    if not any("\ufb00" <= ch <= "\ufdff" or "\ufe70" <= ch <= "\ufeff" for ch in text):
        return text
    return "".join(
        unicodedata.normalize("NFKC", ch) if "\ufb00" <= ch <= "\ufdff" or "\ufe70" <= ch <= "\ufefe" else ch
        for ch in text
    ).replace("\ufeff", "")


def clean_text(text: str) -> str:
    """Presentation forms normalised, soft hyphens dropped, odd spaces made plain spaces."""
    text = normalize_presentation_forms(text)
    for ch in SOFT_HYPHENS:
        text = text.replace(ch, "")
    return text.replace("\u00a0", " ").replace("\u2010", "-").replace("\u2011", "-")


@dataclass
class Segment:
    """A run of characters on one baseline, without a wide gap inside."""

    chars: list[str] = field(default_factory=list)
    x0: float = 1e9
    x1: float = -1e9
    bottom: float = 1e9
    top: float = -1e9
    sizes: Counter[float] = field(default_factory=Counter)
    bold_chars: int = 0
    letters: int = 0
    hyphen_end: bool = False  # PDFium says the last character is a line-end hyphen

    @property
    def text(self) -> str:
        """The segment's characters as text, trimmed."""
        return "".join(self.chars).strip()

    @property
    def size(self) -> float:
        """The segment's most common font size, in points (0 for no characters)."""
        return self.sizes.most_common(1)[0][0] if self.sizes else 0.0

    @property
    def bold(self) -> bool:
        """True when at least 80% of its letters are bold."""
        return self.letters > 0 and self.bold_chars >= 0.8 * self.letters

    def add(self, ch: str, box: tuple[float, float, float, float], size: float, weight: int) -> None:
        """Append a character with its box ``(left, right, bottom, top)``, font size and weight."""
        left, right, bottom, top = box
        self.chars.append(ch)
        if ch.strip():
            self.x0, self.x1 = min(self.x0, left), max(self.x1, right)
            self.bottom, self.top = min(self.bottom, bottom), max(self.top, top)
            self.sizes[round(size, 1)] += 1
            if ch.isalnum():
                self.letters += 1
                if weight >= 600:
                    self.bold_chars += 1


@dataclass
class Page:
    """One page's size in points and its text segments."""

    width: float
    height: float
    segments: list[Segment]


def read_pages(raw: bytes) -> tuple[list[Page], str]:
    """Every page's line segments (PDFium's character order) and the metadata title."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    document = pdfium.PdfDocument(raw)
    try:
        title = str(document.get_metadata_dict().get("Title", "") or "")
        pages: list[Page] = []
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        for index in range(len(document)):
            page = document[index]
            width, height = page.get_size()
            textpage = page.get_textpage()
            handle = textpage.raw
            segments: list[Segment] = []
            current = Segment()
            previous_right: float | None = None
            previous_baseline: float | None = None
            for i in range(textpage.count_chars()):
                code = pdfium_c.FPDFText_GetUnicode(handle, i)
                ch = chr(code) if 0 <= code < 0x110000 else ""
                generated = pdfium_c.FPDFText_IsGenerated(handle, i) == 1
                if ch in "\r\n" or (generated and ch == "\n"):
                    if current.chars:
                        segments.append(current)
                    current, previous_right, previous_baseline = Segment(), None, None
                    continue
                if generated:  # a space PDFium inferred from a gap
                    current.chars.append(" ")
                    continue
                pdfium_c.FPDFText_GetCharBox(handle, i, left, right, bottom, top)
                size = pdfium_c.FPDFText_GetFontSize(handle, i)
                box = (left.value, right.value, bottom.value, top.value)
                if ch.strip() and previous_right is not None and previous_baseline is not None:
                    gap = box[0] - previous_right
                    if gap > 2.5 * max(size, 1.0) or abs(box[2] - previous_baseline) > 0.6 * max(size, 1.0):
                        segments.append(current)
                        current = Segment()
                current.add(ch, box, size, pdfium_c.FPDFText_GetFontWeight(handle, i))
                if ch.strip():
                    previous_right, previous_baseline = box[1], box[2]
                    current.hyphen_end = pdfium_c.FPDFText_IsHyphen(handle, i) == 1
            if current.chars:
                segments.append(current)
            pages.append(Page(width, height, [s for s in segments if s.text]))
            textpage.close()
            page.close()
    finally:
        document.close()
    return pages, title


def _reading_order(page: Page) -> list[Segment]:
    """Two columns read left then right, band by band between full-width segments; else as drawn."""
    segments = page.segments
    if len(segments) < 8:
        return segments
    width = page.width
    total = sum(len(s.text) for s in segments)
    best_x, best_crossing = 0.0, float("inf")
    x = 0.3 * width
    while x <= 0.7 * width:
        crossing = sum(len(s.text) for s in segments if s.x0 < x < s.x1)
        if crossing < best_crossing:
            best_x, best_crossing = x, crossing
        x += 2.0
    left = sum(len(s.text) for s in segments if s.x1 <= best_x)
    right = sum(len(s.text) for s in segments if s.x0 >= best_x)
    if best_crossing > 0.15 * total or left < 0.2 * total or right < 0.2 * total:
        return segments
    ordered: list[Segment] = []
    band: list[Segment] = []

    def flush() -> None:
        ordered.extend(sorted((s for s in band if s.x1 <= best_x), key=lambda s: -s.top))
        ordered.extend(sorted((s for s in band if s.x1 > best_x), key=lambda s: -s.top))
        band.clear()

    for segment in sorted(segments, key=lambda s: (-s.top, s.x0)):
        if segment.x0 < best_x < segment.x1:
            flush()
            ordered.append(segment)
        else:
            band.append(segment)
    flush()
    return ordered


def _repeated_margins(pages: list[Page]) -> set[str]:
    """Texts (digits masked) of segments in the top or bottom margin on at least half of 3+ pages."""
    if len(pages) < 3:
        return set()
    seen: Counter[str] = Counter()
    for page in pages:
        keys = {
            re.sub(r"\d+", "#", s.text.lower())
            for s in page.segments
            if s.top > 0.92 * page.height or s.bottom < 0.08 * page.height
        }
        seen.update(keys)
    return {key for key, count in seen.items() if count >= max(2, len(pages) // 2)}


def _is_margin_noise(segment: Segment, page: Page, repeated: set[str]) -> bool:
    in_margin = segment.top > 0.92 * page.height or segment.bottom < 0.08 * page.height
    if not in_margin:
        return False
    return bool(_PAGE_NUMBER.match(segment.text)) or re.sub(r"\d+", "#", segment.text.lower()) in repeated


@dataclass
class Paragraph:
    """Consecutive lines of one page read as one paragraph."""

    lines: list[Segment]
    page: int

    @property
    def size(self) -> float:
        """The paragraph's most common font size, in points: how headings are told from body text."""
        sizes: Counter[float] = Counter()
        for line in self.lines:
            sizes.update(line.sizes)
        return sizes.most_common(1)[0][0] if sizes else 0.0


def _starts_item(text: str) -> bool:
    return text[:1] in BULLETS or bool(re.match(r"^(\d{1,3}|[a-z])[.)]\s", text))


def _join_lines(lines: list[str], hyphen_ends: list[bool], known_words: set[str]) -> str:
    out = ""
    for index, raw_line in enumerate(lines):
        line = raw_line.strip()
        if not out:
            out = line
            continue
        previous_hyphen = hyphen_ends[index - 1]
        last = out[-1:]
        if last in LINE_END_HYPHENS and line[:1].isalpha():
            head = re.search(r"(\w+)[" + re.escape(LINE_END_HYPHENS) + r"]$", out)
            tail = re.match(r"\w+", line)
            joined = (head.group(1) if head else "") + (tail.group(0) if tail else "")
            soft = last in SOFT_HYPHENS or last == "\u2010" or previous_hyphen
            hyphenated = head is not None and f"{head.group(1)}-{tail.group(0) if tail else ''}".lower() in known_words
            if (soft or line[:1].islower() or joined.lower() in known_words) and not hyphenated:
                out = out[:-1] + line
            else:
                out = out[:-1] + "-" + line
        else:
            out = f"{out} {line}"
    return out


def _continues(previous: Paragraph, following: Paragraph) -> bool:
    """A paragraph cut by a page or column break: same size, no sentence end, next line not a new item."""
    last, first = previous.lines[-1].text, following.lines[0].text
    return (
        abs(previous.size - following.size) <= 0.1 * max(previous.size, 1.0)
        and not last.endswith(_TERMINAL)
        and not _starts_item(first)
        and (first[:1].islower() or last[-1:] in LINE_END_HYPHENS or last.endswith(","))
    )


def _paragraphs(pages: list[Page]) -> list[Paragraph]:
    repeated = _repeated_margins(pages)
    paragraphs: list[Paragraph] = []
    for number, page in enumerate(pages, start=1):
        lines = [s for s in _reading_order(page) if not _is_margin_noise(s, page, repeated)]
        pitches = [
            a.bottom - b.bottom
            for a, b in itertools.pairwise(lines)
            if 0 < a.bottom - b.bottom < 3 * max(a.size, 1.0) and abs(a.size - b.size) < 0.5
        ]
        pitch = statistics.median(pitches) if pitches else 0.0
        right_edge = max((s.x1 for s in lines), default=0.0)
        current: Paragraph | None = None
        first_on_page = True
        for line in lines:
            start_new = current is None
            if current is not None:
                prev = current.lines[-1]
                drop = prev.bottom - line.bottom
                size_change = abs(prev.size - line.size) > 0.15 * max(prev.size, 1.0)
                gap = pitch > 0 and (drop > 1.35 * pitch or drop < -0.5 * pitch)
                column_jump = drop < -0.5 * pitch  # back up the page: the next column
                short_end = prev.text.endswith(_TERMINAL) and prev.x1 < right_edge - 0.25 * (right_edge - prev.x0)
                heading_like = prev.bold != line.bold and (prev.bold or line.bold)
                start_new = size_change or (gap and not column_jump) or short_end or heading_like
                start_new = start_new or _starts_item(line.text)
                if column_jump and not start_new:
                    start_new = not _continues(current, Paragraph([line], number))
            if start_new:
                if (
                    first_on_page
                    and current is None
                    and paragraphs
                    and _continues(paragraphs[-1], Paragraph([line], number))
                ):
                    current = paragraphs[-1]
                else:
                    current = Paragraph([], number)
                    paragraphs.append(current)
            assert current is not None
            current.lines.append(line)
            first_on_page = False
    return paragraphs


@dataclass
class PdfText:
    """A PDF's text as Markdown, its title, where each page starts and how many pages it has."""

    text: str  # Markdown
    title: str
    page_starts: list[int]
    pages: int


def _heading_levels(paragraphs: list[Paragraph], body: float) -> dict[float, int]:
    sizes = sorted(
        {p.size for p in paragraphs if p.size >= 1.15 * body and len(p.lines) <= 3},
        reverse=True,
    )
    return {size: min(index + 1, 5) for index, size in enumerate(sizes[:5])}


def extract_pdf_text(raw: bytes) -> PdfText:
    """A PDF's text as Markdown: paragraphs joined across lines, headings found by font size."""
    pages, metadata_title = read_pages(raw)
    paragraphs = _paragraphs(pages)
    weights: Counter[float] = Counter()
    for paragraph in paragraphs:
        for line in paragraph.lines:
            weights.update(line.sizes)
    body = weights.most_common(1)[0][0] if weights else 0.0
    levels = _heading_levels(paragraphs, body)
    words = {
        w.lower() for p in paragraphs for line in p.lines for w in re.findall(r"\w+(?:-\w+)*", clean_text(line.text))
    }
    blocks: list[tuple[str, int]] = []
    first_heading = ""
    for paragraph in paragraphs:
        text = clean_text(
            _join_lines([line.text for line in paragraph.lines], [line.hyphen_end for line in paragraph.lines], words)
        )
        text = " ".join(text.split())
        if not text:
            continue
        level = levels.get(paragraph.size)
        bold_heading = (
            level is None
            and all(line.bold for line in paragraph.lines)
            and len(text) <= 100
            and not text.endswith(_TERMINAL[:1])
            and len(paragraph.lines) <= 2
        )
        if level is not None or bold_heading:
            depth = level if level is not None else len(levels) + 1
            first_heading = first_heading or text
            text = f"{'#' * min(depth, 6)} {text}"
        elif text[:1] in BULLETS:
            text = "- " + text[1:].lstrip()
        blocks.append((text, paragraph.page))
    out: list[str] = []
    page_starts: list[int] = []
    offset = 0
    for text, page in blocks:
        while len(page_starts) < page:
            page_starts.append(offset)
        out.append(text)
        offset += len(text) + 2
    while len(page_starts) < len(pages):
        page_starts.append(max(offset - 2, 0))
    title = " ".join(clean_text(metadata_title).split())
    if not title or _JUNK_TITLE.match(title):
        title = first_heading or (blocks[0][0][:120] if blocks else "")
    return PdfText("\n\n".join(out), title, page_starts, len(pages))
