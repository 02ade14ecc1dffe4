import pytest

from ragline.files.reading import UnsupportedFile, UnsupportedFileType
from ragline.ingest.extract import extract, file_type_for
from tests.support.documents import HTML, make_pdf


def test_pdf_text_pages_and_title():
    extracted = extract(
        "report.pdf", make_pdf(["Reactor cooling uses heavy water", "Page two mentions turbines"], "Plant report")
    )
    assert "Reactor cooling uses heavy water" in extracted.text
    assert "turbines" in extracted.text
    assert extracted.title == "Plant report"
    assert extracted.page_of(0) == 1
    assert extracted.page_of(extracted.text.index("Page two")) == 2


def test_pdf_without_text_is_reported_not_ingested_empty():
    with pytest.raises(UnsupportedFile, match="no text layer"):
        extract("scan.pdf", make_pdf([""]))


def test_broken_pdf_is_a_clear_error():
    with pytest.raises(UnsupportedFile):
        extract("broken.pdf", b"%PDF-1.4\nthis is not a pdf")


def test_html_main_content_as_markdown_with_headings():
    extracted = extract("guide.html", HTML.encode())
    assert extracted.file_type == "html"
    assert extracted.title == "Brewing guide"
    assert "90 and 96 degrees" in extracted.text
    assert "## Water" in extracted.text or "# Water" in extracted.text
    assert "All rights reserved" not in extracted.text  # boilerplate dropped


def test_unknown_types_and_non_text():
    with pytest.raises(UnsupportedFileType):
        file_type_for("program.exe")
    with pytest.raises(UnsupportedFile):
        extract("notes.txt", b"\xff\xfe\x00\xd8\x00")
    assert extract("notes.md", b"# Hi\n\nthere").file_type == "markdown"
