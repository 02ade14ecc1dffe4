"""Images with known text, and documents that embed them, built in code (no binary fixtures in git).

Pillow renders the text with the machine's fonts: DejaVu Sans for English, a CJK font for Chinese
(`make test` installs Debian's fonts-wqy-microhei; :func:`cjk_font` is None without one and the Chinese
cases skip, saying so).
"""

from __future__ import annotations

import io
import subprocess
from functools import cache
from pathlib import Path

LATIN_FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
)
CJK_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
)


def _first_existing(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if Path(p).exists()), None)


@cache
def latin_font() -> str | None:
    return _first_existing(LATIN_FONTS) or _fc_match(":lang=en")


@cache
def cjk_font() -> str | None:
    return _first_existing(CJK_FONTS) or _fc_match(":lang=zh")


def _fc_match(pattern: str) -> str | None:
    try:
        out = subprocess.run(["fc-list", pattern, "file"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    files = sorted(line.split(":")[0].strip() for line in out.splitlines() if line.strip())
    return files[0] if files else None


def render_text(lines: list[str], *, font: str, size: int = 32, image_format: str = "PNG") -> bytes:
    """Black text on white, one row per line, with a margin (the detector needs some white around text)."""
    from PIL import Image, ImageDraw, ImageFont

    face = ImageFont.truetype(font, size)
    width = max(int(face.getlength(line)) for line in lines) + 2 * size
    height = len(lines) * size * 2 + size
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((size, size // 2 + i * size * 2), line, font=face, fill="black")
    out = io.BytesIO()
    image.save(out, image_format, **({"quality": 92} if image_format == "JPEG" else {}))
    return out.getvalue()


def blank_image(width: int, height: int, image_format: str = "PNG") -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, image_format)
    return out.getvalue()


def docx_with_picture(paragraph: str, picture: bytes) -> bytes:
    """A Word document: a paragraph, then the picture (word/media/imageN.png)."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.add_paragraph(paragraph)
    document.add_picture(io.BytesIO(picture), width=Inches(4))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_with_picture(titles: list[str], picture: bytes, on_slide: int) -> bytes:
    """A deck of title slides; the picture on slide ``on_slide`` (1-based)."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for number, title in enumerate(titles, start=1):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = title
        if number == on_slide:
            slide.shapes.add_picture(io.BytesIO(picture), Inches(1), Inches(2), width=Inches(6))
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def scanned_pdf(pictures: list[bytes]) -> bytes:
    """A PDF whose pages are pictures only, as a scanner makes them (no text layer)."""
    from PIL import Image

    pages = [Image.open(io.BytesIO(p)).convert("RGB") for p in pictures]
    out = io.BytesIO()
    pages[0].save(out, "PDF", save_all=True, append_images=pages[1:], resolution=96)
    return out.getvalue()


def pdf_with_picture(text_pdf: bytes, picture_jpeg: bytes, on_page: int) -> bytes:
    """``text_pdf`` with a JPEG picture placed on page ``on_page`` (1-based), written by PDFium."""
    import pypdfium2 as pdfium
    from PIL import Image

    width, height = Image.open(io.BytesIO(picture_jpeg)).size
    pdf = pdfium.PdfDocument(text_pdf)
    page = pdf[on_page - 1]
    picture = pdfium.PdfImage.new(pdf)
    picture.load_jpeg(io.BytesIO(picture_jpeg), inline=True)
    picture.set_matrix(pdfium.PdfMatrix().scale(width * 0.75, height * 0.75).translate(72, 300))
    page.insert_obj(picture)
    page.gen_content()
    out = io.BytesIO()
    pdf.save(out)
    return out.getvalue()
