"""The OCR port: text read from an image, line by line, in reading order.

An engine answers :meth:`OcrEngine.ocr` with every line it found (text, box, confidence); :func:`reading_order`
turns the lines into the text a person reads: rows top to bottom, each row left to right, Latin fragments
joined by a space and Chinese ones without. A captioner (a vision model describing the picture) is a separate
port, :class:`ImageCaptioner`: ingestion asks for a caption only where one is configured.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Point = tuple[float, float]

# Two fragments are on one row when their vertical centres are closer than this share of the smaller height.
_SAME_ROW = 0.5


@dataclass(frozen=True)
class OcrLine:
    """One detected text line: its text, its box and the recogniser's confidence (0 to 1).

    The box is four corners, clockwise from the top left, in pixels.
    """

    text: str
    box: tuple[Point, Point, Point, Point]
    confidence: float

    @property
    def top(self) -> float:
        """The box's highest y (pixels from the top)."""
        return min(p[1] for p in self.box)

    @property
    def bottom(self) -> float:
        """The box's lowest y."""
        return max(p[1] for p in self.box)

    @property
    def left(self) -> float:
        """The box's leftmost x."""
        return min(p[0] for p in self.box)


@dataclass(frozen=True)
class OcrResult:
    """The text of an image (:func:`reading_order` of its lines) and the lines themselves."""

    text: str
    lines: tuple[OcrLine, ...] = ()

    @classmethod
    def of(cls, lines: Sequence[OcrLine]) -> OcrResult:
        """The result of ``lines``, its text in reading order."""
        return cls(reading_order(lines), tuple(lines))

    @property
    def confidence(self) -> float:
        """The mean line confidence weighted by text length; 0 without text."""
        total = sum(len(line.text.strip()) for line in self.lines)
        if not total:
            return 0.0
        return sum(line.confidence * len(line.text.strip()) for line in self.lines) / total


class OcrEngine(Protocol):
    """Reads the text of an image (PNG, JPEG, WebP or GIF bytes). Safe to call from several threads."""

    name: str

    def ocr(self, image: bytes) -> OcrResult:
        """The text lines found in ``image`` (no line: an image without text)."""
        ...


class ImageCaptioner(Protocol):
    """Describes an image in a sentence or two (a vision model); ingestion adds the caption to the image's chunk.

    Only the port lives here: the vision model behind it is configured with the chat models.
    """

    def caption(self, image: bytes, *, media_type: str) -> str:
        """A short description of ``image`` (PNG, JPEG, WebP or GIF bytes of ``media_type``)."""
        ...


def _is_han(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def _join(left: str, right: str) -> str:
    """Two fragments of one row: no space between wide (CJK) characters, one elsewhere."""
    if not left:
        return right
    if not right:
        return left
    if _is_han(left[-1]) or _is_han(right[0]):
        return left + right
    return f"{left} {right}"


def reading_order(lines: Sequence[OcrLine]) -> str:
    """The text of ``lines`` as a person reads it: rows top to bottom, each row left to right.

    Lines whose vertical centres are within half the smaller height form a row; rows are joined by line breaks.
    """
    fragments = sorted((line for line in lines if line.text.strip()), key=lambda line: (line.top, line.left))
    rows: list[list[OcrLine]] = []
    for line in fragments:
        centre = (line.top + line.bottom) / 2
        height = max(1.0, line.bottom - line.top)
        for row in rows:
            anchor = row[0]
            anchor_height = max(1.0, anchor.bottom - anchor.top)
            if abs(centre - (anchor.top + anchor.bottom) / 2) < _SAME_ROW * min(height, anchor_height):
                row.append(line)
                break
        else:
            rows.append([line])
    texts = []
    for row in rows:
        text = ""
        for line in sorted(row, key=lambda line: line.left):
            text = _join(text, line.text.strip())
        texts.append(text)
    return "\n".join(texts)
