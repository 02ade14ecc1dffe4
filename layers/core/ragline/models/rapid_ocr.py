"""OCR with RapidOCR (PP-OCRv4 detection and recognition for Chinese and English, run by onnxruntime).

``rapidocr-onnxruntime`` 1.4.4 ships its three ONNX models inside the wheel (16 MiB): nothing is downloaded
at run time (RapidOCR 3.x downloads its models on first use, so it is not used). It is installed with
``--no-deps`` beside pyproject's ``ocr`` extra, which brings OpenCV's headless build: the package asks for
the GUI build, which pip cannot replace by the headless one (see the Makefile).

The engine is loaded once per process, on first use; calls are serialised (one engine, whose sessions
already use every core).
"""

from __future__ import annotations

import importlib.util
import io
import threading
from typing import Any

from ragline.models.ocr import OcrLine, OcrResult

NAME = "rapidocr-onnxruntime"
# Lines the recogniser is less sure of are dropped (RapidOCR's own default).
MIN_CONFIDENCE = 0.5

_engine: Any = None
_load_lock = threading.Lock()
_run_lock = threading.Lock()


def available() -> bool:
    """Whether the OCR library and OpenCV are installed (they are left out of the AWS Lambda layer)."""
    return all(importlib.util.find_spec(module) is not None for module in ("rapidocr_onnxruntime", "cv2", "PIL"))


def _shared_engine() -> Any:
    global _engine
    if _engine is None:
        with _load_lock:
            if _engine is None:
                from rapidocr_onnxruntime import RapidOCR

                _engine = RapidOCR(text_score=MIN_CONFIDENCE)
    return _engine


def _bgr_pixels(image: bytes) -> Any:
    """The image as the BGR array OpenCV reads: the first frame of an animation, transparency on white."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(image)) as opened:
        opened.seek(0)
        frame = opened.convert("RGBA")
    canvas = Image.new("RGBA", frame.size, (255, 255, 255, 255))
    canvas.alpha_composite(frame)
    rgb = np.asarray(canvas.convert("RGB"))
    return np.ascontiguousarray(rgb[:, :, ::-1])


class RapidOcr:
    """:class:`ragline.models.ocr.OcrEngine` over RapidOCR, one engine per process."""

    name = NAME

    def load(self) -> None:
        """Loads the models now (otherwise on the first image)."""
        _shared_engine()

    def ocr(self, image: bytes) -> OcrResult:
        """The lines RapidOCR reads in ``image``, those under :data:`MIN_CONFIDENCE` left out."""
        pixels = _bgr_pixels(image)
        engine = _shared_engine()
        with _run_lock:
            found, _ = engine(pixels)
        lines = []
        for box, text, score in found or ():
            corners = tuple((float(x), float(y)) for x, y in box)
            if len(corners) == 4 and str(text).strip():
                lines.append(OcrLine(str(text), corners, float(score)))
        return OcrResult.of(lines)
