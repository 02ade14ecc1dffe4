"""Document extraction: character F1 against the source text and time per page, per producer and extractor.

The documents are made here (tests/support/producers.py: Chromium print-to-PDF in one and two columns,
LibreOffice from DOCX and from ODT, python-docx, python-pptx). Extractors compared on the PDFs: ragline's
(PDFium characters + layout, :mod:`ragline.ingest.pdf`), PDFium's plain text, and, when installed, pypdf and
pdfminer.six (``pip install pypdf pdfminer.six`` to include them), each with the same ligature
normalisation so that only order, line joining and hyphenation differ.

    .venv/bin/python bench/extraction.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support import producers  # noqa: E402

PDF_PRODUCERS: dict[str, Callable[[Path], Path]] = {
    "Chromium print-to-PDF": lambda d: producers.chromium_pdf(d),
    "Chromium, two columns": lambda d: producers.chromium_pdf(d, columns=2, name="two-column"),
    "LibreOffice from DOCX": producers.libreoffice_pdf_from_docx,
    "LibreOffice from ODT": producers.libreoffice_pdf_from_odt,
}
OTHER_PRODUCERS: dict[str, Callable[[Path], Path]] = {
    "python-docx (.docx)": producers.docx_file,
    "python-pptx (.pptx)": producers.pptx_file,
}


def ragline_extract(path: Path) -> tuple[str, int]:
    from ragline.ingest.extract import extract

    extracted = extract(path.name, path.read_bytes())
    return extracted.text, max(1, len(extracted.page_starts))


def pdfium_plain(path: Path) -> tuple[str, int]:
    import pypdfium2 as pdfium

    from ragline.ingest.pdf import clean_text

    document = pdfium.PdfDocument(path.read_bytes())
    pages = [clean_text(document[i].get_textpage().get_text_range()) for i in range(len(document))]
    return "\n\n".join(pages), len(pages)


def pypdf_plain(path: Path) -> tuple[str, int]:
    from pypdf import PdfReader

    from ragline.ingest.pdf import clean_text

    pages = [clean_text(page.extract_text() or "") for page in PdfReader(str(path)).pages]
    return "\n\n".join(pages), len(pages)


def pdfminer_plain(path: Path) -> tuple[str, int]:
    from pdfminer.high_level import extract_text

    from ragline.ingest.pdf import clean_text

    text = extract_text(str(path))
    return clean_text(text), max(1, text.count("\f"))


def extractors() -> dict[str, Callable[[Path], tuple[str, int]]]:
    found: dict[str, Callable[[Path], tuple[str, int]]] = {
        "ragline (PDFium + layout)": ragline_extract,
        "PDFium plain text": pdfium_plain,
    }
    if importlib.util.find_spec("pypdf"):
        found["pypdf 'plain'"] = pypdf_plain
    if importlib.util.find_spec("pdfminer"):
        found["pdfminer.six"] = pdfminer_plain
    return found


def sentences_whole(text: str) -> float:
    """Share of the source's sentences found inside one line of the extracted text (not cut by a line
    break, a hyphen or a column), as a sentence splitter downstream needs them."""
    import re

    lines = [" ".join(line.split()) for line in text.splitlines()]
    sentences = [s for b in producers.REPORT for s in re.split(r"(?<=[.!?])\s+", b.plain) if len(s) > 20]
    return sum(1 for s in sentences if any(s in line for line in lines)) / len(sentences)


def measure(extract: Callable[[Path], tuple[str, int]], path: Path, repeat: int) -> tuple[float, float, float]:
    text, pages = extract(path)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        extract(path)
        times.append(time.perf_counter() - started)
    f1 = producers.char_f1(text, producers.source_text())
    return f1, sentences_whole(text), statistics.median(times) * 1000 / pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragline-extraction-") as tmp:
        files: dict[str, Path] = {}
        for name, make in {**PDF_PRODUCERS, **OTHER_PRODUCERS}.items():
            sub = Path(tmp) / str(len(files))
            sub.mkdir()
            try:
                files[name] = make(sub)
            except producers.ProducerMissing as exc:
                print(f"skipped {name}: {exc}")
        for name, path in files.items():
            chosen = extractors() if path.suffix == ".pdf" else {"ragline": ragline_extract}
            for extractor, extract in chosen.items():
                f1, whole, ms = measure(extract, path, args.repeat)
                rows.append((name, extractor, f1, whole, ms))
    print("| document (producer) | extractor | char F1 | sentences whole | ms/page |")
    print("|---|---|---:|---:|---:|")
    for name, extractor, f1, whole, ms in rows:
        print(f"| {name} | {extractor} | {f1:.4f} | {whole:.2f} | {ms:.1f} |")
    print(
        f"\nload average (1 min): {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; {os.cpu_count()} CPUs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
