"""The OCR port's reading order, and RapidOCR reading text rendered here (English, and Chinese where a CJK
font is installed)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from ragline.models.ocr import OcrLine, OcrResult, reading_order
from tests.support.images import cjk_font, latin_font, render_text


def line(
    text: str, left: float, top: float, width: float = 100, height: float = 20, confidence: float = 0.9
) -> OcrLine:
    right, bottom = left + width, top + height
    return OcrLine(text, ((left, top), (right, top), (right, bottom), (left, bottom)), confidence)


def test_rows_are_read_top_to_bottom_and_each_row_left_to_right():
    lines = [
        line("second row", 10, 60),
        line("right half", 300, 12),  # a little lower than its row's left fragment: still the same row
        line("left half", 10, 10),
        line("third", 10, 110),
    ]
    assert reading_order(lines) == "left half right half\nsecond row\nthird"


def test_chinese_fragments_join_without_a_space_and_latin_ones_with_one():
    assert reading_order([line("七号码头", 10, 10), line("黄昏关闭", 200, 10)]) == "七号码头黄昏关闭"
    assert reading_order([line("Pier 7", 10, 10), line("closes", 200, 10)]) == "Pier 7 closes"
    assert reading_order([line("端口", 10, 10), line("API", 200, 10)]) == "端口API"


def test_blank_lines_are_left_out_and_confidence_is_weighted_by_length():
    result = OcrResult.of(
        [line("abcd", 10, 10, confidence=1.0), line("  ", 10, 40), line("xy", 10, 80, confidence=0.4)]
    )
    assert result.text == "abcd\nxy"
    assert result.confidence == pytest.approx((4 * 1.0 + 2 * 0.4) / 6)
    assert OcrResult.of([]).confidence == 0.0


def test_rapidocr_reads_english_text_in_png_and_jpeg(ocr_engine):
    font = latin_font()
    assert font is not None, "no Latin font on this machine (DejaVu Sans is expected)"
    for image_format in ("PNG", "JPEG"):
        result = ocr_engine.ocr(
            render_text(["Harbour tide table", "Lighthouse 48213"], font=font, image_format=image_format)
        )
        assert result.text.splitlines()[0].replace(" ", "") == "Harbourtidetable", result.text
        assert "48213" in result.text.splitlines()[1], result.text
        assert all(0.5 <= ocr_line.confidence <= 1.0 for ocr_line in result.lines)


def test_rapidocr_reads_chinese_text_without_spaces(ocr_engine):
    font = cjk_font()
    if font is None:
        pytest.skip("no CJK font on this machine (make test installs fonts-wqy-microhei)")
    result = ocr_engine.ocr(render_text(["港口潮汐表", "七号码头黄昏关闭"], font=font))
    assert result.text == "港口潮汐表\n七号码头黄昏关闭"


def test_one_engine_serves_several_threads_with_the_same_answers(ocr_engine):
    image = render_text(["Lighthouse 48213"], font=latin_font() or "")
    alone = ocr_engine.ocr(image).text
    with ThreadPoolExecutor(max_workers=3) as pool:
        together = list(pool.map(lambda _: ocr_engine.ocr(image).text, range(3)))
    assert together == [alone] * 3
    assert "48213" in alone
