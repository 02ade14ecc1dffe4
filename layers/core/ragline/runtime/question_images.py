"""The images of a question: checked before anything is stored, kept beside the documents' originals.

A question carries at most :data:`MAX_QUESTION_IMAGES` images in WeKnora's shape (``data``: a ``data:`` URI or
bare base64; or ``url``: a ``resource://images/…`` handle of an image this tenant already stored), each a PNG,
JPEG, WebP or GIF of at most 5 MB by its bytes, never its name. Anything else is a :class:`BadQuestionImage`
naming the field (``images[1].data``), and nothing of the turn is stored. Accepted images are kept under a
handle of their own (:func:`ragline.ingest.images.save_image`); the user message records the handles and the
pipeline request carries them (never the bytes: a Step Functions payload holds 256 KB).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragline.ingest.images import MAX_IMAGE_BYTES, BadImage, inspect, load_image, save_image, sniff
from ragline.models.base import data_url_bytes
from ragline.store.ids import new_id
from ragline.store.originals import OriginalStore

MAX_QUESTION_IMAGES = 4


class BadQuestionImage(ValueError):
    """An image a question cannot carry: ``field`` names it (``images[0].data``), the message says why."""

    def __init__(self, field: str, message: str) -> None:
        """A refusal of ``field`` because of ``message``."""
        super().__init__(message)
        self.field = field


class Attachment(Protocol):
    """WeKnora's image attachment: data or a stored image's url, and a caption."""

    data: str
    url: str
    caption: str


@dataclass(frozen=True)
class QuestionImage:
    """A checked image: new bytes to keep (``data``), or an image already kept (``url``)."""

    data: bytes | None
    url: str
    caption: str


def _decoded(data: str) -> bytes | None:
    if data.startswith("data:"):
        decoded = data_url_bytes(data)
        return decoded[0] if decoded is not None else None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _check(raw: bytes, field: str) -> None:
    """The size, the format by its bytes and, where Pillow is installed (not in the Lambda layer), the pixels."""
    if len(raw) > MAX_IMAGE_BYTES:
        raise BadQuestionImage(field, f"the image is {len(raw)} bytes; the limit is {MAX_IMAGE_BYTES} (5 MB)")
    if sniff(raw) is None:
        raise BadQuestionImage(field, "not a PNG, JPEG, WebP or GIF image (by its content)")
    try:
        inspect(raw, field)
    except ImportError:
        return
    except BadImage as bad:
        raise BadQuestionImage(field, str(bad).removeprefix(f"{field}: ")) from None


def read_question_images(
    attachments: Sequence[Attachment], tenant_id: str, originals: OriginalStore | None
) -> list[QuestionImage]:
    """The question's images checked, in order; :class:`BadQuestionImage` at the first that fails."""
    if len(attachments) > MAX_QUESTION_IMAGES:
        raise BadQuestionImage("images", f"{len(attachments)} images; a question carries at most {MAX_QUESTION_IMAGES}")
    images: list[QuestionImage] = []
    for index, attachment in enumerate(attachments):
        field = f"images[{index}]"
        if attachment.data:
            raw = _decoded(attachment.data.strip())
            if raw is None:
                raise BadQuestionImage(f"{field}.data", "not base64 image data (a data: URI or base64)")
            _check(raw, f"{field}.data")
            images.append(QuestionImage(raw, "", attachment.caption))
        elif attachment.url:
            if originals is None or load_image(originals, tenant_id, attachment.url) is None:
                raise BadQuestionImage(
                    f"{field}.url", "names no image stored by this tenant (send the image itself as data)"
                )
            images.append(QuestionImage(None, attachment.url, attachment.caption))
        else:
            raise BadQuestionImage(field, "an image needs data (base64) or the url of a stored image")
    if images and originals is None:
        raise BadQuestionImage("images", "this deployment keeps no images")
    return images


def keep_question_images(
    images: Sequence[QuestionImage], tenant_id: str, originals: OriginalStore | None
) -> list[dict[str, str]]:
    """The new images kept under one handle prefix of their own; ``{"url", "caption"}`` per image, in order."""
    if not images or originals is None:
        return []
    owner = "q" + new_id().replace("-", "")
    kept = []
    for number, image in enumerate(images, start=1):
        url = save_image(originals, tenant_id, owner, number, image.data) if image.data is not None else image.url
        kept.append({"url": url, "caption": image.caption})
    return kept
