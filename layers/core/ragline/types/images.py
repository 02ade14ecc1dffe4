"""How a question's images travel inside the text the answering model reads.

Without a model that can see them, query understanding reads the images' text by OCR; the text follows the
question under :data:`IMAGE_TEXT_NOTE`, which tells a generative model to say so. The extractive answerer
reads the same note with :func:`split_image_text`: it searches the question with the text and says it read
the image's text, not the image.
"""

from __future__ import annotations

from collections.abc import Callable

# The bytes behind a kept image's handle (``resource://images/…``) for a tenant; None when it is not kept.
ImageLoader = Callable[[str, str], bytes | None]

IMAGE_TEXT_HEADER = "[The user attached images that no model here can see."
IMAGE_TEXT_NOTE = (
    IMAGE_TEXT_HEADER + " Their text, read by OCR, follows; say in your answer that you read the images' text, not"
    " the images themselves:]\n{text}"
)
IMAGE_DESCRIPTION_NOTE = "[The user attached images. What they show:]\n{text}"


def split_image_text(question: str) -> tuple[str, str]:
    """The question without the image-text note, and the OCR text the note carried ("" without one)."""
    start = question.find(IMAGE_TEXT_HEADER)
    if start < 0:
        return question, ""
    end = question.find("]\n", start)
    text = question[end + 2 :] if end >= 0 else ""
    return question[:start].strip(), text.strip()
