"""Documents made here by the tools people use, extracted and searched as a user would.

Chromium's print-to-PDF (one and two columns), LibreOffice (PDF from DOCX, and from an ODT it saved), and
Word and PowerPoint files written by python-docx / python-pptx. Each must read back as its source text
(character F1 ≥ 0.98, in order), with its title, its type and its pages; a word printed with a ligature
must be found by keyword search; a sentence broken across lines must come back whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.ingest.extract import extract
from tests.support import producers
from tests.support.documents import DRINKS
from tests.support.producers import ProducerMissing, char_f1, source_text

F1_FLOOR = 0.98
PRODUCERS = {
    "chromium": lambda d: producers.chromium_pdf(d),
    "chromium-two-columns": lambda d: producers.chromium_pdf(d, columns=2, name="two-column"),
    "libreoffice-docx": producers.libreoffice_pdf_from_docx,
    "libreoffice-odt": producers.libreoffice_pdf_from_odt,
    "docx": producers.docx_file,
    "pptx": producers.pptx_file,
}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Each producer's file, made once; a producer that is not installed is reported by its test."""
    directory = tmp_path_factory.mktemp("producers")
    files: dict[str, Path | str] = {}
    for name, make in PRODUCERS.items():
        sub = directory / name
        sub.mkdir()
        try:
            files[name] = make(sub)
        except ProducerMissing as exc:
            files[name] = str(exc)
    return files


def _file(made, name: str) -> Path:
    value = made[name]
    if isinstance(value, str):
        pytest.skip(value)
    return value


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_extracted_text_matches_the_source(made, producer):
    path = _file(made, producer)
    extracted = extract(path.name, path.read_bytes())
    assert char_f1(extracted.text, source_text()) >= F1_FLOOR, extracted.text
    assert extracted.title == "The Northfield rover"  # never Chromium's "report.html" nor an empty title
    assert extracted.file_type == path.suffix.lstrip(".")
    text = " ".join(extracted.text.split())
    # Ligatures are letters again; the hyphenated and wrapped words are whole, so are the sentences.
    assert "\ufb01" not in text
    assert "\ufb02" not in text
    for phrase in ("Northfield field office", "flat farmland", "efficient electric vehicle", "affordable"):
        assert phrase in text
    assert "The electromagnetic brakes recover energy" in text
    assert "A fully charged battery gives it a range of 65 kilometres on flat ground" in text
    assert "battery management system" in text
    assert "## Batteries and charging" in extracted.text or "# Batteries and charging" in extracted.text


@pytest.mark.parametrize("producer", ["chromium", "libreoffice-docx", "pptx"])
def test_pages_are_counted(made, producer):
    path = _file(made, producer)
    extracted = extract(path.name, path.read_bytes())
    assert len(extracted.page_starts) >= 2
    assert extracted.page_of(0) == 1
    last = extracted.text.index("The first field trials")
    assert extracted.page_of(last) == len(extracted.page_starts)


def test_docx_keeps_lists_and_tables(made):
    path = _file(made, "docx")
    text = extract(path.name, path.read_bytes()).text
    assert "- Drive no faster than 12 kilometres per hour on public tracks." in text
    assert "| Tyres | every 500 kilometres | operator |" in text


def test_a_chromium_pdf_is_searchable_by_the_words_it_printed_with_ligatures(made, ragline):
    path = _file(made, "chromium")
    kb = ragline.create_kb("rover", DRINKS)  # other documents, so that the rover's words are rare ones
    with path.open("rb") as handle:
        reply = ragline.client.post(
            f"/api/v1/knowledge-bases/{kb}/documents?wait=true",
            files={"file": ("rover.pdf", handle, "application/pdf")},
        )
    assert reply.status_code == 201, reply.text
    document = reply.json()["data"]
    assert (document["title"], document["file_type"]) == ("The Northfield rover", "pdf")
    assert document["chunk_count"] >= 3  # sections, not one chunk
    # "affordable" and "fleet" were printed with the ff and fl ligatures; keyword search alone finds them.
    for word in ("affordable", "fleet"):
        found = ragline.client.post(
            "/api/v1/knowledge-search", json={"query": word, "knowledge_base_ids": [kb], "retrievers": "keyword"}
        )
        assert found.status_code == 200, found.text
        items = found.json()["data"]
        assert items, word
        assert items[0]["knowledge_id"] == document["id"], (word, items)
        assert word in items[0]["content"]
    found = ragline.client.post("/api/v1/knowledge-search", json={"query": "Northfield", "knowledge_base_ids": [kb]})
    assert "Northfield" in found.json()["data"][0]["content"]
    chunks = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{document['id']}/chunks").json()["data"]
    pages = {c["metadata"].get("page") for c in chunks if c.get("searchable", True)}
    assert pages == {1, 2}
