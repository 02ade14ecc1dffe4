"""Documents made at test time by the tools people make them with: Chromium's print-to-PDF, LibreOffice
(ODT and DOCX to PDF), python-docx and python-pptx. Nothing binary is committed: each producer writes into a
directory and returns the file; a missing tool raises :class:`ProducerMissing` with one clear line.

The source is one short report (two printed pages) whose words exercise extraction: ligatures (fi, fl, ff,
ffi), line-end hyphenation (soft hyphens in long words), headings, a list and a table.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--no-pdf-header-footer",
]
SOFT_HYPHEN = "\u00ad"


class ProducerMissing(RuntimeError):
    """The tool that makes this kind of document is not installed here."""


@dataclass(frozen=True)
class Block:
    kind: str  # "h1", "h2", "p", "li", "row" (table row: cells separated by " | ")
    text: str  # may hold soft hyphens where a long word may break

    @property
    def plain(self) -> str:
        return self.text.replace(SOFT_HYPHEN, "")


def _p(text: str) -> Block:
    return Block("p", text)


S = SOFT_HYPHEN
REPORT = [
    Block("h1", "The Northfield rover"),
    _p(
        "The Northfield rover is a small, efficient electric vehicle built by the Northfield field office for "
        "surveys of flat farmland and gentle hills. Its first version was designed in the office's workshop, "
        "and the team kept the design affordable so that every regional office could run one. The rover "
        "weighs 180 kilograms and carries two cameras, a soil probe and a weather station. A fully charged "
        f"battery gives it a range of 65 kilometres on flat ground, or about 40 kilometres on rough tracks. "
        f"The electro{S}magnetic brakes recover energy on every descent, which adds a few kilometres to a "
        "typical day in the field."
    ),
    Block("h2", "Batteries and charging"),
    _p(
        "The rover uses a lithium iron phosphate battery of 12 kilowatt hours. Charging from a standard "
        "outlet takes nine hours; the fast charger at the field office fills the battery in two hours. "
        f"Charging is not allowed below zero degrees Celsius, because the cells would be damaged. The "
        f"battery manage{S}ment system records every charge, so the office can see how the cells age over "
        "the years and replace a module before it fails. Spare modules are kept in the office's store room."
    ),
    _p(
        "In winter the rover keeps its battery warm with a small heater that draws power from the battery "
        f"itself. On a cold morning the heater runs for twenty minutes before the first drive, and the "
        f"effective range drops by about a fifth. Operators are asked to plan shorter routes from December "
        f"to February and to leave the rover plugged in overnight whenever a charging point is avail{S}able."
    ),
    Block("h2", "Operating rules"),
    Block("li", "Drive no faster than 12 kilometres per hour on public tracks."),
    Block("li", "Stop the survey when the wind is stronger than 60 kilometres per hour."),
    Block("li", "Report any fault to the field office within one working day."),
    Block("h2", "Maintenance schedule"),
    Block("row", "Part | Interval | Done by"),
    Block("row", "Tyres | every 500 kilometres | operator"),
    Block("row", "Brakes | every six months | workshop"),
    Block("row", "Battery check | every year | workshop"),
    Block("h2", "History of the project"),
    _p(
        "The project began in 2019, when the Northfield office needed a cheaper way to survey fields after "
        "floods. Hiring a helicopter for a single flight cost more than the office spent on fuel in a "
        "whole year. A group of four engineers built the first prototype in six months from off-the-shelf "
        "parts. It was fragile and slow, but it proved that a small rover could do most of the work of a "
        "survey team on foot. The second version, finished in 2021, added the weather station and a "
        "stronger chassis, and it has since driven more than 20,000 kilometres without a serious fault."
    ),
    _p(
        "Other offices have asked for the design, and the team now publishes its drawings and its software "
        "under an open licence. Three universities use the rover for teaching, and a farming cooperative "
        "in the south runs a fleet of five. The team's next goal is a rover that can follow a tractor and "
        "measure the soil behind it, so that a farmer knows which parts of a field need fertiliser and "
        "which do not. The first field trials of that version are planned for next spring, on the "
        "cooperative's land, with help from the agricultural college."
    ),
]


def source_text(blocks: list[Block] = REPORT) -> str:
    """What a faithful extraction reads: every block's text, one paragraph each, no soft hyphens."""
    return "\n\n".join(b.plain for b in blocks)


def report_html(blocks: list[Block] = REPORT, *, columns: int = 1, title: str | None = None) -> str:
    parts: list[str] = []
    items: list[str] = []
    rows: list[str] = []

    def flush() -> None:
        if items:
            parts.append("<ul>" + "".join(items) + "</ul>")
            items.clear()
        if rows:
            parts.append("<table>" + "".join(rows) + "</table>")
            rows.clear()

    for block in blocks:
        text = html.escape(block.text).replace(SOFT_HYPHEN, "&shy;")
        if block.kind == "li":
            items.append(f"<li>{text}</li>")
            continue
        if block.kind == "row":
            cells = "".join(f"<td>{c.strip()}</td>" for c in text.split("|"))
            rows.append(f"<tr>{cells}</tr>")
            continue
        flush()
        parts.append(f"<{block.kind}>{text}</{block.kind}>")
    flush()
    style = (
        "body { font-family: 'DejaVu Serif', 'Liberation Serif', serif; font-size: 12.5pt; line-height: 1.45;"
        " margin: 0; }"
        " p { text-align: justify; }"
        " h1 { font-size: 22pt; } h2 { font-size: 16pt; }"
        " td { padding: 2px 12px; border: 1px solid #888; }"
        " @page { size: A4; margin: 22mm; }"
    )
    if columns > 1:
        style += f" main {{ column-count: {columns}; column-gap: 12mm; }} h1 {{ column-span: all; }}"
    head = f"<title>{html.escape(title)}</title>" if title is not None else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{head}<style>{style}</style></head>'
        f"<body><main>{''.join(parts)}</main></body></html>"
    )


def chromium_pdf(directory: Path, *, columns: int = 1, name: str = "report") -> Path:
    """Chromium's print-to-PDF of the report (no <title>: Chromium then writes its own metadata title)."""
    if not Path(CHROMIUM).exists():
        raise ProducerMissing(f"Chromium is not installed at {CHROMIUM} (make test installs Debian's chromium)")
    source = directory / f"{name}.html"
    source.write_text(report_html(columns=columns), encoding="utf-8")
    out = directory / f"{name}.pdf"
    subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--print-to-pdf={out}", source.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def docx_file(directory: Path, name: str = "report") -> Path:
    """The report as a Word document written with python-docx: real heading styles, a bulleted list, a table."""
    import docx

    document = docx.Document()
    rows = [b for b in REPORT if b.kind == "row"]
    table_written = False
    for block in REPORT:
        if block.kind == "h1":
            document.add_heading(block.plain, level=1)
        elif block.kind == "h2":
            document.add_heading(block.plain, level=2)
        elif block.kind == "li":
            document.add_paragraph(block.plain, style="List Bullet")
        elif block.kind == "row":
            if not table_written:
                cells = [r.plain.split(" | ") for r in rows]
                table = document.add_table(rows=len(cells), cols=len(cells[0]))
                for i, row in enumerate(cells):
                    for j, cell in enumerate(row):
                        table.cell(i, j).text = cell
                table_written = True
        else:
            document.add_paragraph(block.text)  # soft hyphens kept: Word hyphenates there
    out = directory / f"{name}.docx"
    document.save(str(out))
    return out


def pptx_file(directory: Path, name: str = "slides") -> Path:
    """The report as slides (python-pptx): one slide per section, its heading as the slide title."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    sections: list[tuple[str, list[Block]]] = []
    for block in REPORT:
        if block.kind in ("h1", "h2"):
            sections.append((block.plain, []))
        else:
            sections[-1][1].append(block)
    for title, body in sections:
        slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
        slide.shapes.title.text = title
        rows = [b.plain.split(" | ") for b in body if b.kind == "row"]
        if rows:
            shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(0.5), Inches(1.8), Inches(9), Inches(3))
            for i, row in enumerate(rows):
                for j, cell in enumerate(row):
                    shape.table.cell(i, j).text = cell
        texts = [b for b in body if b.kind != "row"]
        if texts:
            box = slide.shapes.add_textbox(Inches(0.5), Inches(1.6), Inches(9), Inches(5)).text_frame
            box.word_wrap = True
            for index, block in enumerate(texts):
                paragraph = box.paragraphs[0] if index == 0 else box.add_paragraph()
                paragraph.text = block.plain
    out = directory / f"{name}.pptx"
    deck.save(str(out))
    return out


def libreoffice() -> str:
    binary = shutil.which("libreoffice") or shutil.which("soffice")
    if binary is None:
        raise ProducerMissing("LibreOffice is not installed (make test installs Debian's libreoffice-writer-nogui)")
    return binary


def libreoffice_convert(source: Path, to: str, directory: Path) -> Path:
    """``libreoffice --headless --convert-to <to>`` with a private profile (parallel runs do not collide)."""
    profile = directory / ".lo-profile"
    subprocess.run(
        [
            libreoffice(),
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            to,
            "--outdir",
            str(directory),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    out = directory / f"{source.stem}.{to.split(':')[0]}"
    if not out.exists():
        raise RuntimeError(f"LibreOffice wrote no {out.name}")
    return out


def libreoffice_pdf_from_docx(directory: Path) -> Path:
    sub = directory / "from-docx"
    sub.mkdir(exist_ok=True)
    return libreoffice_convert(docx_file(sub), "pdf", sub)


def libreoffice_pdf_from_odt(directory: Path) -> Path:
    """DOCX → ODT (saved by LibreOffice Writer) → PDF: the path of a document kept in LibreOffice's own format."""
    sub = directory / "from-odt"
    sub.mkdir(exist_ok=True)
    odt = libreoffice_convert(docx_file(sub), "odt", sub)
    odt.parent.joinpath("report.docx").unlink()
    return libreoffice_convert(odt, "pdf", sub)


_MARKUP = re.compile(r"^\s*(#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|\|?\s*-{3,}.*$)", re.MULTILINE)


def comparable(text: str) -> str:
    """Text with Markdown markers (headings, bullets, table rules and pipes) and layout whitespace removed."""
    text = _MARKUP.sub("", text)
    text = text.replace("|", " ")
    return " ".join(text.split())


def char_f1(extracted: str, source: str) -> float:
    """Character-level F1 of the extracted text against the source, in order: characters matched by the
    longest common blocks (difflib), over the lengths of each (whitespace collapsed, Markdown removed)."""
    import difflib

    a, b = comparable(extracted), comparable(source)
    if not a or not b:
        return 0.0
    matched = sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    precision, recall = matched / len(a), matched / len(b)
    return 0.0 if matched == 0 else 2 * precision * recall / (precision + recall)
